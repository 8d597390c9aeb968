"""How a worker's session is read: one reader per activity report of the checkout contract (model/checkout.py
`CONVENTIONS`), chosen by the profile's `checkout_convention` and handed to the steps in their inputs. The kickoff reads
each session's CLI version, the nudges and `status` when a worker last did something, the shutdown and a baseline's
stop keep the events beside the agent's archive and summarise them (the report shows the summaries). Nothing else
reads the events.

- demo-log: `activity {json}` lines in the worker's container log (`docker logs`; on a swarm the service's log).
- cc-log: JSON lines in a file inside the worker's HOME, copied out with `docker cp` (which runs nothing in the
  container and works on a stopped one); only a regular file is read, a link is not followed.

The events come from a process the agent controls: each line is bounded in length, a file in size, and read as data
only (JSON into a dict with a string kind; anything else skipped), never executed.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import PurePosixPath

from model.checkout import CONVENTIONS, DEMO_LOG, ActivityReport
from model.records import Session
from scripts.lib.workers import is_service

MAX_LINE = 64 * 1024
MAX_FILE = 32 * 2**20  # a file report is read from its last MAX_FILE bytes (a six-hour session is a few MB)
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")


def logs(worker: str, *args: str) -> str:
    """A worker's log (`docker logs`, or a service's `docker service logs --raw`, with `args`); "" when it cannot be
    read."""
    cmd = ["docker", "service", "logs", "--raw"] if is_service(worker) else ["docker", "logs"]
    out = subprocess.run([*cmd, *args, worker], capture_output=True, text=True, errors="replace")
    return f"{out.stdout}\n{out.stderr}" if out.returncode == 0 else ""


def epoch(docker_time: str) -> float:
    """Docker's RFC 3339 time with nanoseconds (or the driver's, with milliseconds) -> epoch seconds."""
    head, _, frac = docker_time.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{frac[:6] or '0'}+00:00").timestamp()


def last_logged(worker: str) -> float | None:
    """When a worker's container (or, on a swarm, its service's task) last wrote to its log: Docker's own timestamp
    leads each line, never a time the worker wrote. Its start is the caller's to add (the wake, or Docker's)."""
    lines = logs(worker, "--timestamps", "--tail", "1").splitlines()
    return max((epoch(line.split(" ", 1)[0]) for line in lines if STAMP.match(line)), default=None)


@dataclass(frozen=True)
class Copied:
    """A file copied out of a container: its last MAX_FILE bytes and its modification time."""

    text: str
    mtime: float


def copy_out(container: str, path: str, limit: int = MAX_FILE) -> Copied | None:
    """A regular file of a container (running or stopped) through `docker cp ... -`, whose tar stream is read here:
    nothing runs in the container, a link or a folder is not read, and only the last `limit` bytes are kept. None
    when there is no such file (or no such container)."""
    proc = subprocess.Popen(
        ["docker", "cp", f"{container}:{path}", "-"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            member = tar.next()
            if member is None or not member.isreg() or member.name != PurePosixPath(path).name:
                return None
            body = tar.extractfile(member)
            assert body is not None
            kept = b""
            while chunk := body.read(1 << 20):
                kept = (kept + chunk)[-limit:]
            return Copied(kept.decode(errors="replace"), float(member.mtime))
    except tarfile.TarError:
        return None
    finally:
        proc.kill()
        proc.wait()


def parse(report: ActivityReport, text: str) -> list[dict]:
    """The events of a report's text, oldest first: lines of at most MAX_LINE characters, each the report's prefix
    and a JSON object whose kind is a string; every other line is skipped."""
    events = []
    for line in text.splitlines():
        if not line.startswith(report.prefix) or len(line) > MAX_LINE:
            continue
        try:
            event = json.loads(line[len(report.prefix) :])
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get(report.kind), str):
            events.append(event)
    return events


def session(report: ActivityReport, events: list[dict]) -> Session:
    """A session's summary: the last CLI version reported, the first and last event times, the counted kinds."""
    kinds = [e[report.kind] for e in events]
    versions = [e.get(report.version_field) for e, k in zip(events, kinds) if k == report.version_event]
    stamps = [str(e.get(report.at)) for e in events if e.get(report.at)]
    counts = {field: kinds.count(kind) for field, kind in asdict(report.counted).items()}
    return Session(
        copilot_version=str(versions[-1]) if versions and versions[-1] else None,
        first_at=stamps[0] if stamps else None,
        last_at=stamps[-1] if stamps else None,
        **counts,
    )


def jsonl(events: list[dict]) -> bytes:
    """The events as JSON lines, as the worker wrote them: what the shutdown keeps beside the agent's archive."""
    return "".join(json.dumps(e, sort_keys=True) + "\n" for e in events).encode()


class Reader(ABC):
    """The project's one way to read the sessions of one activity report."""

    report: ActivityReport

    @abstractmethod
    def native(self, worker: str) -> str:
        """The text the report is read from (a baseline keeps it as the run's cc.log); "" when there is none."""

    def parse(self, text: str) -> list[dict]:
        return parse(self.report, text)

    def events(self, worker: str) -> list[dict]:
        """Every event of a worker, oldest first (none when its report cannot be read)."""
        return self.parse(self.native(worker))

    def session(self, events: list[dict]) -> Session:
        return session(self.report, events)

    @abstractmethod
    def last_active(self, worker: str) -> float | None:
        """When the worker last did something the project can see: the later of its log's last line (whatever it
        says) and its report's last write; its start is the caller's to add."""

    @abstractmethod
    def follower(self) -> Follower:
        """Sessions followed from one call to the next (`status`, the kickoff's wait)."""


class Follower(ABC):
    @abstractmethod
    def session(self, worker: str) -> Session: ...


class LogReader(Reader):
    """demo-log: the events are lines of the worker's container log."""

    report = DEMO_LOG

    def native(self, worker: str) -> str:
        return logs(worker)

    def last_active(self, worker: str) -> float | None:
        return last_logged(worker)

    def follower(self) -> Follower:
        return LogFollower(self)


class LogFollower(Follower):
    """Workers' events read on from where the last call stopped: `status` refreshes every few seconds, and a six-hour
    log is megabytes, so each call asks Docker only for the lines since the last one seen."""

    def __init__(self, reader: LogReader) -> None:
        self.reader = reader
        self.events: dict[str, list[dict]] = {}
        self.since: dict[str, str] = {}

    def session(self, worker: str) -> Session:
        since = self.since.get(worker)
        new = []
        for line in logs(worker, "--timestamps", *(("--since", since) if since else ())).splitlines():
            if not STAMP.match(line):
                continue
            stamp, _, rest = line.partition(" ")
            if since is None or epoch(stamp) > epoch(since):  # --since includes the line it names
                new.append(rest)
                self.since[worker] = stamp
        self.events.setdefault(worker, []).extend(self.reader.parse("\n".join(new)))
        return self.reader.session(self.events[worker])


class FileReader(Reader):
    """A report kept in a file inside the worker (cc-log), copied out whole (up to MAX_FILE) at each read. On a swarm
    there is no container here to copy from: the profile refuses such a convention there."""

    def __init__(self, report: ActivityReport) -> None:
        assert report.file is not None
        self.report, self.file = report, report.file

    def native(self, worker: str) -> str:
        copied = copy_out(worker, self.file)
        return copied.text if copied else ""

    def last_active(self, worker: str) -> float | None:
        copied = copy_out(worker, self.file)
        wrote = min(copied.mtime, time.time()) if copied else None  # a time the worker set ahead counts as now
        return max(filter(None, (last_logged(worker), wrote)), default=None)

    def follower(self) -> Follower:
        return FileFollower(self)


class FileFollower(Follower):
    def __init__(self, reader: FileReader) -> None:
        self.reader = reader

    def session(self, worker: str) -> Session:
        return self.reader.session(self.reader.events(worker))


def reader(convention: str) -> Reader:
    """The reader of a convention's activity report (a name the profile and the inputs validated)."""
    report = CONVENTIONS[convention].report
    return LogReader() if report.file is None else FileReader(report)


def wait_for_sessions(read: Reader, workers: dict[str, str], limit_s: float) -> dict[str, str | None]:
    """agent id -> the CLI version its session reported, waiting up to `limit_s` for every worker to report one."""
    follow = read.follower()
    end = time.monotonic() + limit_s
    while True:
        found = {agent: follow.session(name).copilot_version for name, agent in workers.items()}
        if all(found.values()) or time.monotonic() > end:
            return found
        time.sleep(2)
