"""What a run records of the machine: the Git revision of a checkout, and this host's resources and load."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from model.records import Host, Revision


def revision(path: Path) -> Revision:
    """Git revision of the repository holding `path`, and whether `path` has uncommitted changes."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True).stdout.strip()

    rev = git("rev-parse", "HEAD")
    if not rev:
        return Revision(path=str(path), revision=None, dirty=None)
    return Revision(path=str(path), revision=rev, dirty=bool(git("status", "--porcelain", "--", ".")))


def host_resources() -> Host:
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return Host(cpus=os.cpu_count(), memory_gib=round(pages * size / 2**30, 1), load=os.getloadavg())
