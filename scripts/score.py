"""score: the task's score from ProgramBench's own helpers, refused as incomplete when anything is off.

A score counts only when no RUN_FAILED / EXPORT_FAILED marker, no evaluator `error_code`, no
`test_branch_errors` and no incomplete shutdown archive stand against it; otherwise `score` is null and
`problems` says which (REQUIREMENTS 37). The eval JSON is only read, never changed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping

from programbench.constants import TASKS_DIR
from programbench.submission import score_instance
from programbench.utils.load_data import load_all_instances

from scripts.records import EXPORT_FAILED, RunDir, StepFailed, read_json, run_step, write_atomic

COMPILE_STEP = "compile"


def instance(task_id: str) -> dict[str, Any]:
    """The task's ProgramBench instance (with its tests.json) as the scoring helpers expect it."""
    for row in load_all_instances(TASKS_DIR):
        if row["instance_id"] == task_id:
            return row
    raise StepFailed(f"{task_id} is not a ProgramBench task")


def problems_of(rd: RunDir, task_id: str, data: dict[str, Any] | None) -> list[str]:
    export = read_json(rd.receipt_path("export", task_id)) or {}
    recovered = export.get("status") == "ok" and export.get("recovered_from")
    # an export recovered from the preserved repository (REQUIREMENTS 35) is a complete submission
    out = [f"{m} marker present" for m in rd.markers(task_id) if not (m == EXPORT_FAILED and recovered)]
    if data is None:
        return out + ["no eval JSON: the task was not evaluated"]
    if data.get("error_code"):
        failed = [e["step"] for e in data.get("log", []) if e.get("returncode") not in (0, None)]
        what = "compile failure" if COMPILE_STEP in failed else "evaluator error"
        out.append(f"{what}: error_code={data['error_code']}" + (f" ({data.get('error_details')})" if data.get("error_details") else ""))
    if data.get("test_branch_errors"):
        out.append(f"test_branch_errors: {json.dumps(data['test_branch_errors'], sort_keys=True)}")
    shutdown = read_json(rd.receipt_path("shutdown", task_id))
    if shutdown and not shutdown.get("archives_complete", True):
        out.append("shutdown archives incomplete")
    return out


def score(run_dir: Path, task_id: str) -> dict[str, Any]:
    rd = RunDir(run_dir)
    eval_json = rd.task(task_id) / f"{task_id}.eval.json"
    data = read_json(eval_json)
    problems = problems_of(rd, task_id, data)
    raw = score_instance(eval_json, instance(task_id)) if data is not None and not data.get("error_code") else None
    export = read_json(rd.receipt_path("export", task_id)) or {}
    result = {"task_id": task_id, "score": raw if not problems else None, "raw_score": raw,
              "complete": not problems, "problems": problems, "eval_json": str(eval_json),
              "export_recovered_from": export.get("recovered_from")}
    write_atomic(rd.task(task_id) / "score.json", result)
    rd.append_result({"task_id": task_id, "status": "scored" if not problems else "incomplete", "score": result["score"],
                      "problems": problems})
    return result


def main(env: Mapping[str, str] = os.environ) -> int:
    args = json.loads(env["AGENSH_INPUT"])
    run_dir, task_id = Path(args["run_dir"]), args["task_id"]
    eval_json = RunDir(run_dir).task(task_id) / f"{task_id}.eval.json"
    inputs = {**args, "eval_mtime": eval_json.stat().st_mtime if eval_json.exists() else None}
    return run_step("score", run_dir, task_id, inputs, lambda: score(run_dir, task_id))


if __name__ == "__main__":
    sys.exit(main())
