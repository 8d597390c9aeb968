"""Verified copies: every regular file copied, then checked by the SHA-256 of the original and of the copy, the
digests recorded in the copy's `SHA256SUMS.json`. Nothing is followed: a symlink or a FIFO is skipped (and listed),
never read. The preserve step copies with it, and the profile's data and the gate verify and refresh copies with it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from model import steps
from model.rundir import CopyDir, RunDir


@dataclass
class Tally:
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    sums: dict[str, str] = field(default_factory=dict)


def regular_files(root: Path) -> Iterator[tuple[Path, bool]]:
    """(path, is a regular file) for everything under `root`, never following a link."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
            path = Path(dirpath) / name
            yield path, stat.S_ISREG(os.lstat(path).st_mode)


def sha256(path: Path) -> str:
    """SHA-256 of a regular file, opened without following a link and without blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sources(rd: RunDir, archives: Mapping[str, Path], copy: CopyDir, task: str | None) -> list[tuple[Path, Path, Path]]:
    """(source root, copy root, label root) pairs: a task's directory or the whole run, and the agents' archives."""
    out = [(rd.task(task), copy.path / task) if task else (rd.path, copy.path)]
    out += [(d, copy.agent(agent)) for agent, d in archives.items()]
    return [(src, dst, dst.relative_to(copy.path) if dst != copy.path else Path(".")) for src, dst in out]


def copy_verified(t: Tally, src: Path, dst: Path, label: str) -> None:
    """Copy a regular file unless its copy already agrees, then verify the copy's digest against the original's."""
    want = sha256(src)
    if not (dst.is_file() and sha256(dst) == want):
        dst.parent.mkdir(parents=True, exist_ok=True)
        part = dst.with_name(f".{dst.name}.part")
        shutil.copyfile(src, part, follow_symlinks=False)
        os.replace(part, dst)
    got = sha256(dst)
    if got != want:
        t.problems.append(f"{dst} differs from {src} after copying")
    t.files += 1
    t.bytes += src.stat().st_size
    t.sums[label] = got


def mirror(rd: RunDir, archives: Mapping[str, Path], copy: CopyDir, task: str | None) -> Tally:
    """Copy what differs, verify every file of the sources against its copy, and record the digests."""
    t = Tally()
    for src_root, dst_root, label in sources(rd, archives, copy, task):
        if not src_root.is_dir():
            t.problems.append(f"{src_root} is missing")
            continue
        for src, regular in regular_files(src_root):
            rel = src.relative_to(src_root)
            if rd.uncopied(src, steps.PRESERVE_RUN.name):
                continue
            if not regular:
                t.skipped.append(str(src))
                continue
            copy_verified(t, src, dst_root / rel, str(label / rel))
    record_sums(copy, t.sums)
    return t


def refresh(rd: RunDir, copy: CopyDir, files: list[Path]) -> Tally:
    """Bring a verified copy up to date with files of the run directory written after it (the gate's records),
    without reading the rest of the run again."""
    t = Tally()
    for src in files:
        rel = src.relative_to(rd.path)
        copy_verified(t, src, copy.path / rel, str(rel))
    record_sums(copy, t.sums)
    return t


def problems(rd: RunDir, archives: Mapping[str, Path], copy: CopyDir) -> list[str]:
    """What of a run has no verified copy: every regular file of the run and its archives, compared by digest."""
    out = []
    for src_root, dst_root, _ in sources(rd, archives, copy, None):
        for src, regular in regular_files(src_root) if src_root.is_dir() else ():
            if rd.uncopied(src, steps.PRESERVE_RUN.name):
                continue
            dst = dst_root / src.relative_to(src_root)
            if regular and not dst.is_file():
                out.append(f"{dst} is missing")
            elif regular and sha256(dst) != sha256(src):
                out.append(f"{dst} differs from {src}")
    return out


def record_sums(copy: CopyDir, sums: dict[str, str]) -> None:
    """Merge into SHA256SUMS.json, one writer at a time (a task's copy can overlap the next one's)."""
    copy.path.mkdir(parents=True, exist_ok=True)
    with open(copy.path / ".sums.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = json.loads(copy.sums.read_text()) if copy.sums.exists() else {}
        part = copy.sums.with_name(f".{copy.sums.name}.part")
        part.write_text(json.dumps({**known, **sums}, indent=1, sort_keys=True) + "\n")
        os.replace(part, copy.sums)
