"""score: the task's score from ProgramBench's own helpers, refused as incomplete when anything is off.

A score counts only when no RUN_FAILED / EXPORT_FAILED / DATA_ROOT_FULL marker, no evaluator `error_code`, no
`test_branch_errors` and no incomplete shutdown archive stand against it; otherwise `score` is null and
`problems` says which (docs/requirements.md R37). The eval JSON is only read, never changed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from model import steps
from model.records import IndexRow, Score
from model.rundir import RunDir
from model.step_inputs import ScoreInputs
from scripts.lib.scoring import assess
from scripts.lib.step import append_result, load_inputs, mode_of, now, run_step, write_atomic


def score(rd: RunDir, task_id: str) -> Score:
    result = assess(rd, task_id)
    write_atomic(rd.score(task_id), result)
    append_result(
        rd,
        IndexRow(
            at=now(),
            task_id=task_id,
            status="scored" if result.complete else "incomplete",
            score=result.score,
            problems=result.problems,
        ),
    )
    return result


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("score", argv, steps.SCORE.args)
    a = load_inputs(ScoreInputs, env)
    rd = RunDir(Path(a.run_dir))
    return run_step(
        steps.SCORE, rd, a.task_id, a, lambda: score(rd, a.task_id), reads={"eval": rd.eval_json(a.task_id)}
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
