"""wake: the ramp made by the orchestrator (docs/requirements.md R29). The team's workers are created stopped; this step
starts worker k when its offset after the ramp's start is reached, so any worker image gets the seed's ramp. On a
swarm each worker is a service created with 0 replicas, and waking it scales it to 1 (its one task then runs on the
node the plan gave it). On one host a worker starts only once its router answers (`ready`): the engine does not wait
for routers at creation (model/services.py, `ready_at_wake`).

The ramp's start is recorded the first time (`ramp.json`), and each wake as it happens, so a resumed `up` keeps the
clock: workers already running are recorded as awake, the rest are started at their offsets (late when their time
has passed: lateness is recorded, never hidden). The receipt lists every wake as a timeline event; the kickoff
counts its wait from the same ramp start.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from model import steps
from model.records import LATE_S, Event, Ramp, Wake, WakeResult, read_record
from model.rundir import RUN_FAILED, RunDir
from model.step_inputs import WakeInputs
from scripts.lib.step import StepFailed, load_inputs, mode_of, progress, run_step, write_atomic
from scripts.lib.workers import running, start_worker


def wait_ready(url: str, timeout_s: float, what: str) -> None:
    """Until `url` answers 2xx (a router's health endpoint), once a second; a clear failure after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=3):
                return
        except (OSError, ValueError) as e:  # refused, reset, timed out, or an HTTP error status
            if time.monotonic() > deadline:
                raise StepFailed(f"{what} did not answer at {url} within {timeout_s:.0f} s ({e})") from None
        time.sleep(1.0)


def wake(a: WakeInputs) -> WakeResult:
    rd = RunDir(Path(a.run_dir))
    checkpoint = rd.ramp(a.task_id)
    state = read_record(checkpoint, Ramp) or Ramp(ramp_start=time.time())
    write_atomic(checkpoint, state)
    start, n = state.ramp_start, len(a.workers)
    wakes = []
    for k, (name, offset) in enumerate(a.workers.items(), 1):
        due = start + offset
        if name in state.woken or running(name):
            at = state.woken.get(name, time.time())
            wakes.append(
                Wake(worker=name, due_epoch=due, at_epoch=at, late_s=round(max(0.0, at - due), 1), already_awake=True)
            )
            continue
        if (left := due - time.time()) > 0:
            time.sleep(left)
        if (router := a.routers.get(name)) and not running(router):
            progress(f"wake: worker {k}'s router was stopped (`make down`?); starting it")
            start_worker(router)
        if name in a.ready:
            wait_ready(a.ready[name], a.ready_timeout_s, f"worker {k}'s router")
        out = start_worker(name)
        if out.returncode:
            raise StepFailed(f"could not start {name}: {out.stderr.strip()}", woken=len(wakes))
        at = time.time()
        state.woken[name] = at
        write_atomic(checkpoint, state)
        late = max(0.0, at - due)
        progress(f"wake: worker {k} of {n} awake" + (f", late {late:.0f} s" if late > LATE_S else ""))
        wakes.append(Wake(worker=name, due_epoch=due, at_epoch=at, late_s=round(late, 1)))
    events = [
        Event(kind="wake", at=w.at_epoch, label=f"worker {k}", late_s=w.late_s if w.late_s > LATE_S else None)
        for k, w in enumerate(wakes, 1)
    ]
    return WakeResult(ramp_start_epoch=start, wakes=wakes, events=events)


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("wake", argv, steps.WAKE.args)
    a = load_inputs(WakeInputs, env)
    return run_step(steps.WAKE, RunDir(Path(a.run_dir)), a.task_id, a, lambda: wake(a), RUN_FAILED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
