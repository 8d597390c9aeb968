"""The demo's pre-built images, all offline: the stand-in service image (stacks/demo/standin), the three
third-party stand-ins the demo profile names instead of MySQL, Gitea and Mattermost, and the calculator task's
cleanroom image and test blobs. The stack pulls these by name (they are local), and `destroy` removes them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from components import contract
from scripts import calculator

ROOT = Path(__file__).resolve().parent.parent
STANDIN = f"{contract.PREFIX}-standin:demo"
THIRD_PARTY = {role: f"{contract.PREFIX}-standin-{role}:demo" for role in ("mysql", "gitea", "mattermost")}
BLOBS = Path(os.environ.get("AGENSH_CACHE", Path.home() / ".cache" / "agensh")) / "demo" / "blobs"
LEGACY_BUILDER = {"DOCKER_BUILDKIT": "0"}


def build(tag: str, context: Path | None = None, dockerfile: str | None = None, label: str = "") -> None:
    args = ["docker", "build", "-q", "-t", tag, "--label", f"agensh.standin={label or tag}"]
    env = {**os.environ, **LEGACY_BUILDER}
    if dockerfile is not None:
        subprocess.run([*args, "-"], input=dockerfile.encode(), env=env, check=True, capture_output=True)
    else:
        subprocess.run([*args, str(context)], env=env, check=True, capture_output=True)


def main() -> int:
    build(STANDIN, ROOT / "stacks" / "demo" / "standin", label="services")
    for role, tag in THIRD_PARTY.items():  # one image each, so destroy can remove each on its own
        build(tag, dockerfile=f"FROM {STANDIN}\nLABEL agensh.standin.role={role}\n", label=role)
    image = calculator.build_cleanroom("agensh-demo", {"agensh.standin": "cleanroom"})
    calculator.blob_dir(BLOBS)
    print(f"demo images: {STANDIN}, {', '.join(THIRD_PARTY.values())}, {image}; test blobs in {BLOBS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
