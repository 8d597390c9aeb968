"""Git for the step programs.

`git()`: Git on repositories the project made or Gitea keeps (clones of the team repository, Gitea's own bare
repositories), over HTTP with the password in the environment only (never in a URL or an argument).
`sandbox_git()`: Git on a repository an agent controls (the baseline's workspace). Agent-controlled config, hooks,
filters and commands must never run with root's powers, so it runs in a throwaway container of the worker's image,
as the worker's uid, without network or capabilities, with hooks, fsmonitor and external tools off.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Literal, overload
from urllib.parse import urlsplit, urlunsplit

from model import contract

# Config that stops a repository from running anything: no hooks, no fsmonitor, no pager or editor, no filters'
# external processes for `git archive` (its tar.*.command), and no signing programs.
SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "core.editor=true",
    "-c",
    "core.sshCommand=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "tag.gpgSign=false",
    "-c",
    "tar.tar.gz.command=gzip -cn",
    "-c",
    "tar.tgz.command=gzip -cn",
    "-c",
    "protocol.allow=never",
    "-c",
    "protocol.http.allow=always",
    "-c",
    "protocol.https.allow=always",
    "-c",
    "protocol.file.allow=always",
)
IDENTITY = {
    "GIT_AUTHOR_NAME": "pbench",
    "GIT_AUTHOR_EMAIL": "pbench@agensh.local",
    "GIT_COMMITTER_NAME": "pbench",
    "GIT_COMMITTER_EMAIL": "pbench@agensh.local",
}


def with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")))


def git(*args: str, cwd: Path | None = None, password: str | None = None, check: bool = True) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", **IDENTITY)
    if cwd is not None:  # Gitea's repositories belong to its own uid; the step programs run as root
        env |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": str(cwd)}
    askpass = None
    if password is not None:
        fd, askpass = tempfile.mkstemp(prefix="agensh-askpass-")
        with os.fdopen(fd, "w") as fh:
            fh.write('#!/bin/sh\nprintf "%s\\n" "$AGENSH_GIT_PASSWORD"\n')
        os.chmod(askpass, stat.S_IRWXU)
        env |= {"GIT_ASKPASS": askpass, "AGENSH_GIT_PASSWORD": password}
    try:
        out = subprocess.run(["git", *SAFE, *args], cwd=cwd, env=env, capture_output=True, text=True)
    finally:
        if askpass:
            os.unlink(askpass)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {out.stderr.strip()[-500:]}")
    return out.stdout.strip()


@overload
def sandbox_git(image: str, workspace: Path, *args: str, binary: Literal[False] = False) -> str: ...
@overload
def sandbox_git(image: str, workspace: Path, *args: str, binary: Literal[True]) -> bytes: ...
def sandbox_git(image: str, workspace: Path, *args: str, binary: bool = False) -> str | bytes:
    """Git in the agent's own sandbox: `image` (the worker's), the workspace at /workspace, as the worker's uid, no
    network, no capabilities, no privilege gain. Returns stdout (bytes with `binary`, e.g. `git archive`)."""
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        "--user",
        contract.WORKER_USER,
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "-e",
        "HOME=/tmp",
        "-v",
        f"{workspace}:/workspace",
        "-w",
        "/workspace",
        "--entrypoint",
        "git",
        *[a for k, v in IDENTITY.items() for a in ("-e", f"{k}={v}")],
        image,
        *SAFE,
        *args,
    ]
    out = subprocess.run(cmd, capture_output=True, text=not binary)
    if out.returncode != 0:
        err = out.stderr if isinstance(out.stderr, str) else out.stderr.decode(errors="replace")
        raise RuntimeError(f"git {args[0]} failed: {err.strip()[-500:]}")
    return out.stdout if binary else out.stdout.strip()
