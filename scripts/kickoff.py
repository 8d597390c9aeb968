"""kickoff: after the wake ramp, post the task message (from the checkout's prompts) to the team channel.

The ramp started when the wake step started the first worker (its receipt); the kickoff waits until
`ramp_start + kickoff_s` (last wake + settle + at least 60 s). The receipt records the kickoff time and the task's
deadline, `ramp_start + budget_s`: the ramp counts against the budget. Before posting, every worker's Copilot CLI
session must have reported its version (`agentInfo.version`), which must be the profile's pin: a CLI that updated
itself, or an image built with another, is refused here, before any agent starts work.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from string import Template

from model import steps
from model.records import KickoffResult, WakeResult
from model.rundir import RUN_FAILED, RunDir
from model.step_inputs import KickoffInputs
from scripts.lib.activity import reader, wait_for_sessions
from scripts.lib.chat import post_to_team
from scripts.lib.step import StepFailed, iso, mode_of, step_main, wait_until

SESSION_WAIT_S = 180  # a worker's CLI starts in seconds; this covers a slow pull of its state on a busy host


def kickoff(a: KickoffInputs, password: str) -> KickoffResult:
    woke = steps.result_of(RunDir(Path(a.run_dir)), steps.WAKE, a.task_id, WakeResult)
    if woke is None:
        raise StepFailed("no wake receipt: the team was never woken")
    start = woke.ramp_start_epoch
    deadline = start + a.budget_s
    wait_until(start + a.kickoff_s, "kickoff")
    read = reader(a.convention)
    sessions = wait_for_sessions(read, a.workers, SESSION_WAIT_S)
    missing = sorted(agent for agent, version in sessions.items() if not version)
    if missing:
        raise StepFailed(
            f"no Copilot CLI session reported by {', '.join(missing)} within {SESSION_WAIT_S} s in the "
            f"{read.report.name} activity report, read from {read.report.where} (see also `docker logs` of its worker)"
        )
    wrong = {agent: v for agent, v in sessions.items() if v != a.copilot_version}
    if wrong:
        raise StepFailed(
            f"sessions run another Copilot CLI than the profile's {a.copilot_version}: "
            + ", ".join(f"{agent} {v}" for agent, v in sorted(wrong.items()))
        )
    message = Template(Path(a.prompt).read_text()).safe_substitute(task_id=a.task_id, deadline=iso(deadline))
    post = post_to_team(a.mattermost_url, a.mattermost_user, password, message)
    return KickoffResult(
        ramp_start=iso(start),
        ramp_start_epoch=start,
        kickoff_at=iso(time.time()),
        deadline=iso(deadline),
        deadline_epoch=deadline,
        post_id=post["id"],
        sessions={agent: str(v) for agent, v in sessions.items()},
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("kickoff", argv, steps.KICKOFF.args)
    return step_main(steps.KICKOFF, env, kickoff, "AGENSH_MATTERMOST_PASSWORD", RUN_FAILED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
