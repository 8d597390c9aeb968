"""Run records: the append-only index survives a crash, readers dedup, receipts make steps idempotent,
the manifest is written first and finished with counts over the requested tasks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from model import steps
from model.project import ROOT
from model.records import IndexRow, KickoffResult, Record, read_index
from model.rundir import RunDir
from model.step_inputs import TaskInputs
from model.steps import read_receipt, result_of
from scripts import manifest
from scripts.lib.step import StepFailed, append_result, now, run_step


class Value(Record):
    value: int


def row(task: str, status: str, score: float | None) -> IndexRow:
    return IndexRow(at=now(), task_id=task, status=status, score=score)


def inputs(tmp_path: Path, task: str = "t") -> TaskInputs:
    return TaskInputs(run_dir=str(tmp_path), task_id=task)


def test_index_survives_a_crash_between_rows(tmp_path: Path):
    rd = RunDir(tmp_path)
    code = (
        "import os; from pathlib import Path; "
        "from model.rundir import RunDir; from model.records import IndexRow; "
        f"from scripts.lib.step import append_result; rd = RunDir(Path({str(tmp_path)!r})); "
        "append_result(rd, IndexRow(at='x', task_id='a', status='scored', score=0.5)); "
        'open(rd.index, \'a\').write(\'{"task_id": "b", "sta\'); os._exit(9)'
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 9
    append_result(rd, row("a", "scored", 1.0))
    rows = read_index(rd.index)
    assert list(rows) == ["a"] and rows["a"].score == 1.0  # torn row ignored, last row wins
    assert len(rd.index.read_text().splitlines()) == 3  # nothing was rewritten; the torn line was closed
    assert read_index(rd.task_index("a"))["a"].score == 1.0


def test_receipt_makes_a_step_idempotent(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    calls = []
    rd = RunDir(tmp_path)

    def body() -> Value:
        calls.append(1)
        return Value(value=42)

    assert run_step(steps.SEED, rd, "t", inputs(tmp_path), body) == 0
    first = capsys.readouterr().out.strip().splitlines()[-1]
    written = rd.receipt(steps.SEED.name, "t").read_text()
    assert json.loads(first)["result"] == {"value": 42} and json.loads(first) == json.loads(written)
    assert run_step(steps.SEED, rd, "t", inputs(tmp_path), body) == 0  # replayed: same receipt, no work
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == json.loads(first) and len(calls) == 1
    assert rd.receipt(steps.SEED.name, "t").read_text() == written
    assert run_step(steps.SEED, rd, "t", inputs(tmp_path, "u"), body) == 0 and len(calls) == 2  # new inputs run again
    written_by_another = tmp_path / "eval.json"
    written_by_another.write_text("{}")
    assert run_step(steps.SEED, rd, "t", inputs(tmp_path), body, reads={"eval": written_by_another}) == 0
    assert len(calls) == 3  # it now reads a file another step wrote: the step runs again
    assert run_step(steps.SEED, rd, "t", inputs(tmp_path), body, reads={"eval": written_by_another}) == 0
    assert len(calls) == 3  # the same file: replayed
    written_by_another.write_text('{"score": 1}')
    assert run_step(steps.SEED, rd, "t", inputs(tmp_path), body, reads={"eval": written_by_another}) == 0
    assert len(calls) == 4  # that file changed: the step runs again


def test_failed_step_is_recorded_and_retried(tmp_path: Path):
    rd = RunDir(tmp_path)

    def fails() -> Value:
        raise StepFailed("gateway unreachable", url="http://x")

    assert run_step(steps.SEED, rd, None, inputs(tmp_path), fails) == 1
    receipt = json.loads(rd.receipt(steps.SEED.name).read_text())
    assert receipt["status"] == "failed" and receipt["details"] == {"url": "http://x"} and receipt["result"] is None
    assert run_step(steps.SEED, rd, None, inputs(tmp_path), lambda: Value(value=1)) == 0
    assert json.loads(rd.receipt(steps.SEED.name).read_text())["result"] == {"value": 1}


def test_typed_receipts_are_read_back_by_later_steps(tmp_path: Path):
    rd = RunDir(tmp_path)
    kicked = KickoffResult(
        ramp_start="a", ramp_start_epoch=1.0, kickoff_at="b", deadline="c", deadline_epoch=2.0, post_id="p"
    )
    assert run_step(steps.KICKOFF, rd, "t", inputs(tmp_path), lambda: kicked) == 0
    assert result_of(rd, steps.KICKOFF, "t", KickoffResult) == kicked
    assert read_receipt(rd, steps.KICKOFF, "t").status == "ok"
    assert result_of(rd, steps.KICKOFF, "other", KickoffResult) is None  # never ran
    assert run_step(steps.KICKOFF, rd, "u", inputs(tmp_path, "u"), lambda: (_ for _ in ()).throw(StepFailed("x"))) == 1
    assert result_of(rd, steps.KICKOFF, "u", KickoffResult) is None  # failed


def profile_args(tmp_path: Path, **over) -> dict:
    args = {
        "run_dir": str(tmp_path / "run"),
        "project_dir": str(ROOT),
        "checkout": str(tmp_path / "checkout"),
        "profile": {"tasks": ["a__x.1", "b__y.2", "c__z.3"], "allow_dirty": False},
        "profile_digest": "d",
        "images": {"img:1": "sha256:1"},
        "copy_dir": str(tmp_path / "traj" / "p.r"),
    }
    args.update(over)
    return args


def git_checkout(path: Path, dirty: bool) -> None:
    path.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (path / "f").write_text("x")
    run("-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    run("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x")
    if dirty:
        (path / "f").write_text("changed")


def test_manifest_first_then_counts_over_requested(tmp_path: Path):
    git_checkout(tmp_path / "checkout", dirty=False)
    args = profile_args(tmp_path)
    env = {"AGENSH_INPUT": json.dumps(args)}
    assert manifest.main(["start"], env) == 0
    m = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    assert m["state"] == "running" and m["requested_task_ids"] == ["a__x.1", "b__y.2", "c__z.3"]
    assert m["checkout"]["dirty"] is False and m["programbench_version"] == "1.2.5"
    assert m["images"] == {"img:1": "sha256:1"} and m["host"]["cpus"] >= 1
    rd = RunDir(tmp_path / "run")
    append_result(rd, row("a__x.1", "scored", 1.0))
    append_result(rd, row("a__x.1", "scored", 0.5))
    append_result(rd, row("b__y.2", "incomplete", None))
    assert manifest.main(["finish"], env) == 0
    m = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    assert (m["completed"], m["failed"]) == (1, 2) and m["scores"] == {"a__x.1": 0.5}
    assert m["headline_requested"]["mean_score"] == round(0.5 / 3, 4)
    assert m["headline_benchmark"]["n_instances_total"] == 200
    append_result(rd, row("c__z.3", "scored", 1.0))  # a later result: finishing again rewrites the counts
    assert manifest.main(["finish"], env) == 0
    assert json.loads((tmp_path / "run" / "run_manifest.json").read_text())["completed"] == 2


def test_manifest_records_the_scheduled_and_the_actual_start(tmp_path: Path):
    """A scheduled launch: its service's launch.json gives the actual start and the unit; by hand: the first write."""
    git_checkout(tmp_path / "checkout", dirty=False)
    by_hand = tmp_path / "by-hand"
    args = profile_args(by_hand, checkout=str(tmp_path / "checkout"), start_at="2026-12-02T06:00:00Z")
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(args)}) == 0
    m = json.loads((by_hand / "run" / "run_manifest.json").read_text())
    assert (m["scheduled_start"], m["actual_start"], m["launched_by"]) == ("2026-12-02T06:00:00Z", m["written"], None)

    rd = RunDir(tmp_path / "run")
    rd.path.mkdir()
    rd.launch_record.write_text(
        json.dumps(
            {
                "stack": "cohort-w8",
                "unit": "agensh-launch-cohort-w8.service",
                "host": "h",
                "scheduled": "2026-12-02T06:00:00Z",
                "started": "2026-12-02T06:00:01Z",
            }
        )
    )
    args = profile_args(tmp_path, start_at="2026-12-02T06:00:00Z")
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(args)}) == 0
    m = json.loads(rd.manifest.read_text())
    assert (m["scheduled_start"], m["actual_start"], m["launched_by"]) == (
        "2026-12-02T06:00:00Z",
        "2026-12-02T06:00:01Z",
        "agensh-launch-cohort-w8.service",
    )


def test_dirty_checkout_is_refused_without_the_escape(tmp_path: Path):
    git_checkout(tmp_path / "checkout", dirty=True)
    args = profile_args(tmp_path)
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(args)}) == 1
    assert not (tmp_path / "run" / "run_manifest.json").exists()
    args["profile"]["allow_dirty"] = True
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(args)}) == 0
    assert json.loads((tmp_path / "run" / "run_manifest.json").read_text())["checkout"]["dirty"] is True


def test_failed_task_step_leaves_its_marker(tmp_path: Path):
    rd = RunDir(tmp_path)

    def boom() -> Value:
        raise ConnectionError("mattermost unreachable")

    assert run_step(steps.KICKOFF, rd, "t", inputs(tmp_path), boom, failure_marker="RUN_FAILED") == 1
    assert "kickoff: ConnectionError: mattermost unreachable" in rd.marker("t", "RUN_FAILED").read_text()
    assert rd.markers("t") == ["RUN_FAILED"]
    assert json.loads(rd.receipt("kickoff", "t").read_text())["status"] == "failed"
    assert run_step(steps.KICKOFF, rd, "t", inputs(tmp_path), lambda: Value(value=1), failure_marker="RUN_FAILED") == 0
    assert rd.markers("t") == []  # the successful retry withdrew its own marker


def test_a_leftover_run_of_a_step_finishes_first_and_the_new_run_replays(tmp_path: Path):
    """An `up` killed mid-step leaves its step programs running (they outlive the engine); the resumed `up`'s run
    of the same step waits for it and then replays its receipt instead of working a second time."""
    code = (
        "import sys, time; from pathlib import Path; "
        "from model.rundir import RunDir; "
        "from model.step_inputs import TaskInputs; from scripts.lib.step import run_step; from model import steps; "
        "from tests.scripts.test_records import Value; "
        f"sys.exit(run_step(steps.WAKE, RunDir(Path({str(tmp_path)!r})), 't', "
        f"TaskInputs(run_dir={str(tmp_path)!r}, task_id='t'), "
        "lambda: (time.sleep(3), Value(value=7))[1]))"
    )
    leftover = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    lock = RunDir(tmp_path).lock(steps.WAKE.name, "t")
    for _ in range(100):
        if lock.exists() and "pid" in lock.read_text():
            break
        time.sleep(0.1)
    calls = []
    rc = run_step(steps.WAKE, RunDir(tmp_path), "t", inputs(tmp_path), lambda: calls.append(1) or Value(value=8))
    assert leftover.wait() == 0 and rc == 0 and calls == []
    assert json.loads(RunDir(tmp_path).receipt(steps.WAKE.name, "t").read_text())["result"] == {"value": 7}
