"""shutdown: after the export, give workers up to the archive grace to seal their archives, verify them,
then stop the routers. Nothing done here can enter the submission: it was exported before this step runs.

Workers get SIGTERM and up to `grace_s` seconds (`docker stop -t`); each must leave `state.tar.gz` in its
archive directory. A worker whose archive is then missing or corrupt though it has stopped (its seal failed: the
data root was full while it sealed, and this step failed too; after making room the step runs again) still holds
its HOME and workspace in its container: it is started and stopped once more, so it seals anew (one host; the
submission was exported before this step, so nothing the agent does meanwhile can enter it). The receipt says which
archives are complete; `archives_complete: false` makes the score step refuse a complete score and keeps cleanup
from deleting anything. Each worker's session activity (its events, read as the profile's checkout convention says:
scripts/lib/activity.py) is kept as `activity.jsonl` beside its archive and summarised in the receipt.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from model import contract, steps
from model.checkout import ARCHIVE
from model.records import ShutdownResult
from model.rundir import RunDir
from model.step_inputs import ShutdownInputs
from scripts.lib import activity
from scripts.lib.step import load_inputs, mode_of, progress, run_step
from scripts.lib.workers import is_service, running, start_worker, stop
from scripts.swarm_nodes import collect

ArchiveState = Literal["ok", "missing", "corrupt"]
ROUTER_GRACE_S = 10
KEPT = "activity.jsonl"  # the session's events, beside the archive
HANDLER_WAIT_S = 30  # how long a restarted worker may take to be ready to seal


def verify(archive_dir: Path) -> ArchiveState:
    archive = archive_dir / ARCHIVE.tarball
    if not archive.exists():
        return "missing"
    try:
        with tarfile.open(archive) as tar:
            tar.getmembers()
    except (tarfile.TarError, OSError, EOFError):
        return "corrupt"
    return "ok"


def handles_sigterm(name: str) -> bool:
    """Whether a running container's first process has its SIGTERM handler (the kernel's SigCgt mask): a container's
    init ignores a SIGTERM it does not handle, so one sent earlier would be lost and the seal never made."""
    pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", name], capture_output=True, text=True).stdout
    try:
        status = Path(f"/proc/{int(pid)}/status").read_text().splitlines()
        caught = int(next(line for line in status if line.startswith("SigCgt:")).split()[1], 16)
    except (ValueError, OSError, StopIteration):
        return False
    return bool(caught & 1 << (signal.SIGTERM - 1))


def reseal(a: ShutdownInputs, stopped: list[str]) -> dict[str, ArchiveState]:
    """Stopped workers without a good archive, started and stopped again to seal anew; their archives' states."""
    for name in stopped:
        progress(f"shutdown: {name}: no good archive; started again to seal it anew")
        start_worker(name)
    deadline = time.monotonic() + HANDLER_WAIT_S
    while not all(handles_sigterm(n) for n in stopped) and time.monotonic() < deadline:
        time.sleep(0.2)
    stop(stopped, a.grace_s)
    return {name: verify(Path(a.workers[name])) for name in stopped}


def keep(worker: str, archive_dir: Path, data: bytes) -> None:
    """`activity.jsonl` beside the worker's archive, preserved with it. A container's goes through Docker into its
    archive mount, owned by the worker's uid: the folder is the worker's, which an operator who is not root may not
    write, and a link the agent left there resolves inside the container, never on the host. A swarm worker's archive
    was collected onto this host (`collect`): written there."""
    if is_service(worker):
        (archive_dir / KEPT).write_bytes(data)
        return
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as out:
        info = tarfile.TarInfo(KEPT)
        info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
        info.uid = info.gid = contract.WORKER_UID
        out.addfile(info, io.BytesIO(data))
    cp = ["docker", "cp", "-", f"{worker}:{ARCHIVE.mount}"]
    subprocess.run(cp, input=tar.getvalue(), capture_output=True, check=True)


def shutdown(a: ShutdownInputs) -> ShutdownResult:
    progress(f"shutdown: {len(a.workers)} workers get up to {a.grace_s} s to seal archives")
    stop(list(a.workers), a.grace_s)
    for name, archive in a.collect.items():  # swarm: from the node that ran the worker to the manager
        try:
            collect(archive, Path(a.workers[name]))
        except (RuntimeError, subprocess.CalledProcessError) as err:
            progress(f"shutdown: {name}: collecting its archive failed: {err}")
    archives = {name: verify(Path(d)) for name, d in a.workers.items()}
    # a container stopped without a good archive is sealed anew; a service's task is gone with its container
    archives |= reseal(
        a, [n for n, state in archives.items() if state != "ok" and not is_service(n) and not running(n)]
    )
    sessions = {}
    read = activity.reader(a.convention)
    for name, d in a.workers.items():
        events = read.events(name)
        if events:
            keep(name, Path(d), activity.jsonl(events))
        sessions[name] = read.session(events)
    stop(a.routers, ROUTER_GRACE_S)
    bad = {n: s for n, s in archives.items() if s != "ok"}
    progress(
        f"shutdown: {len(archives) - len(bad)} of {len(archives)} archives verified"
        + (f"; {len(bad)} missing or corrupt (see the receipt)" if bad else "")
    )
    return ShutdownResult(archives=archives, archives_complete=not bad, sessions=sessions)


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("shutdown", argv, steps.SHUTDOWN.args)
    a = load_inputs(ShutdownInputs, env)
    return run_step(steps.SHUTDOWN, RunDir(Path(a.run_dir)), a.task_id, a, lambda: shutdown(a))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
