"""What a worker's log says: when it last wrote (Docker's own timestamps: the idle watchdog and `status`), and its
session as its ACP driver reports it in the checkout contract's demo-log report (model/checkout.py `DEMO_LOG`), one
`activity {json}` line per prompt, tool call, message and turn (the kickoff reads each session's CLI version, the
shutdown keeps the lines beside the agent's archive and summarises them, `status` follows them). On a swarm the log
is the service's.

The lines come from a process the agent controls: each is bounded in length and read as data only (JSON into a
typed record, unknown kinds ignored), never executed.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from model.checkout import DEMO_LOG
from model.records import Session

MAX_LINE = 64 * 1024
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")


def logs(worker: str, service: bool = False, *args: str) -> str:
    """A worker's log (`docker logs` or `docker service logs --raw` with `args`); "" when it cannot be read."""
    cmd = ["docker", "service", "logs", "--raw"] if service else ["docker", "logs"]
    out = subprocess.run([*cmd, *args, worker], capture_output=True, text=True, errors="replace")
    return f"{out.stdout}\n{out.stderr}" if out.returncode == 0 else ""


def epoch(docker_time: str) -> float:
    """Docker's RFC 3339 time with nanoseconds (or the driver's, with milliseconds) -> epoch seconds."""
    head, _, frac = docker_time.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{frac[:6] or '0'}+00:00").timestamp()


def last_logged(worker: str, service: bool = False) -> float | None:
    """When a worker's container (or, on a swarm, its service's task) last wrote to its log: Docker's own timestamp
    leads each line, never a time the worker wrote. Its start is the caller's to add (the wake, or Docker's)."""
    lines = logs(worker, service, "--timestamps", "--tail", "1").splitlines()
    return max((epoch(line.split(" ", 1)[0]) for line in lines if STAMP.match(line)), default=None)


def parse(text: str) -> list[dict]:
    """The activity events of a log's text, oldest first."""
    events = []
    for line in text.splitlines():
        if not line.startswith(DEMO_LOG.prefix) or len(line) > MAX_LINE:
            continue
        try:
            event = json.loads(line[len(DEMO_LOG.prefix) :])
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("kind"), str):
            events.append(event)
    return events


def lines(worker: str, service: bool = False) -> list[dict]:
    """Every activity event of a worker's log, oldest first (a log that cannot be read gives none)."""
    return parse(logs(worker, service))


class Follower:
    """Workers' events read on from where the last call stopped: `status` refreshes every few seconds, and a six-hour
    log is megabytes, so each call asks Docker only for the lines since the last one seen."""

    def __init__(self) -> None:
        self.events: dict[str, list[dict]] = {}
        self.since: dict[str, str] = {}

    def session(self, worker: str, service: bool = False) -> Session:
        since = self.since.get(worker)
        new = []
        for line in logs(worker, service, "--timestamps", *(("--since", since) if since else ())).splitlines():
            if not STAMP.match(line):
                continue
            stamp, _, rest = line.partition(" ")
            if since is None or epoch(stamp) > epoch(since):  # --since includes the line it names
                new.append(rest)
                self.since[worker] = stamp
        self.events.setdefault(worker, []).extend(parse("\n".join(new)))
        return session(self.events[worker])


def session(events: list[dict]) -> Session:
    versions = [e.get(DEMO_LOG.version_field) for e in events if e["kind"] == DEMO_LOG.version_event]
    stamps = [str(e.get(DEMO_LOG.at)) for e in events if e.get(DEMO_LOG.at)]
    counts = {field: sum(e["kind"] == kind for e in events) for field, kind in asdict(DEMO_LOG.counted).items()}
    return Session(
        copilot_version=str(versions[-1]) if versions and versions[-1] else None,
        first_at=stamps[0] if stamps else None,
        last_at=stamps[-1] if stamps else None,
        **counts,
    )


def keep(events: list[dict], dest: Path) -> None:
    """The events as JSON lines at `dest` (beside the agent's archive, so they are preserved with it)."""
    dest.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))


def wait_for_sessions(workers: dict[str, str], services: bool, limit_s: float) -> dict[str, str | None]:
    """agent id -> the CLI version its session reported, waiting up to `limit_s` for every worker to report one."""
    follow = Follower()
    end = time.monotonic() + limit_s
    while True:
        found = {agent: follow.session(name, services).copilot_version for name, agent in workers.items()}
        if all(found.values()) or time.monotonic() > end:
            return found
        time.sleep(2)
