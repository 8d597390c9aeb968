"""baseline: the standalone single-agent baseline's own steps (docs/requirements.md RJ); evaluate and score are shared.

`seed`: the task's starting workspace (from the cleanroom image, without the reference binary) becomes a Git
repository on the host, mounted into the worker; writes `provenance.json` and `status.json`.
`stop` (at the deadline): stops the snapshot sidecar, gives the worker the archive grace to seal its archive (verified),
keeps its native activity log as `cc.log` (what its activity report is read from: its container log, or its file;
the session is summarised in the receipt), commits what remains, and exports the committed HEAD as the submission.
The workspace belongs to the agent: every Git command on it runs in the agent's own sandbox (`gitops.sandbox_git`),
never as root on the host. Unlike a team, work done while stopping can enter the submission (the seed's documented
difference). Lifecycle states in `status.json`: seeded, running, stopping, exported (or export_failed).
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from model import contract, steps
from model.records import BaselineSeedResult, ShutdownResult
from model.rundir import EXPORT_FAILED, RUN_FAILED, RunDir
from model.step_inputs import BaselineSeedInputs, BaselineStopInputs
from scripts.lib import activity, privilege, workers
from scripts.lib.gitops import sandbox_git
from scripts.lib.step import StepFailed, iso, load_inputs, mode_of, progress, run_step, wait_until, write_atomic
from scripts.seed import archive_dirs, workspace_from_image
from scripts.shutdown import ROUTER_GRACE_S, verify


def status(rd: RunDir, state: str, **extra: Any) -> None:
    current = json.loads(rd.status.read_text()) if rd.status.exists() else {"history": []}
    current["history"].append({"state": state, "at": iso(time.time())})
    write_atomic(rd.status, {**current, "state": state, **extra})


def seed(a: BaselineSeedInputs) -> BaselineSeedResult:
    rd = RunDir(Path(a.run_dir))
    ws = Path(a.workspace)
    archive_dirs(a.archive_dirs)
    git = partial(sandbox_git, a.worker_image, ws)
    if not (ws / ".git").exists():
        ws.mkdir(parents=True, exist_ok=True)
        files = workspace_from_image(a.cleanroom, ws)
        privilege.run(["chown", "-R", contract.WORKER_USER, str(ws)], "giving the agent its workspace", check=True)
        git("init", "-q", "-b", "main")
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", f"Task {a.task_id}: starting workspace")
        progress(f"baseline: seeded {len(files)} files into the workspace")
    started = time.time()
    write_atomic(rd.provenance, {**a.provenance, "seeded_at": iso(started)})
    status(rd, "running", deadline=iso(started + a.budget_s))
    return BaselineSeedResult(
        workspace=str(ws),
        commit=str(git("rev-parse", "HEAD")),
        started_epoch=started,
        deadline_epoch=started + a.budget_s,
        deadline=iso(started + a.budget_s),
    )


def stop(a: BaselineStopInputs) -> ShutdownResult:
    rd = RunDir(Path(a.run_dir))
    ws = Path(a.workspace)
    git = partial(sandbox_git, a.worker_image, ws)
    seeded = steps.result_of(rd, steps.BASELINE_SEED, a.task_id, BaselineSeedResult)
    if seeded is None:
        raise StepFailed("no baseline-seed receipt: the baseline never started")
    wait_until(seeded.deadline_epoch, "baseline stop")
    status(rd, "stopping")
    workers.stop([a.sidecar], ROUTER_GRACE_S)
    workers.stop([a.worker], a.grace_s)
    archive = verify(Path(a.archive_dir))
    read = activity.reader(a.convention)
    native = read.native(a.worker)
    rd.activity_log.write_text(native)
    session = read.session(read.parse(native))
    git("add", "-A")
    if git("status", "--porcelain"):
        git("commit", "-q", "-m", "final: remaining changes after stop")
    out = rd.submission(a.task_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f".{out.name}.part")
    try:  # the tar comes out of the sandbox; it is compressed here, with no program of the repository's choosing
        tar = sandbox_git(a.worker_image, ws, "archive", "--format=tar", "HEAD", binary=True)
        part.write_bytes(gzip.compress(tar, mtime=0))
    except RuntimeError as err:
        status(rd, "export_failed")
        raise StepFailed(f"export failed: {err}", marker=EXPORT_FAILED) from None
    part.replace(out)
    snapshots = str(git("log", "--oneline", "--grep", "^snapshot")).splitlines()
    status(rd, "exported", submission=str(out), copilot_version=session.copilot_version)
    return ShutdownResult(
        archives={a.worker: archive},
        archives_complete=archive == "ok",
        submission=str(out),
        commit=str(git("rev-parse", "HEAD")),
        snapshots=len(snapshots),
        sessions={a.worker: session},
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    if mode_of("baseline", argv, steps.BASELINE_SEED.args, steps.BASELINE_STOP.args) == steps.BASELINE_SEED.args:
        s = load_inputs(BaselineSeedInputs, env)
        return run_step(steps.BASELINE_SEED, RunDir(Path(s.run_dir)), s.task_id, s, lambda: seed(s), RUN_FAILED)
    # the stop step's receipt is the task's shutdown receipt, which the score step reads for the archives
    t = load_inputs(BaselineStopInputs, env)
    return run_step(steps.BASELINE_STOP, RunDir(Path(t.run_dir)), t.task_id, t, lambda: stop(t))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
