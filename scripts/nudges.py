"""nudges: the idle watchdog beside the export wait (docs/requirements.md R30): every `idle_check_s` it looks at each
worker's last activity and posts a nudge to the team channel for an agent idle for `idle_nudge_s` (600 s / 60 s by
default).

Activity is what the project can observe of any worker image: a line the worker wrote to its log (stdout or
stderr, timestamped by Docker; on a swarm the service's log, which the manager gathers from the worker's node), or
its start (the wake). An agent is nudged once per idle spell: again only after
another `idle_nudge_s` without activity. Every nudge is recorded; the step ends at the task's deadline.

A worker found stopped before the deadline (a host reboot: the guard stopped it, and `pulumi up --refresh` made it
again, created stopped; a restart of the Docker daemon, which stops every container; or its agent exited) is started
again for the time left, and the restart recorded: the finished wake step does not run again. So is a platform
service found dead (Gitea, MariaDB, the proxy, the token service: killed, or crashed), since the team cannot work
without it and nothing else would start it mid-task, and a worker's router found dead (looked at with the workers,
and started before its worker: the agent's model requests go through it).
The data root running low is said on the console (once per spell, and on the timeline). Once it is full Gitea and
MariaDB take no writes and the team cannot push, which no recovery undoes (docs/faults.md, "Not survived"): the task
is marked DATA_ROOT_FULL, so it is scored incomplete, and the console says what to do.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from model import steps
from model.records import Event, KickoffResult, Nudge, NudgesResult, Restart, WakeResult
from model.rundir import DATA_ROOT_FULL, RunDir
from model.step_inputs import NudgesInputs
from scripts.lib.activity import reader
from scripts.lib.chat import post_to_team
from scripts.lib.step import StepFailed, mark_data_root_full, mode_of, progress, step_main
from scripts.lib.workers import running, start_worker

SERVICE_CHECK_S = 5  # how soon a dead platform service is started again (a `docker inspect` each)
DATA_ROOT_LOW_BYTES = 2 * 10**9  # free space on the data root below which the console says so
DATA_ROOT_FULL_BYTES = 16 * 2**20  # below this a push or a database write fails: the task is marked


def low_space(rd: RunDir, task_id: str, was_low: bool, now: float, events: list[Event]) -> bool:
    """Whether the data root is below DATA_ROOT_LOW_BYTES free; said (and put on the timeline) when a spell begins.
    Full, the task is marked once."""
    free = shutil.disk_usage(rd.path).free
    if free < DATA_ROOT_FULL_BYTES and DATA_ROOT_FULL not in rd.markers(task_id):
        mark_full(rd, task_id, free, now, events)
    low = free < DATA_ROOT_LOW_BYTES
    if low and not was_low:
        events.append(Event(kind="data_root_low", at=now, label=f"{free // 10**6} MB free"))
        progress(
            f"nudges: WARNING: the data root ({rd.path}) has {free / 1e6:.0f} MB free; when it is full Gitea and "
            "MariaDB take no writes and the team cannot push: make room now"
        )
    return low


def mark_full(rd: RunDir, task_id: str, free: int, now: float, events: list[Event]) -> None:
    """The task marked DATA_ROOT_FULL, and the moment put on the timeline."""
    mark_data_root_full(rd, task_id, f"the data root was full ({free // 2**20} MiB free) while the team worked")
    events.append(Event(kind="data_root_full", at=now, label=f"{free // 2**20} MiB free"))


def restart_dead(containers: list[str], now: float, restarts: list[Restart]) -> None:
    """Start every one of these long-running containers (platform services, routers) found not running, recording
    each restart."""
    for service in containers:
        if not running(service):
            started = start_worker(service)
            if started.returncode == 0:
                restarts.append(Restart(worker=service, agent=service, at_epoch=now))
                progress(f"nudges: {service} was not running; started again")
            else:
                progress(f"nudges: {service} is not running and did not start: {started.stderr.strip()[:100]}")


def nudges(a: NudgesInputs, password: str) -> NudgesResult:
    rd = RunDir(Path(a.run_dir))
    kickoff = steps.result_of(rd, steps.KICKOFF, a.task_id, KickoffResult)
    woke = steps.result_of(rd, steps.WAKE, a.task_id, WakeResult)
    if kickoff is None or woke is None:
        raise StepFailed("no kickoff receipt: the task never started")
    woken = {w.worker: w.at_epoch for w in woke.wakes}
    read = reader(a.convention)
    nudged: dict[str, float] = {}  # worker -> last activity already nudged for
    made: list[Nudge] = []
    restarts: list[Restart] = []
    alarms: list[Event] = []
    low = False
    next_check = 0.0  # the workers are looked at every idle_check_s, the platform every SERVICE_CHECK_S
    while time.time() < kickoff.deadline_epoch:
        now = time.time()
        restart_dead(a.platform, now, restarts)
        low = low_space(rd, a.task_id, low, now, alarms)
        if now < next_check:
            time.sleep(max(0.0, min(SERVICE_CHECK_S, next_check - now, kickoff.deadline_epoch - now)))
            continue
        next_check = now + a.idle_check_s
        restart_dead(list(a.routers.values()), now, restarts)
        for k, (worker, agent) in enumerate(a.workers.items(), 1):
            if not running(worker):
                started = start_worker(worker)
                if started.returncode == 0:
                    restarts.append(Restart(worker=worker, agent=agent, at_epoch=now))
                    woken[worker] = now  # its activity counts from now
                    left = kickoff.deadline_epoch - now
                    progress(
                        f"nudges: worker {k} was stopped (a reboot, its agent exited); started again, {left:.0f} s left"
                    )
                else:
                    progress(f"nudges: worker {k} is stopped and did not start: {started.stderr.strip()[:100]}")
                continue
            logged = read.last_active(worker)
            active = max(filter(None, (logged, woken.get(worker))), default=None)
            if active is None or now - active < a.idle_nudge_s or nudged.get(worker) == active:
                continue
            idle = now - active
            post_to_team(
                a.mattermost_url,
                a.mattermost_user,
                password,
                f"@{agent}: no activity from you for {idle / 60:.0f} min. Pick up a claim on the board, "
                "review a pull request or report what blocks you.",
            )
            nudged[worker] = active
            made.append(Nudge(worker=worker, agent=agent, at_epoch=now, idle_s=round(idle)))
            progress(f"nudges: worker {k} idle {idle:.0f} s, nudged")
    events = [Event(kind="nudge", at=n.at_epoch, label=n.agent) for n in made]
    events += [Event(kind="restart", at=r.at_epoch, label=r.agent) for r in restarts]
    return NudgesResult(nudges=made, restarts=restarts, events=events + alarms)


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("nudges", argv, steps.NUDGES.args)
    return step_main(steps.NUDGES, env, nudges, "AGENSH_MATTERMOST_PASSWORD")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
