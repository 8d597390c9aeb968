"""Setting a machine up. The one cache every set-up step keeps its heavy things in, outside the checkout and keyed
by version below it, so a fresh clone on the same machine reuses them (scripts/env.sh exports the same path)."""

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("AGENSH_CACHE") or Path.home() / ".cache" / "agensh")


@contextmanager
def cache_lock(name: str) -> Iterator[None]:
    """The one holder, across processes, of what `name` makes in the cache or the engine (the suite's tests run side
    by side): who waited then finds it made instead of making it again beside another."""
    locks = cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{re.sub(r'[^A-Za-z0-9._-]', '_', name)}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
