"""reminders: deadline reminders posted to the team channel after the ramp (docs/requirements.md R30).

Runs beside the export wait: for each `minutes` before the task's deadline (recorded by the kickoff) it waits and
posts "N minutes left"; a reminder whose time has already passed (the ramp can overrun the budget, or an `up`
resumed late) is skipped and recorded as skipped.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from model import steps
from model.records import KickoffResult, RemindersResult
from model.rundir import RunDir
from model.step_inputs import RemindersInputs
from scripts.lib.chat import post_to_team
from scripts.lib.step import StepFailed, iso, mode_of, step_main, wait_until


def reminders(a: RemindersInputs, password: str) -> RemindersResult:
    kickoff = steps.result_of(RunDir(Path(a.run_dir)), steps.KICKOFF, a.task_id, KickoffResult)
    if kickoff is None:
        raise StepFailed("no kickoff receipt: the task never started")
    deadline = kickoff.deadline_epoch
    posted, skipped = [], []
    for minutes in sorted(a.minutes, reverse=True):
        at = deadline - 60 * minutes
        if at < time.time():
            skipped.append(minutes)
            continue
        wait_until(at, f"reminder ({minutes} min left)")
        post_to_team(
            a.mattermost_url,
            a.mattermost_user,
            password,
            f"Reminder: {minutes} minutes left for {a.task_id} (deadline {iso(deadline)}). Commit and merge your work.",
        )
        posted.append(minutes)
    return RemindersResult(posted=posted, skipped=skipped, deadline=iso(deadline))


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("reminders", argv, steps.REMINDERS.args)
    return step_main(steps.REMINDERS, env, reminders, "AGENSH_MATTERMOST_PASSWORD")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
