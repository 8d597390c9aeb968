"""Programs built once from a Go module on this machine and cached by version outside the checkout.

A module whose go.mod has replace or exclude directives (Gitea's, Compose's) cannot be `go install`ed: it is built
inside a writable copy of the module instead, and the binary (with any folders it needs beside it) is kept in
`${AGENSH_CACHE:-~/.cache/agensh}/<name>/<version>/`, so a fresh clone reuses it. `BUILD.json` there records what
was built and marks the build complete.

    .venv/bin/python -m scripts.setup.go_build compose       # build Compose when missing, print its binary's path
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from scripts.setup import cache_root


@dataclass(frozen=True)
class GoBuild:
    name: str  # the cache folder's name
    module: str
    version: str  # without the leading "v"
    binary: str  # the built program's file name
    package: str = "."  # the main package, relative to the module
    ldflags: str = "-s -w"
    keep: tuple[str, ...] = ()  # module folders the program needs beside it (a work path)
    env: dict[str, str] = field(default_factory=lambda: {"CGO_ENABLED": "0"})
    about: str = ""  # how long it takes, said while it builds


# Docker Compose, for the bench's Compose side only (`scripts/lab/bench.py`): set-up installs no Compose, and Debian's
# docker-compose 1.29 hung creating 128 containers. The module path carries the major version (v5 is Compose 5.x).
COMPOSE_MODULE, COMPOSE_VERSION = "github.com/docker/compose/v5", "5.6.0"
COMPOSE = GoBuild(
    name="compose",
    module=COMPOSE_MODULE,
    version=COMPOSE_VERSION,
    binary="docker-compose",
    package="./cmd",
    ldflags=f"-s -w -X {COMPOSE_MODULE}/internal.Version=v{COMPOSE_VERSION}",
    about="under a minute on 2 cores with the modules at hand",
)


def say(message: str) -> None:
    print(f"go_build: {message}", file=sys.stderr, flush=True)


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(list(args), cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{' '.join(args[:3])} failed (exit {out.returncode}): {out.stderr.strip()[-2000:]}")
    return out.stdout


def cached(b: GoBuild) -> Path:
    """The folder of `b`'s cached build (built now when missing), holding `b.binary`, `b.keep` and BUILD.json."""
    dest = cache_root() / b.name / b.version
    if (dest / "BUILD.json").is_file():
        return dest
    if shutil.which("go") is None:
        raise RuntimeError(f"Go is not on PATH: it is needed once to build {b.module} (scripts/setup/setup.sh has Go)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{b.version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; who waited finds it done
        if not (dest / "BUILD.json").is_file():
            build(b, dest)
    return dest


def build(b: GoBuild, dest: Path) -> None:
    """Build `b` in a writable copy of its module, then move the program and what it keeps into `dest`."""
    t0 = time.monotonic()
    module = json.loads(run("go", "mod", "download", "-json", f"{b.module}@v{b.version}"))
    if module.get("Error") or not module.get("Dir"):
        raise RuntimeError(f"go mod download {b.module}@v{b.version}: {module.get('Error', 'no module folder')}")
    with tempfile.TemporaryDirectory(prefix=f"{b.name}-{b.version}-", dir=dest.parent) as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "dist"
        shutil.copytree(module["Dir"], src)  # the module cache is read-only; the build writes beside go.mod
        for path in (src, *src.rglob("*")):
            path.chmod(path.stat().st_mode | 0o200)
        say(f"building {b.module} {b.version} ({b.about or 'a few minutes on 2 cores'}; cached afterwards)")
        run(
            *("nice", "-n", "10", "go", "build", "-trimpath", "-ldflags", b.ldflags),
            *("-o", str(out / b.binary), b.package),
            cwd=src,
            env=b.env,
        )
        for folder in b.keep:
            shutil.copytree(src / folder, out / folder)
        (out / "BUILD.json").write_text(
            json.dumps(
                {
                    "module": b.module,
                    "version": b.version,
                    "sum": module.get("Sum"),
                    "package": b.package,
                    "env": b.env,
                    "go": run("go", "env", "GOVERSION").strip(),
                    "seconds": round(time.monotonic() - t0),
                },
                indent=2,
            )
            + "\n"
        )
        if dest.exists():  # without BUILD.json (checked under the lock) it is no complete build
            shutil.rmtree(dest)
        out.rename(dest)
    say(f"{b.module} {b.version} built in {time.monotonic() - t0:.0f} s into {dest}")


def program(b: GoBuild) -> Path:
    """The path of `b`'s built program."""
    return cached(b) / b.binary


BUILDS = {"compose": COMPOSE}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in BUILDS:
        print(f"usage: python -m scripts.setup.go_build {'|'.join(BUILDS)}", file=sys.stderr)
        return 2
    print(program(BUILDS[argv[0]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
