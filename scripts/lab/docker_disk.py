"""The Docker engine's disk, as the tests and the lab use it.

Every stack the tests and the fault harness bring up builds its images under a private tag, so each leaves build
cache nobody reuses (~0.6 GB per demo-shaped stack). A Docker engine whose BuildKit garbage collection is off (the
default of the Debian engine that set-up installs) keeps all of it: over a few suites the data root fills and builds
fail midway. So a suite or a harness run measures the cache when it starts and trims it back to that size when it
ends, and refuses to start on an engine without room for a run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

# What one `make test` run needs free on the engine's data root at its peak (measured: the suite grows the engine's
# images and build cache by ~12 GB before its session end trims the cache back; twice that, for a margin).
SUITE_NEEDS_BYTES = 24 * 10**9
_UNITS = {"B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def _docker(*args: str) -> str:
    out = subprocess.run(["docker", *args], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"docker {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def parse_size(text: str) -> int:
    """Bytes of a size as `docker system df` prints it ("63.2GB", "878B", "0B")."""
    m = re.fullmatch(r"([0-9.]+)\s*([kKMGT]?B)", text.strip())
    if not m:
        raise ValueError(f"not a Docker size: {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def build_cache_bytes() -> int:
    """The engine's build cache, all of it."""
    for line in _docker("system", "df", "--format", "{{.Type}}\t{{.Size}}").splitlines():
        kind, _, size = line.partition("\t")
        if kind == "Build Cache":
            return parse_size(size)
    return 0


def trim_build_cache(to_bytes: int) -> None:
    """Drop the least recently used build cache until at most `to_bytes` remain (only cache: any build re-creates
    what it needs)."""
    _docker("builder", "prune", "--force", "--keep-storage", str(max(to_bytes, 0)))


def free_bytes() -> int:
    """Free space on the engine's data root."""
    return shutil.disk_usage(_docker("info", "--format", "{{.DockerRootDir}}").strip()).free


def room_for_a_run(needs: int = SUITE_NEEDS_BYTES) -> str | None:
    """None when the engine's data root has `needs` bytes free, else what is short and how much cache could go."""
    free = free_bytes()
    if free >= needs:
        return None
    return (
        f"the Docker engine's data root has {free / 1e9:.1f} GB free, a run needs {needs / 1e9:.0f} GB; "
        f"its build cache holds {build_cache_bytes() / 1e9:.1f} GB (`docker builder prune` frees it)"
    )


@contextmanager
def build_cache_kept() -> Iterator[None]:
    """The build cache back to its size at the start when the block ends, however it ends."""
    before = build_cache_bytes()
    try:
        yield
    finally:
        if build_cache_bytes() > before:
            trim_build_cache(before)
