"""Git on the baseline's agent-owned workspace never runs the repository's config, hooks or commands as root:
seed, snapshot, stop and export all work on a repository whose config sets core.fsmonitor, a pre-commit hook and
tar.tar.gz.command, each of which would leave a proof file with its uid, and none is left."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from model import contract
from model.records import BaselineSeedResult, Receipt
from model.rundir import RunDir
from model.services import SNAPSHOT_GIT
from model.step_inputs import BaselineStopInputs
from scripts import baseline
from scripts.lib.step import iso, now, write_atomic
from scripts.setup.calculator import BASE_IMAGE


def docker(*args: str, check: bool = True) -> str:
    out = subprocess.run(["docker", *args], capture_output=True, text=True)
    assert not check or out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def hostile_workspace(tmp_path: Path, base_image: str):
    """A workspace owned by the worker uid whose repository tries to run three commands; `proof` collects them."""
    proof = tmp_path / "proof"
    proof.mkdir()
    proof.chmod(0o777)
    ws = tmp_path / "workspace"
    ws.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(ws), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    (ws / "compile.sh").write_text("#!/bin/sh\ncp calc.sh executable\n")
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    for key, name in (("core.fsmonitor", "fsmonitor"), ("tar.tar.gz.command", "tar-command")):
        run("config", key, f"sh -c 'id -u >> {proof}/{name}; cat'")
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nid -u >> {proof}/pre-commit\n")
    hook.chmod(0o755)
    (ws / "work.txt").write_text("uncommitted work")
    subprocess.run(["chown", "-R", contract.WORKER_USER, str(ws)], check=True)
    return ws, proof


def test_snapshot_stop_and_export_run_nothing_of_the_repository(hostile_workspace, tmp_path: Path):
    ws, proof = hostile_workspace
    tag = uuid.uuid4().hex[:6]
    # the snapshot sidecar's own commands (roles.SNAPSHOT_GIT), as the sidecar runs them
    docker(
        "run",
        "--rm",
        "--network",
        "none",
        "--user",
        contract.WORKER_USER,
        "-e",
        "HOME=/tmp",
        "-v",
        f"{ws}:/workspace",
        BASE_IMAGE,
        "sh",
        "-c",
        f"{SNAPSHOT_GIT} add -A && {SNAPSHOT_GIT} -c user.name=s -c user.email=s@s commit -q -m 'snapshot now'",
    )
    (ws / "late.txt").write_text("made while stopping")
    subprocess.run(["chown", contract.WORKER_USER, str(ws / "late.txt")], check=True)

    # the stop step itself: containers to stop, the seed's receipt, then commit the rest and export
    names = [f"agensh-test-bgit-{tag}-{n}" for n in ("worker", "sidecar")]
    for name in names:
        docker(
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "none",
            "--label",
            f"agensh.test=bgit-{tag}",
            BASE_IMAGE,
            "sleep",
            "300",
        )
    try:
        rd = RunDir(tmp_path / "run")
        seeded = BaselineSeedResult(
            workspace=str(ws),
            commit="x",
            started_epoch=time.time() - 10,
            deadline_epoch=time.time() - 1,
            deadline=iso(time.time() - 1),
        )
        write_atomic(
            rd.receipt("baseline-seed", "t"),
            Receipt[BaselineSeedResult](
                step="baseline-seed",
                task_id="t",
                inputs_digest="x",
                started=now(),
                finished=now(),
                status="ok",
                result=seeded,
            ),
        )
        archive = tmp_path / "archive"
        archive.mkdir()
        result = baseline.stop(
            BaselineStopInputs(
                run_dir=str(rd.path),
                task_id="t",
                workspace=str(ws),
                worker_image=BASE_IMAGE,
                worker=names[0],
                sidecar=names[1],
                archive_dir=str(archive),
                grace_s=1,
            )
        )
    finally:
        docker("rm", "-f", *names, check=False)

    assert sorted(p.name for p in proof.iterdir()) == []  # neither as root nor as the worker: nothing ran
    with tarfile.open(result.submission) as tar:  # committed HEAD, including what remained at the stop
        assert sorted(tar.getnames()) == ["compile.sh", "late.txt", "work.txt"]
    assert json.loads(rd.status.read_text())["state"] == "exported" and result.snapshots == 1
    owners = {p.stat().st_uid for p in (ws / ".git").rglob("*")}
    assert owners == {contract.WORKER_UID}  # every object the commits made belongs to the agent, none to root
    assert os.stat(ws / ".git" / "config").st_uid == contract.WORKER_UID
