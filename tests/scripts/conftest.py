"""Fixtures shared by the script tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from model.project import ROOT
from tests.conftest import require

# The official leaderboard's published results for the 20 gate tasks (`<task>/<task>.eval.json`), only read.
LEADERBOARD = Path(os.environ.get("AGENSH_FIXTURES", ROOT.parent / "shared" / "fixtures")) / "leaderboard-gpt-5-5-high"


def leaderboard_tasks() -> list[str]:
    require(LEADERBOARD.is_dir(), f"the leaderboard fixture {LEADERBOARD} (AGENSH_FIXTURES names its parent)")
    return sorted(d.name for d in LEADERBOARD.iterdir() if d.is_dir())


@pytest.fixture
def project(tmp_path: Path, pulumi_cli: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    for part in ("Pulumi.yaml", "components", "model", "scripts"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, proj / part)
    (proj / "stacks").mkdir()
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path / 'state'}")
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    monkeypatch.setenv("LLM_UPSTREAM", "https://gateway.example")
    monkeypatch.setenv("LLM_UPSTREAM_TOKEN", "tok-" + "x" * 20)
    return proj


def kicked_off(run_dir: Path, task: str, deadline_epoch: float) -> None:
    """A kickoff receipt as the kickoff step writes it, for steps that wait for the deadline it records."""
    from model.records import KickoffResult, Receipt
    from model.rundir import RunDir
    from scripts.lib.step import iso, now, write_atomic

    result = KickoffResult(
        ramp_start=iso(deadline_epoch - 60),
        ramp_start_epoch=deadline_epoch - 60,
        kickoff_at=now(),
        deadline=iso(deadline_epoch),
        deadline_epoch=deadline_epoch,
        post_id="p",
    )
    write_atomic(
        RunDir(run_dir).receipt("kickoff", task),
        Receipt[KickoffResult](
            step="kickoff",
            task_id=task,
            inputs_digest="test",
            started=now(),
            finished=now(),
            status="ok",
            result=result,
        ),
    )
