"""kickoff: after the wake ramp, post the task message (from the checkout's prompts) to the team channel.

The ramp started when the team's containers came up (`ramp_start`, recorded on first run so a resumed `up`
keeps it); the kickoff waits until `ramp_start + kickoff_s` (last wake + settle + at least 60 s). The receipt
records the kickoff time and the task's deadline, `ramp_start + budget_s`: the ramp counts against the budget.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from string import Template
from typing import Any, Mapping

from scripts.http import request
from scripts.records import RUN_FAILED, RunDir, progress, read_json, step_main, write_atomic

TEAM, CHANNEL = "pbench", "town-square"


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def wait_until(t: float, what: str) -> None:
    while (left := t - time.time()) > 0:
        progress(f"{what} in {left:.0f} s (at {iso(t)})")
        time.sleep(min(left, 30))


def post_to_team(url: str, user: str, password: str, message: str) -> dict[str, Any]:
    """Post to the team channel as the administrator (Mattermost REST API: login, channel, post)."""
    mm = url.rstrip("/")
    _, _, headers = request("POST", f"{mm}/api/v4/users/login", {"login_id": user, "password": password})
    token = headers.get("Token") or headers.get("token")
    _, channel, _ = request("GET", f"{mm}/api/v4/teams/name/{TEAM}/channels/name/{CHANNEL}", token=token)
    _, post, _ = request("POST", f"{mm}/api/v4/posts", {"channel_id": channel["id"], "message": message}, token=token)
    return post


def kickoff(a: dict[str, Any], password: str) -> dict[str, Any]:
    rd = RunDir(Path(a["run_dir"]))
    checkpoint = rd.task(a["task_id"]) / "ramp.json"
    ramp = read_json(checkpoint)
    if ramp is None:  # first run: the team has just come up
        ramp = {"ramp_start": time.time()}
        write_atomic(checkpoint, ramp)
    start = ramp["ramp_start"]
    deadline = start + a["budget_s"]
    wait_until(start + a["kickoff_s"], "kickoff")
    message = Template(Path(a["prompt"]).read_text()).safe_substitute(task_id=a["task_id"], deadline=iso(deadline))
    post = post_to_team(a["mattermost_url"], a["mattermost_user"], password, message)
    return {"ramp_start": iso(start), "ramp_start_epoch": start, "kickoff_at": iso(time.time()),
            "deadline": iso(deadline), "deadline_epoch": deadline, "post_id": post["id"]}


def main(env: Mapping[str, str] = os.environ) -> int:
    return step_main("kickoff", env, kickoff, "AGENSH_MATTERMOST_PASSWORD", RUN_FAILED)


if __name__ == "__main__":
    sys.exit(main())
