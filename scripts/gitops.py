"""Git over HTTP with the password in the environment only (never in a URL or an argument)."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")))


def git(*args: str, cwd: Path | None = None, password: str | None = None, check: bool = True) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_AUTHOR_NAME="pbench", GIT_AUTHOR_EMAIL="pbench@agensh.local",
               GIT_COMMITTER_NAME="pbench", GIT_COMMITTER_EMAIL="pbench@agensh.local")
    if cwd is not None:  # the baseline's workspace belongs to the worker's uid; the step programs run as root
        env |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": str(cwd)}
    askpass = None
    if password is not None:
        fd, askpass = tempfile.mkstemp(prefix="agensh-askpass-")
        with os.fdopen(fd, "w") as fh:
            fh.write('#!/bin/sh\nprintf "%s\\n" "$AGENSH_GIT_PASSWORD"\n')
        os.chmod(askpass, stat.S_IRWXU)
        env |= {"GIT_ASKPASS": askpass, "AGENSH_GIT_PASSWORD": password}
    try:
        out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    finally:
        if askpass:
            os.unlink(askpass)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {out.stderr.strip()[-500:]}")
    return out.stdout.strip()
