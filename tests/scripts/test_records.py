"""Run records: the append-only index survives a crash, readers dedup, receipts make steps idempotent,
the manifest is written first and finished with counts over the requested tasks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import manifest
from scripts.records import RunDir, StepFailed, read_index, run_step

ROOT = Path(__file__).resolve().parents[2]


def test_index_survives_a_crash_between_rows(tmp_path: Path):
    rd = RunDir(tmp_path)
    code = ("import os, sys; sys.path.insert(0, %r); from pathlib import Path; from scripts.records import RunDir; rd = RunDir(Path(%r)); "
            "rd.append_result({'task_id': 'a', 'status': 'scored', 'score': 0.5}); "
            "open(rd.index, 'a').write('{\"task_id\": \"b\", \"sta'); os._exit(9)") % (str(ROOT), str(tmp_path))
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    rd.append_result({"task_id": "a", "status": "scored", "score": 1.0})
    rows = read_index(rd.index)
    assert rows == {"a": rows["a"]} and rows["a"]["score"] == 1.0  # torn row ignored, last row wins
    assert len(rd.index.read_text().splitlines()) == 3  # nothing was rewritten; the torn line was closed
    assert read_index(rd.task("a") / "result_index.jsonl")["a"]["score"] == 1.0


def test_receipt_makes_a_step_idempotent(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    calls = []

    def body():
        calls.append(1)
        return {"value": 42}

    assert run_step("demo", tmp_path, "t", {"x": 1}, body) == 0
    first = capsys.readouterr().out
    assert run_step("demo", tmp_path, "t", {"x": 1}, body) == 0
    assert capsys.readouterr().out == first and len(calls) == 1
    assert run_step("demo", tmp_path, "t", {"x": 2}, body) == 0 and len(calls) == 2  # new inputs run again


def test_failed_step_is_recorded_and_retried(tmp_path: Path):
    def fails():
        raise StepFailed("gateway unreachable", url="http://x")

    assert run_step("demo", tmp_path, None, {}, fails) == 1
    receipt = json.loads((tmp_path / "receipts" / "demo.json").read_text())
    assert receipt["status"] == "failed" and receipt["url"] == "http://x"
    assert run_step("demo", tmp_path, None, {}, lambda: {}) == 0


def profile_args(tmp_path: Path, **over) -> dict:
    args = {"run_dir": str(tmp_path / "run"), "project_dir": str(ROOT), "checkout": str(tmp_path / "checkout"),
            "profile": {"tasks": ["a__x.1", "b__y.2", "c__z.3"], "allow_dirty": False}, "profile_digest": "d"}
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
    rd = RunDir(tmp_path / "run")
    rd.append_result({"task_id": "a__x.1", "status": "scored", "score": 1.0})
    rd.append_result({"task_id": "a__x.1", "status": "scored", "score": 0.5})
    rd.append_result({"task_id": "b__y.2", "status": "incomplete", "score": None})
    assert manifest.main(["finish"], env) == 0
    m = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    assert (m["completed"], m["failed"]) == (1, 2) and m["scores"] == {"a__x.1": 0.5}
    assert m["headline_requested"]["mean_score"] == round(0.5 / 3, 4)
    assert m["headline_benchmark"]["n_instances_total"] == 200


def test_dirty_checkout_is_refused_without_the_escape(tmp_path: Path):
    git_checkout(tmp_path / "checkout", dirty=True)
    args = profile_args(tmp_path)
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(args)}) == 1
    assert not (tmp_path / "run" / "run_manifest.json").exists()
    args["profile"]["allow_dirty"] = True
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(args)}) == 0
    assert json.loads((tmp_path / "run" / "run_manifest.json").read_text())["checkout"]["dirty"] is True


def test_failed_task_step_leaves_its_marker(tmp_path: Path):
    def boom():
        raise ConnectionError("mattermost unreachable")

    assert run_step("kickoff", tmp_path, "t", {}, boom, failure_marker="RUN_FAILED") == 1
    assert "kickoff: ConnectionError: mattermost unreachable" in (tmp_path / "t" / "RUN_FAILED").read_text()
    assert RunDir(tmp_path).markers("t") == ["RUN_FAILED"]
    assert json.loads((tmp_path / "t" / "receipts" / "kickoff.json").read_text())["status"] == "failed"
    assert run_step("kickoff", tmp_path, "t", {}, lambda: {"ok": True}, failure_marker="RUN_FAILED") == 0
    assert RunDir(tmp_path).markers("t") == []  # the successful retry withdrew its own marker
