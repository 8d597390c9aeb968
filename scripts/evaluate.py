"""evaluate: the official `programbench eval` on one task's submission, through the Docker shim.

`--docker-cpus` never exceeds the host's CPUs; the shim caps each evaluation container's memory and appends
the profile's pytest options. `programbench eval` exits 0 even when tasks fail, so the step checks that the
eval JSON exists. An existing eval JSON is copied aside (`<task>.eval.<n>.json`) before a re-evaluation, which
ProgramBench 1.2.5 does on the unchanged submission, retrying only incomplete branches.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from scripts.records import RunDir, StepFailed, progress, run_step

SHIM = Path(__file__).resolve().parent / "pbench_docker_shim.sh"
PROGRAMBENCH = Path(sys.executable).parent / "programbench"


def docker_cpus(requested: int | None) -> int:
    host = os.cpu_count() or 1
    return max(1, min(requested or 10, host))


def evaluate(a: dict[str, Any]) -> dict[str, Any]:
    rd = RunDir(Path(a["run_dir"]))
    task = a["task_id"]
    tdir = rd.task(task)
    submission = tdir / "submission.tar.gz"
    if not submission.exists():
        raise StepFailed(f"no submission at {submission}; the export did not produce one")
    eval_json = tdir / f"{task}.eval.json"
    if eval_json.exists():
        n = len(list(tdir.glob(f"{task}.eval.*.json"))) + 1
        shutil.copy2(eval_json, tdir / f"{task}.eval.{n}.json")
    cpus = docker_cpus(a.get("docker_cpus"))
    cmd = [str(PROGRAMBENCH), "eval", str(rd.path), "--filter", f"^{re.escape(task)}$", "--docker-cpus", str(cpus),
           "--image-tag", a.get("image_tag", "task_cleanroom_v6")]
    env = dict(os.environ, PROGRAMBENCH_DOCKER_EXECUTABLE=str(SHIM), PROGRAMBENCH_DOCKER_ORG=a.get("docker_org", "programbench"),
               PBENCH_EVAL_PYTEST_ADDOPTS=a.get("pytest_addopts", ""), PBENCH_EVAL_MEMORY=f"{a.get('memory_gib', 16)}g",
               PBENCH_EVAL_NETWORK="none", PBENCH_EVAL_LABEL=f"agensh.profile={a.get('profile', '')}")
    if a.get("blob_dir"):
        env["PROGRAMBENCH_BLOB_DIR"] = str(Path(a["blob_dir"]).expanduser())
    progress(f"evaluate: {' '.join(cmd)}")
    started = time.monotonic()
    with open(tdir / "evaluate.log", "a") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if not eval_json.exists():
        raise StepFailed(f"programbench eval wrote no {eval_json.name} (exit {rc}); see {tdir / 'evaluate.log'}")
    data = json.loads(eval_json.read_text())
    return {"eval_json": str(eval_json), "exit_code": rc, "error_code": data.get("error_code"),
            "test_branch_errors": sorted(data.get("test_branch_errors") or {}), "docker_cpus": cpus,
            "seconds": round(time.monotonic() - started, 1)}


def main(env: Mapping[str, str] = os.environ) -> int:
    a = json.loads(env["AGENSH_INPUT"])
    sub = RunDir(Path(a["run_dir"])).task(a["task_id"]) / "submission.tar.gz"
    inputs = {**a, "submission_mtime": sub.stat().st_mtime if sub.exists() else None}
    return run_step("evaluate", Path(a["run_dir"]), a["task_id"], inputs, lambda: evaluate(a))


if __name__ == "__main__":
    sys.exit(main())
