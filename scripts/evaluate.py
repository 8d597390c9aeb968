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
from collections.abc import Mapping
from pathlib import Path

from model import contract, steps
from model.project import SCRIPTS
from model.records import EvaluateResult
from model.rundir import RunDir
from model.step_inputs import EvaluateInputs
from scripts.lib.scoring import PROGRAMBENCH, blob_env
from scripts.lib.step import StepFailed, load_inputs, mode_of, progress, run_step

SHIM = SCRIPTS / "host" / "pbench_docker_shim.sh"


def docker_cpus(requested: int | None) -> int:
    host = os.cpu_count() or 1
    return max(1, min(requested or 10, host))


def evaluate(a: EvaluateInputs) -> EvaluateResult:
    rd = RunDir(Path(a.run_dir))
    task = a.task_id
    if not rd.submission(task).exists():
        raise StepFailed(f"no submission at {rd.submission(task)}; the export did not produce one")
    eval_json = rd.eval_json(task)
    if eval_json.exists():
        shutil.copy2(eval_json, rd.eval_attempt(task, len(rd.earlier_evals(task)) + 1))
    cpus = docker_cpus(a.docker_cpus)
    cmd = [
        str(PROGRAMBENCH),
        "eval",
        str(rd.path),
        "--filter",
        f"^{re.escape(task)}$",
        "--docker-cpus",
        str(cpus),
        "--image-tag",
        contract.CLEANROOM_TAG,
    ]
    env = dict(
        blob_env(a.blob_dir),
        PROGRAMBENCH_DOCKER_EXECUTABLE=str(SHIM),
        PROGRAMBENCH_DOCKER_ORG=a.docker_org,
        PBENCH_EVAL_PYTEST_ADDOPTS=a.pytest_addopts,
        PBENCH_EVAL_MEMORY=f"{a.memory_gib}g",
        PBENCH_EVAL_NETWORK="none",
        PBENCH_EVAL_LABEL=f"{contract.PROFILE_LABEL}={a.profile}",
    )
    progress(f"evaluate: programbench eval on {cpus} CPUs (log: {rd.evaluate_log(task).name})")
    started = time.monotonic()
    with open(rd.evaluate_log(task), "a") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if not eval_json.exists():
        raise StepFailed(f"programbench eval wrote no {eval_json.name} (exit {rc}); see {rd.evaluate_log(task)}")
    data = json.loads(eval_json.read_text())
    return EvaluateResult(
        eval_json=str(eval_json),
        exit_code=rc,
        error_code=data.get("error_code"),
        test_branch_errors=sorted(data.get("test_branch_errors") or {}),
        docker_cpus=cpus,
        seconds=round(time.monotonic() - started, 1),
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("evaluate", argv, steps.EVALUATE.args)
    a = load_inputs(EvaluateInputs, env)
    rd = RunDir(Path(a.run_dir))
    return run_step(
        steps.EVALUATE, rd, a.task_id, a, lambda: evaluate(a), reads={"submission": rd.submission(a.task_id)}
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
