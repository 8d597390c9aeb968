"""score against ProgramBench's own helpers and its bundled eval results (no Docker needed here)."""

from __future__ import annotations

import json
from pathlib import Path

import programbench
import pytest

from model.rundir import RunDir
from scripts import score
from scripts.lib.step import write_marker

TASK = "testorg__calculator.abc1234"
BUNDLED = Path(programbench.__file__).parent / "data" / "test_runs"


def run_with(tmp_path: Path, kind: str, **patch) -> Path:
    run = tmp_path / "run"
    (run / TASK).mkdir(parents=True)
    data = json.loads((BUNDLED / kind / TASK / f"{TASK}.eval.json").read_text())
    data.update(patch)
    (run / TASK / f"{TASK}.eval.json").write_text(json.dumps(data))
    return run


def scored(run: Path) -> dict:
    assert score.main([], {"AGENSH_INPUT": json.dumps({"run_dir": str(run), "task_id": TASK, "attempt": 1})}) == 0
    return json.loads((run / TASK / "score.json").read_text())


def test_stock_identities_score_half(tmp_path: Path):
    run = run_with(tmp_path, "correct")
    original = (run / TASK / f"{TASK}.eval.json").read_bytes()
    s = scored(run)
    assert s["complete"] and s["score"] == 0.5  # JUnit names do not match tests.json without --rootdir=eval
    assert (run / TASK / f"{TASK}.eval.json").read_bytes() == original  # the eval JSON is never changed
    assert json.loads((run / "result_index.jsonl").read_text().splitlines()[-1])["score"] == 0.5


@pytest.mark.parametrize(
    "patch,problem",
    [
        ({"error_code": "compile_failed"}, "error_code=compile_failed"),
        (
            {"test_branch_errors": {"33128f6b8600": [{"error_code": "container_crashed", "error_details": "oom"}]}},
            "test_branch_errors",
        ),
    ],
)
def test_incomplete_results_are_never_a_score(tmp_path: Path, patch, problem):
    s = scored(run_with(tmp_path, "correct", **patch))
    assert s["score"] is None and not s["complete"]
    assert any(problem in p for p in s["problems"])


def test_markers_refuse_the_score(tmp_path: Path):
    run = run_with(tmp_path, "correct")
    write_marker(RunDir(run), TASK, "EXPORT_FAILED", "git clone failed")
    s = scored(run)
    assert s["score"] is None and s["raw_score"] == 0.5 and "EXPORT_FAILED marker present" in s["problems"]


def test_missing_eval_is_reported(tmp_path: Path):
    run = tmp_path / "run"
    (run / TASK).mkdir(parents=True)
    s = scored(run)
    assert s["score"] is None and "not evaluated" in s["problems"][0]


def test_incorrect_program_scores_its_fraction(tmp_path: Path):
    s = scored(run_with(tmp_path, "incorrect"))
    assert s["complete"] and 0 <= s["score"] < 0.5


def test_assess_judges_without_writing(tmp_path: Path):
    run = run_with(
        tmp_path, "correct", test_branch_errors={"b": [{"error_code": "container_crashed", "error_details": "oom"}]}
    )
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    judged = score.assess(RunDir(run), TASK)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before  # nothing written
    assert judged.score is None and judged.raw_score == 0.5 and not judged.complete
    assert judged.model_dump(mode="json") == scored(run)  # the score step writes what assess judged
