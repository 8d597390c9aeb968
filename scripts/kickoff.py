"""kickoff: after the wake ramp, post the task message (from the checkout's prompts) to the team channel.

The ramp started when the team's containers came up (`ramp_start`, recorded on first run so a resumed `up`
keeps it); the kickoff waits until `ramp_start + kickoff_s` (last wake + settle + at least 60 s). The receipt
records the kickoff time and the task's deadline, `ramp_start + budget_s`: the ramp counts against the budget.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from string import Template
from typing import Mapping

from components.records import KickoffResult
from components.rundir import RUN_FAILED, RunDir
from components.step_inputs import KickoffInputs
from scripts.chat import post_to_team
from scripts.step import iso, step_main, wait_until, write_atomic


def ramp_start(rd: RunDir, task_id: str) -> float:
    """When the task's ramp started: recorded the first time, read back by every later run."""
    checkpoint = rd.ramp(task_id)
    if checkpoint.exists():
        return float(json.loads(checkpoint.read_text())["ramp_start"])
    start = time.time()
    write_atomic(checkpoint, {"ramp_start": start})
    return start


def kickoff(a: KickoffInputs, password: str) -> KickoffResult:
    start = ramp_start(RunDir(Path(a.run_dir)), a.task_id)
    deadline = start + a.budget_s
    wait_until(start + a.kickoff_s, "kickoff")
    message = Template(Path(a.prompt).read_text()).safe_substitute(task_id=a.task_id, deadline=iso(deadline))
    post = post_to_team(a.mattermost_url, a.mattermost_user, password, message)
    return KickoffResult(ramp_start=iso(start), ramp_start_epoch=start, kickoff_at=iso(time.time()),
                         deadline=iso(deadline), deadline_epoch=deadline, post_id=post["id"])


def main(env: Mapping[str, str] = os.environ) -> int:
    return step_main("kickoff", KickoffInputs, env, kickoff, "AGENSH_MATTERMOST_PASSWORD", RUN_FAILED)


if __name__ == "__main__":
    sys.exit(main())
