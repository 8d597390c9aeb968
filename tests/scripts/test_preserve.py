"""Results are kept: each run is copied out of the profile's data and verified; destroy deletes the data only when
every run's copy is there and identical, and never a directory agensh did not create."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from model.rundir import CopyDir, ProfileDir
from model.step_inputs import PreserveInputs, ProfileDataInputs
from scripts import preserve, profile_data
from scripts.cli.app import main as cli
from scripts.lib import copies

RUN, TASK, AGENT = "20261129t000000z", "testorg__calculator.abc1234", "testorg__calculator.abc1234-1"


@pytest.fixture
def profile(tmp_path: Path):
    """A profile's data with one run (a task's results, a run-level file) and an agent's sealed archive."""
    pd = ProfileDir(tmp_path / "data" / "p")
    assert profile_data.main(["create"], env(pd, tmp_path)) == 0
    rd = pd.run(RUN)
    (rd.task(TASK) / "receipts").mkdir(parents=True)
    rd.submission(TASK).write_bytes(os.urandom(4096))
    rd.score(TASK).write_text('{"score": 1.0}')
    rd.manifest.write_text("{}")
    archive = pd.archive_dir(AGENT, RUN)
    archive.mkdir(parents=True)
    (archive / "state.tar.gz").write_bytes(os.urandom(8192))
    return pd, rd, archive, tmp_path / "traj"


def env(pd: ProfileDir, tmp: Path, **extra: str) -> dict[str, str]:
    a = ProfileDataInputs(profile_dir=str(pd.path), profile=pd.path.name, traj_root=str(tmp / "traj"))
    return {"AGENSH_INPUT": a.model_dump_json(), **extra}


def copy_task(rd, archive: Path, traj: Path, task: str | None = TASK) -> int:
    a = PreserveInputs(
        run_dir=str(rd.path),
        task_id=task,
        copy_dir=str(CopyDir.of(str(traj), "p", RUN).path),
        archive_dirs={AGENT: str(archive)},
    )
    return preserve.main(["task" if task else "run"], {"AGENSH_INPUT": a.model_dump_json()})


def test_a_task_and_then_the_run_are_copied_and_verified(profile, tmp_path: Path):
    pd, rd, archive, traj = profile
    planted = archive / "planted"
    planted.symlink_to("/etc/shadow")  # an agent can write into its archive directory: never followed
    os.mkfifo(archive / "fifo")  # nor read (it would block)
    assert copy_task(rd, archive, traj) == 0
    copy = CopyDir.of(str(traj), "p", RUN)
    receipt = json.loads(rd.receipt("preserve-task", TASK).read_text())["result"]
    assert (
        receipt["verified"]
        and receipt["files"] == 3
        and sorted(receipt["skipped"]) == sorted([str(planted), str(archive / "fifo")])
    )
    assert (copy.path / TASK / "submission.tar.gz").read_bytes() == rd.submission(TASK).read_bytes()
    assert (copy.agent(AGENT) / "state.tar.gz").read_bytes() == (archive / "state.tar.gz").read_bytes()
    assert not (copy.agent(AGENT) / "planted").exists() and not (copy.agent(AGENT) / "fifo").exists()
    missing = sorted(copies.problems(rd, {AGENT: archive}, copy))  # run-level files, and this step's own receipt
    assert missing == sorted(
        [
            f"{copy.path / 'run_manifest.json'} is missing",
            f"{copy.path / TASK / 'receipts' / 'preserve-task.json'} is missing",
        ]
    )
    assert copy_task(rd, archive, traj, task=None) == 0  # the whole run, last
    assert copies.problems(rd, {AGENT: archive}, copy) == []
    sums = json.loads(copy.sums.read_text())
    assert sums["run_manifest.json"] and sums[f"agents/{AGENT}/state.tar.gz"] and sums[f"{TASK}/score.json"]


def test_destroy_refuses_without_a_verified_copy_and_deletes_nothing(profile, tmp_path: Path, capsys):
    pd, rd, archive, traj = profile
    assert profile_data.main(["delete"], env(pd, tmp_path)) == 1
    assert "run_manifest.json is missing" in capsys.readouterr().err and rd.submission(TASK).exists()
    assert copy_task(rd, archive, traj, task=None) == 0
    copy = CopyDir.of(str(traj), "p", RUN)
    good = (copy.path / TASK / "submission.tar.gz").read_bytes()
    (copy.path / TASK / "submission.tar.gz").write_bytes(b"corrupted")
    assert profile_data.main(["delete"], env(pd, tmp_path)) == 1
    err = capsys.readouterr().err
    assert "submission.tar.gz differs" in err and "AGENSH_FORCE_CLEAN=1" in err and "scripts.cli save" in err
    assert pd.path.exists() and rd.submission(TASK).exists()
    (copy.path / TASK / "submission.tar.gz").write_bytes(good)
    assert profile_data.main(["delete"], env(pd, tmp_path)) == 0
    assert not pd.path.exists() and (copy.path / TASK / "submission.tar.gz").read_bytes() == good  # the copy stays


def test_saving_by_hand_then_destroying(profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    pd, rd, archive, traj = profile
    assert cli(["save", str(tmp_path), str(traj)]) == 2  # a directory agensh did not make for a profile
    assert "not a profile's data directory" in capsys.readouterr().err
    assert cli(["save", str(pd.path), str(pd.path / "copies")]) == 2  # copies into what it copies
    assert "lies in the profile's data" in capsys.readouterr().err
    assert cli(["save", str(pd.path), str(traj)]) == 0
    assert f"{rd.path.name}: " in capsys.readouterr().out
    assert profile_data.main(["delete"], env(pd, tmp_path)) == 0


def test_force_deletes_but_never_a_directory_agensh_did_not_make(profile, tmp_path: Path):
    pd, rd, archive, traj = profile
    assert profile_data.main(["delete"], env(pd, tmp_path, AGENSH_FORCE_CLEAN="1")) == 0 and not pd.path.exists()
    foreign = ProfileDir(tmp_path / "data" / "home")
    (foreign.path / "user").mkdir(parents=True)
    assert profile_data.main(["create"], env(foreign, tmp_path)) == 1  # an existing directory is not claimed
    assert profile_data.main(["delete"], env(foreign, tmp_path, AGENSH_FORCE_CLEAN="1")) == 1
    assert (foreign.path / "user").exists()
