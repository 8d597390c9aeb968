"""Transient systemd services (`systemd-run`, through `sudo -n`), where systemd is the host's init: the detached
launcher (scripts/lib/launcher.py) and each task's deadline keeper (scripts/lib/freeze.py).

A process that must outlive another needs a unit of its own: a new session does not leave its unit's cgroup, and
when a unit ends (its main process exits or is killed, `systemctl stop`, the OOM killer) systemd kills every process
left in it. A service here runs as the caller (its uid and gid), never restarted, collected when it ends, its output
appended to a file, with an explicit environment: a unit's environment is shown to every user (`systemctl show`), so
it never holds a secret.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from model.project import ROOT
from scripts.lib import privilege


def systemd_runs() -> bool:
    """Whether this host's init is systemd (its runtime directory exists) and systemd-run is at hand."""
    return Path("/run/systemd/system").is_dir() and shutil.which("systemd-run") is not None


def service(
    unit: str,
    description: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    log: Path,
    slice_: str | None = None,
    props: Sequence[str] = (),
) -> list[str]:
    """The `systemd-run` command line of a service `unit` running `argv` in the checkout as the caller."""
    return [
        "systemd-run",
        f"--unit={unit}",
        "--collect",
        f"--description={description}",
        f"--working-directory={ROOT}",
        *([] if privilege.is_root() else [f"--uid={os.geteuid()}", f"--gid={os.getegid()}"]),  # the caller's, by sudo
        *([f"--slice={slice_}"] if slice_ else []),
        *(f"--property={prop}" for prop in ("Restart=no", *props, f"StandardOutput=append:{log}")),
        f"--property=StandardError=append:{log}",
        *(f"--setenv={k}={v}" for k, v in sorted(env.items())),
        *argv,
    ]
