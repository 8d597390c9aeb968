"""Root's powers for an operator with passwordless `sudo`: never a password prompt, and a clear word of what is
missing when `sudo` would ask for one.

Docker needs no root (the docker group, or root). Three things do: systemd units (writing /etc/systemd/system and
/var/lib/agensh, `systemctl`: the host units, a scheduled launch), making the workers' archive directories theirs
(the worker uid) and deleting what the containers wrote (the services' data, the workers' archives). Root does them
itself; any other user through `sudo -n`, which fails at once where `sudo` would prompt. scripts/lib/privilege.py
runs them from Python; `as_root` wraps a shell command that reaches a host on stdin, here or over SSH.
"""

from __future__ import annotations

import shlex

HOW = 'run it as root, or give this user passwordless sudo (docs/operations.md, "Setting the machine up")'


def missing(what: str, user: str, why: str) -> str:
    """The message when `what` needs root and `user` cannot get it without a password."""
    return f"{what} needs root; {user} is not root and `sudo -n` cannot run ({why}): {HOW}"


def as_root(command: str, what: str) -> str:
    """A shell command line running `command` as root for any user (its stdin reaches `command`): itself as root,
    else through `sudo -n`; without passwordless sudo it says what is missing and exits 1, never prompting."""
    before, after = missing(what, "\0", "sudo asks for a password, or this user may not use it").split("\0")
    said = f'printf "%s%s%s\\n" {shlex.quote(before)} "$(id -un)" {shlex.quote(after)} >&2'
    return (
        f'if [ "$(id -u)" = 0 ]; then {command}; elif sudo -n true 2>/dev/null; then sudo -n {command}; '
        f"else {said}; exit 1; fi"
    )
