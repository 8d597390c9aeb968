"""Root's powers from a step or command, for root or a user with passwordless `sudo` (model/root_powers.py says which
things need them and why). Everything else runs as the user. Agent-written files are never parsed or run with these
powers: only `chown` of directories agensh made and `rm` of the profile's data run as root."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from model.root_powers import missing


class NotRoot(RuntimeError):
    """Root is needed and this user cannot get it without a password; the message says what to do."""


def is_root() -> bool:
    return os.geteuid() == 0


def user_name(uid: int) -> str:
    """A uid's user name, or `uid N` for one without (a container's)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def sudo(what: str) -> list[str]:
    """The prefix that runs a command as root: nothing as root, else `sudo -n` once `sudo -n true` shows it asks for
    no password (NotRoot, saying what lacks, otherwise)."""
    if is_root():
        return []
    user = user_name(os.geteuid())
    if shutil.which("sudo") is None:
        raise NotRoot(missing(what, user, "no sudo on this host"))
    probe = subprocess.run(["sudo", "-n", "true"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if probe.returncode != 0:
        raise NotRoot(missing(what, user, probe.stderr.strip() or f"sudo -n true exited {probe.returncode}"))
    return ["sudo", "-n"]


def run(argv: list[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`argv` as root (see `sudo`)."""
    return subprocess.run([*sudo(what), *argv], **kwargs)


def chown(paths: Iterable[str], uid: int, gid: int, what: str) -> None:
    """Give directories agensh made to a container's user."""
    paths = list(paths)
    if not paths:
        return
    if is_root():
        for path in paths:
            os.chown(path, uid, gid)
        return
    run(["chown", f"{uid}:{gid}", "--", *paths], what, check=True, capture_output=True, text=True)


def foreign(path: Path) -> bool:
    """Whether anything under `path` (itself included) belongs to another user: what this user could not delete."""
    me = os.geteuid()
    for top, dirs, files in os.walk(path):
        if any(os.lstat(os.path.join(top, n)).st_uid != me for n in [".", *dirs, *files]):
            return True
    return False


def remove_tree(path: Path, what: str) -> None:
    """Delete a directory that may hold files the containers own: as this user when all is its own, else as root
    (`rm` follows no link and stays on the directory's file system). NotRoot before anything is deleted."""
    if is_root() or not foreign(path):
        shutil.rmtree(path)
        return
    run(["rm", "-rf", "--one-file-system", "--", str(path)], what, check=True, capture_output=True, text=True)
