"""Setting a machine up. The one cache every set-up step keeps its heavy things in, outside the checkout and keyed
by version below it, so a fresh clone on the same machine reuses them (scripts/env.sh exports the same path)."""

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("AGENSH_CACHE") or Path.home() / ".cache" / "agensh")
