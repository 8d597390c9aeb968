"""shutdown: after the export, give workers up to the archive grace to seal their archives, verify them,
then stop the routers. Nothing done here can enter the submission: it was exported before this step runs.

Workers get SIGTERM and up to `grace_s` seconds (`docker stop -t`); each must leave `state.tar.gz` in its
archive directory. The receipt says which archives are complete; `archives_complete: false` makes the score
step refuse a complete score and keeps cleanup from deleting anything. Each worker's session activity (its log's
`activity` lines) is kept as `activity.jsonl` beside its archive and summarised in the receipt.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from model import steps
from model.records import ShutdownResult
from model.rundir import RunDir
from model.step_inputs import ShutdownInputs
from scripts.lib import activity
from scripts.lib.step import load_inputs, progress, run_step
from scripts.swarm_nodes import collect

ArchiveState = Literal["ok", "missing", "corrupt"]
ROUTER_GRACE_S = 10


def stop(names: list[str], grace_s: int, services: bool = False) -> None:
    """`docker stop -t grace`; on a swarm the services are scaled to 0 (their stop period is the grace) and this
    waits until their tasks have stopped."""
    if names and services:
        subprocess.run(
            ["docker", "service", "scale", "--detach=false", *(f"{n}=0" for n in names)], capture_output=True, text=True
        )
    elif names:
        subprocess.run(["docker", "stop", "-t", str(grace_s), *names], capture_output=True, text=True)


def verify(archive_dir: Path) -> ArchiveState:
    archive = archive_dir / "state.tar.gz"
    if not archive.exists():
        return "missing"
    try:
        with tarfile.open(archive) as tar:
            tar.getmembers()
    except (tarfile.TarError, OSError, EOFError):
        return "corrupt"
    return "ok"


def shutdown(a: ShutdownInputs) -> ShutdownResult:
    progress(f"shutdown: {len(a.workers)} workers get up to {a.grace_s} s to seal archives")
    stop(list(a.workers), a.grace_s, a.services)
    for name, archive in a.collect.items():  # swarm: from the node that ran the worker to the manager
        try:
            collect(archive, Path(a.workers[name]))
        except (RuntimeError, subprocess.CalledProcessError) as err:
            progress(f"shutdown: {name}: collecting its archive failed: {err}")
    archives = {name: verify(Path(d)) for name, d in a.workers.items()}
    sessions = {}
    for name, d in a.workers.items():
        events = activity.lines(name, a.services)
        if events:
            activity.keep(events, Path(d) / "activity.jsonl")
        sessions[name] = activity.session(events)
    stop(a.routers, ROUTER_GRACE_S, a.services)
    bad = {n: s for n, s in archives.items() if s != "ok"}
    progress(
        f"shutdown: {len(archives) - len(bad)} of {len(archives)} archives verified"
        + (f"; {len(bad)} missing or corrupt (see the receipt)" if bad else "")
    )
    return ShutdownResult(archives=archives, archives_complete=not bad, sessions=sessions)


def main(env: Mapping[str, str] = os.environ) -> int:
    a = load_inputs(ShutdownInputs, env)
    return run_step(steps.SHUTDOWN, RunDir(Path(a.run_dir)), a.task_id, a, lambda: shutdown(a))


if __name__ == "__main__":
    sys.exit(main())
