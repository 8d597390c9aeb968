"""A worker's session as its ACP driver reports it: one `activity {json}` line per prompt, tool call, message and
turn in the container's log (on a swarm, the service's). Read by the kickoff (each session's CLI version), the
shutdown (a summary per agent, and the lines kept beside the agent's archive) and `status`.

The lines come from a process the agent controls: each is bounded in length and read as data only (JSON into a
typed record, unknown kinds ignored), never executed.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from components.records import Session

PREFIX = "activity "
MAX_LINE = 64 * 1024


def lines(worker: str, service: bool = False) -> list[dict]:
    """Every activity event of a worker's log, oldest first (a log that cannot be read gives none)."""
    cmd = ["docker", "service", "logs", "--raw"] if service else ["docker", "logs"]
    out = subprocess.run([*cmd, worker], capture_output=True, text=True, errors="replace")
    events = []
    for line in out.stdout.splitlines() if out.returncode == 0 else []:
        if not line.startswith(PREFIX) or len(line) > MAX_LINE:
            continue
        try:
            event = json.loads(line[len(PREFIX):])
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("kind"), str):
            events.append(event)
    return events


def session(events: list[dict]) -> Session:
    def count(kind: str) -> int:
        return sum(e["kind"] == kind for e in events)

    versions = [e.get("copilot_version") for e in events if e["kind"] == "session"]
    stamps = [str(e.get("at")) for e in events if e.get("at")]
    return Session(copilot_version=str(versions[-1]) if versions and versions[-1] else None, prompts=count("prompt"),
                   turns=count("turn_end"), tool_calls=count("tool_call"), watchdog=count("watchdog"),
                   errors=count("prompt_error"), first_at=stamps[0] if stamps else None,
                   last_at=stamps[-1] if stamps else None)


def keep(events: list[dict], dest: Path) -> None:
    """The events as JSON lines at `dest` (beside the agent's archive, so they are preserved with it)."""
    dest.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))


def wait_for_sessions(workers: dict[str, str], services: bool, limit_s: float) -> dict[str, str | None]:
    """agent id -> the CLI version its session reported, waiting up to `limit_s` for every worker to report one."""
    end = time.monotonic() + limit_s
    while True:
        found = {agent: session(lines(name, services)).copilot_version for name, agent in workers.items()}
        if all(found.values()) or time.monotonic() > end:
            return found
        time.sleep(2)
