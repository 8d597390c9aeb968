"""The completeness rule and the scores of ProgramBench's own helpers: what the score step writes and what the gate
and the report judge runs by (a task whose score step has not run yet is judged by the same rule)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from programbench.constants import TASKS_DIR
from programbench.submission import score_instance
from programbench.utils.load_data import get_active_branches, load_all_instances

from model import steps
from model.records import ExportResult, Score, ShutdownResult
from model.rundir import EXPORT_FAILED, RunDir
from scripts.lib.step import StepFailed

COMPILE_STEP = "compile"
PROGRAMBENCH = Path(sys.executable).parent / "programbench"  # the CLI installed beside this interpreter
BLOB_DIR_ENV = "PROGRAMBENCH_BLOB_DIR"  # when set, programbench reads test blobs there and never its blob store


@functools.cache
def instances() -> dict[str, dict[str, Any]]:
    """Every ProgramBench instance (with its tests.json) by id, as the scoring helpers expect them (read once: the
    gate and the report score many tasks)."""
    return {row["instance_id"]: row for row in load_all_instances(TASKS_DIR)}


def instance(task_id: str) -> dict[str, Any]:
    if task_id not in instances():
        raise StepFailed(f"{task_id} is not a ProgramBench task")
    return instances()[task_id]


def blob_paths(root: Path, task_id: str) -> list[Path]:
    """The test blobs `programbench eval` reads for a task: one per test branch it does not ignore, at
    `<root>/<task>/tests/<branch>.tar.gz` (the layout of ProgramBench's blob store and of PROGRAMBENCH_BLOB_DIR)."""
    branches = sorted(get_active_branches(instance(task_id)))
    return [root / task_id / "tests" / f"{branch}.tar.gz" for branch in branches]


def blob_env(blob_dir: str | None, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment `programbench` reads a task's test blobs under: the profile's local directory, or without one
    ProgramBench's blob store whatever the operator's shell says, so the preflight checks where the evaluation reads."""
    env = {k: v for k, v in base.items() if k != BLOB_DIR_ENV}
    if blob_dir:
        env[BLOB_DIR_ENV] = str(Path(blob_dir).expanduser())
    return env


def problems_of(rd: RunDir, task_id: str, data: dict[str, Any] | None) -> list[str]:
    export = steps.result_of(rd, steps.EXPORT, task_id, ExportResult)
    # an export recovered from the preserved repository (docs/requirements.md R35) is a complete submission
    recovered = export is not None and export.recovered_from is not None
    out = [f"{m} marker present" for m in rd.markers(task_id) if not (m == EXPORT_FAILED and recovered)]
    if data is None:
        return out + ["no eval JSON: the task was not evaluated"]
    if data.get("error_code"):
        failed = [e["step"] for e in data.get("log", []) if e.get("returncode") not in (0, None)]
        what = "compile failure" if COMPILE_STEP in failed else "evaluator error"
        out.append(
            f"{what}: error_code={data['error_code']}"
            + (f" ({data.get('error_details')})" if data.get("error_details") else "")
        )
    if data.get("test_branch_errors"):
        out.append(f"test_branch_errors: {json.dumps(data['test_branch_errors'], sort_keys=True)}")
    shutdown = steps.result_of(rd, steps.SHUTDOWN, task_id, ShutdownResult)
    if shutdown is not None and not shutdown.archives_complete:
        out.append("shutdown archives incomplete")
    return out


def assess(rd: RunDir, task_id: str) -> Score:
    """The task's score record from the run directory, computed and not written: the score step writes it, the gate
    and the report read runs with it (a task whose score step has not run yet is judged by the same rule)."""
    eval_json = rd.eval_json(task_id)
    data = json.loads(eval_json.read_text()) if eval_json.exists() else None
    problems = problems_of(rd, task_id, data)
    raw = score_instance(eval_json, instance(task_id)) if data is not None and not data.get("error_code") else None
    export = steps.result_of(rd, steps.EXPORT, task_id, ExportResult)
    return Score(
        task_id=task_id,
        score=raw if not problems else None,
        raw_score=raw,
        complete=not problems,
        problems=problems,
        eval_json=str(eval_json),
        export_recovered_from=export.recovered_from if export else None,
    )
