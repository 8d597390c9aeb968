"""evaluate + score against the real programbench 1.2.5 and real Docker, offline, on the calculator fixture."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from scripts import evaluate, score
from scripts.setup import calculator

TASK = calculator.TASK


@pytest.fixture(scope="module")
def cleanroom(base_image: str, tmp_path_factory: pytest.TempPathFactory):
    org = f"agensh-test-{uuid.uuid4().hex[:6]}"
    image = calculator.build_cleanroom(org, {"agensh.test": org})
    blobs = calculator.blob_dir(tmp_path_factory.mktemp("blobs"))
    yield org, blobs
    subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=agensh.profile={org}"], capture_output=True, text=True
    )
    assert not left.stdout.strip(), "evaluation containers left behind"


def eval_args(run: Path, org: str, blobs: Path, addopts: str, attempt: int = 1) -> dict:
    return {
        "run_dir": str(run),
        "task_id": TASK,
        "docker_org": org,
        "blob_dir": str(blobs),
        "pytest_addopts": addopts,
        "memory_gib": 2,
        "profile": org,
        "docker_cpus": None,
        "attempt": attempt,
    }


def run_eval(tmp_path: Path, org: str, blobs: Path, files: dict[str, str], addopts: str = "--rootdir=eval") -> dict:
    run = tmp_path / "run"
    calculator.submission(files, run / TASK / "submission.tar.gz")
    evaluate.main([], {"AGENSH_INPUT": json.dumps(eval_args(run, org, blobs, addopts))})
    receipt = json.loads((run / TASK / "receipts" / "evaluate.json").read_text())
    receipt = {**receipt, **(receipt["result"] or {})}
    assert score.main([], {"AGENSH_INPUT": json.dumps({"run_dir": str(run), "task_id": TASK, "attempt": 1})}) == 0
    return {"receipt": receipt, "score": json.loads((run / TASK / "score.json").read_text()), "run": run}


def test_correct_submission_scores_one(cleanroom, tmp_path: Path):
    out = run_eval(tmp_path, *cleanroom, calculator.SOLUTION)
    assert out["receipt"]["status"] == "ok" and out["receipt"]["docker_cpus"] <= (__import__("os").cpu_count() or 1)
    assert out["score"]["complete"] and out["score"]["score"] == 1.0


def test_stock_test_identities_score_half(cleanroom, tmp_path: Path):
    out = run_eval(tmp_path, *cleanroom, calculator.SOLUTION, addopts="")
    assert out["score"]["score"] == 0.5


def test_compile_failure_is_reported_not_scored(cleanroom, tmp_path: Path):
    broken = dict(calculator.SOLUTION, **{"compile.sh": "#!/bin/sh\necho cannot build >&2\nexit 1\n"})
    out = run_eval(tmp_path, *cleanroom, broken)
    assert out["receipt"]["error_code"] == "compile_failed"
    assert out["score"]["score"] is None and not out["score"]["complete"]
    assert any(p.startswith("compile failure: error_code=compile_failed") for p in out["score"]["problems"])


def test_branch_error_is_surfaced(cleanroom, tmp_path: Path):
    poisoned = dict(calculator.SOLUTION, **{"pytest.ini": "[pytest]\naddopts = --no-such-option\n"})
    out = run_eval(tmp_path, *cleanroom, poisoned)
    assert out["receipt"]["test_branch_errors"] == ["33128f6b8600"]
    assert out["score"]["score"] is None
    assert any("results_read_failed" in p for p in out["score"]["problems"])


def test_reevaluation_keeps_the_original(cleanroom, tmp_path: Path):
    out = run_eval(tmp_path, *cleanroom, calculator.SOLUTION)
    task_dir = out["run"] / TASK
    original = (task_dir / f"{TASK}.eval.json").read_bytes()
    args = eval_args(out["run"], cleanroom[0], cleanroom[1], "--rootdir=eval", attempt=2)
    assert evaluate.main([], {"AGENSH_INPUT": json.dumps(args)}) == 0
    assert (task_dir / f"{TASK}.eval.1.json").read_bytes() == original
