"""Who launches a stack: the launcher's record in its run directory (`launch.lock`), held while the launch runs.

Every launch of a stack (in the foreground, detached, scheduled) holds an exclusive lock on `<run dir>/launch.lock`
from before its preview to its end, and writes in it who it is: a second launch of the stack is refused while the
lock is held, and `status`, `make stop` and `make logs` find the launch there. The lock is passed on to each
`pulumi up` the launcher runs, so a launcher killed alone still shows its update as running until that ends too.

A detached launch (`detach`) runs the same launcher in the foreground of a transient systemd service where systemd
runs (`Restart=no`, after Docker and the reboot guard, in pbench.slice when the profile has host units), otherwise in
a session of its own with no terminal: closing the terminal that started it sends it no hang-up. Its output goes to
`<run dir>/launch.log`.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from model import steps
from model.profile import Profile
from model.project import ROOT
from model.records import ExportResult, KickoffResult, Launch
from model.rundir import CopyDir, ProfileDir, RunDir
from scripts.lib import copies, privilege, transient
from scripts.lib.step import held, iso

HOW_ENV = "AGENSH_LAUNCH_HOW"  # how the launcher runs: foreground (the default), session, or unit
ID_ENV = "AGENSH_LAUNCH_ID"  # the detaching command's id for the launch it started, to find that launch's record
UNIT_ENV = "AGENSH_LAUNCH_UNIT"  # the systemd unit a launcher runs in (a detached or a scheduled launch)
START_AT_ENV = "AGENSH_START_AT"  # a scheduled launch's time, set by its service (scripts/cli/schedule.py)
GUARD = "pbench-reboot-guard.service"
START_S = 60.0  # a detached launcher takes its lock within seconds; this covers a loaded host
UPDATE_BEGINS = "launch: pulumi up -s "  # the launcher's line as an update begins (Updates.start)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What scripts/env.sh settles for this shell, handed to the service explicitly (DOCKER_HOST only when set).
CARRIED = (
    "AGENSH_HOME",
    "AGENSH_CACHE",
    "AGENSH_TOOLCHAIN",
    "PULUMI_HOME",
    "PULUMI_BACKEND_URL",
    "PULUMI_CONFIG_PASSPHRASE_FILE",
    "DOCKER_HOST",
)
STOP_NOW_S = 60  # a stop of the launcher's service (a host's shutdown, `systemctl stop`) waits at most this for it
# How a launcher's service ends when stopped: SIGTERM to the launcher alone, which makes its updates give up what is in
# flight (scripts/cli/launch.py: SIGTERM, then again), so it ends within seconds and a host's shutdown does not wait
# on the export's or the nudges' wait for the deadline; what is left after STOP_NOW_S is killed. The next launch
# resumes every step that did not finish. `make stop` sends SIGINT instead: the steps in flight finish first.
UNIT_PROPS = ("KillMode=mixed", "KillSignal=SIGTERM", f"TimeoutStopSec={STOP_NOW_S}")


class Refused(Exception):
    """A launch by systemd (detached or scheduled) is refused; nothing was started or written."""


class Running(Exception):
    """A launch of the stack already runs: its record."""

    def __init__(self, record: Record | None):
        super().__init__(describe(record))
        self.record = record


@dataclass
class Record:
    """The launcher, as it writes itself into its lock file."""

    stack: str
    pid: int
    how: str  # foreground, session (a detached launch without systemd) or unit
    host: str
    started: str
    id: str | None = None
    unit: str | None = None
    log: str | None = None
    ended: str | None = None
    exit: int | None = None


def read(rd: RunDir) -> Record | None:
    """The last launcher's record ("" or torn: None)."""
    try:
        return Record(**json.loads(rd.launcher.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def running(rd: RunDir) -> bool:
    """Whether a launch of the stack runs: its launcher, or an update it started, holds the lock."""
    return held(rd.launcher)


def describe(r: Record | None) -> str:
    if r is None:
        return "a launch of this stack is running"
    where = f"in systemd unit {r.unit}" if r.unit else f"pid {r.pid}"
    return f"stack {r.stack} is being launched ({r.how}, {where}, on {r.host} since {r.started})"


def run_dir(p: Profile) -> RunDir:
    """The run directory, its profile's directory claimed first as the profile's data step claims it (so that step
    finds it agensh's own). Refused when it, or the launcher's files in it, belong to another user (a launch with
    sudo earlier): this launch could not write them."""
    pd, rd = ProfileDir.of(p), RunDir.of(p)
    for path in (pd.path, rd.path, rd.launcher, rd.launch_log):
        if path.exists() and path.stat().st_uid != os.geteuid():
            raise Refused(
                f"{path} belongs to {privilege.user_name(path.stat().st_uid)}, not to you "
                f"({privilege.user_name(os.geteuid())}): an earlier launch ran as that user (with sudo?). Launch as "
                f"that user, or give the profile's data back: sudo chown -R {os.geteuid()}:{os.getegid()} {pd.path}"
            )
    try:
        pd.claim(p.profile, iso(time.time()))
    except ValueError as err:
        raise Refused(str(err)) from None
    rd.path.mkdir(parents=True, exist_ok=True)
    return rd


def hold(stack: str, p: Profile, log: Path | None = None) -> tuple[IO[str], Record]:
    """Take the stack's launch lock and write this launcher's record in it; `Running` if another holds it. A
    scheduled launch (its service sets START_AT_ENV) also records when it began, for the manifest."""
    rd = run_dir(p)
    fh = open(rd.launcher, "a+")  # noqa: SIM115 (held for the launch's lifetime, closed by `release`)
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise Running(read(rd)) from None
    record = Record(
        stack=stack,
        pid=os.getpid(),
        how=os.environ.get(HOW_ENV) or ("unit" if os.environ.get(UNIT_ENV) else "foreground"),
        host=socket.gethostname(),
        started=iso(time.time()),
        id=os.environ.get(ID_ENV),
        unit=os.environ.get(UNIT_ENV),
        log=str(log) if log else None,
    )
    write(fh, record)
    if scheduled := os.environ.get(START_AT_ENV):
        launch = Launch(
            stack=stack, unit=record.unit or "", host=record.host, scheduled=scheduled, started=record.started
        )
        rd.launch_record.write_text(launch.model_dump_json() + "\n")
        print(f"agensh: launch of stack {stack}, scheduled for {scheduled}, began at {record.started}", flush=True)
    return fh, record


def write(fh: IO[str], record: Record) -> None:
    fh.seek(0)
    fh.truncate()
    fh.write(json.dumps(asdict(record)) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def release(fh: IO[str], record: Record, code: int, copy: CopyDir) -> None:
    """Add the launch's log to the run's verified copy, when the run made it (the copy leaves the log out while the
    launcher writes it), record the launch's end and exit status, then let the lock go."""
    if record.log and copy.path.is_dir():
        print(f"launch: ended (exit {code}); its log goes to the run's verified copy, {copy.path}", flush=True)
        rd = RunDir(Path(record.log).parent)
        for problem in copies.refresh(rd, copy, [rd.launch_log]).problems:
            print(f"launch: {problem}", file=sys.stderr, flush=True)
    record.ended, record.exit = iso(time.time()), code
    write(fh, record)
    fh.close()


def launch_environment() -> dict[str, str]:
    """The settings scripts/env.sh gives this shell, as the service must have them; refuses a secret value."""
    shown = subprocess.run(
        [
            "bash",
            "-c",
            '. scripts/env.sh && for k in "$@"; do printf "%s=%s\\0" "$k" "${!k:-}"; done',
            "env",
            "PULUMI_CONFIG_PASSPHRASE",
            *CARRIED,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if shown.returncode:
        raise Refused(f"scripts/env.sh failed: {shown.stderr.strip()}")
    values = dict(item.split("=", 1) for item in shown.stdout.split("\0") if item)
    if values.pop("PULUMI_CONFIG_PASSPHRASE") and not values["PULUMI_CONFIG_PASSPHRASE_FILE"]:
        raise Refused(
            "the stack passphrase is set as a value (PULUMI_CONFIG_PASSPHRASE), which the unit file would "
            "hold; put it in a file (chmod 600) and export PULUMI_CONFIG_PASSPHRASE_FILE=<that file>"
        )
    if urllib.parse.urlsplit(values["PULUMI_BACKEND_URL"]).password:
        raise Refused("PULUMI_BACKEND_URL carries a password, which the unit file would hold")
    return {"PATH": PATH, "LANG": "C.UTF-8", **{k: v for k, v in values.items() if v}}


def unit_name(stack: str) -> str:
    return f"agensh-up-{stack}"


def systemd_command(stack: str, p: Profile, env: dict[str, str], log: Path, argv: list[str]) -> list[str]:
    """The transient service that runs a detached launcher: after Docker and the guard, in the profile's slice, never
    restarted; stopped as UNIT_PROPS say."""
    unit = unit_name(stack)
    props = [
        *UNIT_PROPS,
        "Wants=docker.service",
        f"After=docker.service {GUARD}" if p.host_units != "off" else "After=docker.service",
    ]
    return transient.service(
        unit,
        f"agensh: launch of stack {stack}",
        ["/bin/bash", "-c", '. scripts/env.sh && exec "$@"', "launch", *argv],  # the toolchain on PATH
        {**env, UNIT_ENV: f"{unit}.service", HOW_ENV: "unit"},
        log,
        p.systemd_slice,
        props,
    )


def detach(stack: str, p: Profile, args: list[str]) -> int:
    """Start the launch of a stack detached from this terminal, show it until its update begins, and say how to
    follow and stop it. The launcher previews again (the pack checks the stack as it is when the update starts)."""
    try:
        rd = run_dir(p)
    except Refused as err:
        print(f"launch: {err}", file=sys.stderr)
        return 2
    log, launch_id = rd.launch_log, uuid.uuid4().hex
    argv = [sys.executable, "-m", "scripts.cli", "launch", "up", stack, "--yes", "--foreground", *args]
    start = log.stat().st_size if log.exists() else 0
    with open(log, "a") as fh:
        fh.write(f"--- launch of stack {stack} detached at {iso(time.time())} ---\n")
    if transient.systemd_runs():
        try:
            env = {**launch_environment(), ID_ENV: launch_id}
            as_root = privilege.sudo("a detached launch, a systemd service (systemd-run)")
        except Refused as err:
            print(f"launch: {err}", file=sys.stderr)
            return 2
        except privilege.NotRoot as err:
            print(f"launch: {err}; or keep the launch in this terminal (FOREGROUND=1)", file=sys.stderr)
            return 2
        started = subprocess.run([*as_root, *systemd_command(stack, p, env, log, argv)], capture_output=True, text=True)
        if started.returncode:
            print(f"launch: systemd-run failed: {started.stderr.strip()}", file=sys.stderr)
            return 1
        how = f"in the systemd unit {unit_name(stack)}.service (journalctl -u {unit_name(stack)})"
    else:
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env={**os.environ, HOW_ENV: "session", ID_ENV: launch_id},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        how = f"in a session of its own (pid {proc.pid}; no systemd here)"
    print(f"launch: stack {stack} launching detached {how}; its output: {log}", flush=True)
    code = follow_until_update(rd, launch_id, log, start)
    if code is not None:
        print(f"launch: the launch ended before its update (exit {code}); see {log}", file=sys.stderr)
        return code or 1
    print(
        f"launch: the update runs on without this terminal.\n"
        f"  follow it:  make status STACK={stack}   make logs STACK={stack}\n"
        f"  stop it:    make stop STACK={stack}  (the steps in flight finish; again to give them up: they resume on "
        f"the next `make up`)",
        flush=True,
    )
    return 0


def follow_until_update(rd: RunDir, launch_id: str, log: Path, start: int) -> int | None:
    """Copy the launch's log here until its update begins (None) or it ends first (its exit status)."""
    begun_by, offset, seen = time.time() + START_S, start, ""
    while True:
        with open(log, errors="replace") as fh:
            fh.seek(offset)
            new = fh.read()
            offset = fh.tell()
        if new:
            print(new, end="", flush=True)
            seen = (seen + new)[-4096:]
        if UPDATE_BEGINS in seen:
            return None
        record = read(rd)
        ours = record is not None and record.id == launch_id
        if ours and record is not None and record.ended is not None:
            return record.exit if record.exit is not None else 1
        if not ours and time.time() > begun_by:
            return 1  # it never took the lock: its log says why (another launch, a bad argument)
        if ours and not running(rd):
            return 1  # killed before it could record its end
        time.sleep(0.5)


def stop(stack: str, p: Profile) -> int:
    """Ask the running launch to stop: SIGINT to its launcher alone, which passes it on to its updates."""
    rd = RunDir.of(p)
    record = read(rd)
    if not running(rd) or record is None:
        print(f"stop: no launch of stack {stack} is running", file=sys.stderr)
        return 1
    if record.unit and transient.systemd_runs():
        try:
            sent = privilege.run(
                ["systemctl", "kill", "--signal=SIGINT", "--kill-whom=main", record.unit],
                f"stopping {record.unit} (systemctl kill)",
                capture_output=True,
                text=True,
            )
        except privilege.NotRoot as err:
            print(f"stop: {err}", file=sys.stderr)
            return 1
        if sent.returncode:
            print(f"stop: systemctl kill {record.unit}: {sent.stderr.strip()}", file=sys.stderr)
            return 1
    else:
        cmdline = Path(f"/proc/{record.pid}/cmdline")
        argv = cmdline.read_bytes().split(b"\0") if cmdline.exists() else []
        if b"scripts.cli" not in argv or b"launch" not in argv:
            print(
                f"stop: the launcher (pid {record.pid}) is gone and an update it started still runs; "
                f"`pulumi cancel -s <stack>` is the last resort once it is known to be stuck",
                file=sys.stderr,
            )
            return 1
        os.kill(record.pid, signal.SIGINT)
    print(
        f"stop: asked the launch of {stack} to stop ({describe(record)}); the steps in flight finish first"
        f"{waiting(rd, p.tasks)}. Run `make stop` again to make pulumi give them up now; the next `make up` resumes "
        "every step that did not finish",
        flush=True,
    )
    return 0


def waiting(rd: RunDir, tasks: list[str]) -> str:
    """What of a stopped launch waits for a deadline: each task in its window, whose export (and nudges) run until
    its deadline, so a first `make stop` ends the launch only then."""
    now = time.time()
    windows = []
    for task in tasks:
        kickoff = steps.result_of(rd, steps.KICKOFF, task, KickoffResult)
        if kickoff and kickoff.deadline_epoch > now and not steps.result_of(rd, steps.EXPORT, task, ExportResult):
            windows.append(f"{task} at {kickoff.deadline} (in {math.ceil((kickoff.deadline_epoch - now) / 60)} min)")
    return f": the export waits for the deadline of {', '.join(windows)}" if windows else ""


def logs(stack: str, p: Profile) -> int:
    """Show the launch's log, following it while the launch runs."""
    rd = RunDir.of(p)
    if not rd.launch_log.exists():
        print(f"logs: stack {stack} has no launch log ({rd.launch_log}): not launched detached", file=sys.stderr)
        return 1
    record = read(rd)
    if running(rd) and record is not None:
        os.execvp("tail", ["tail", f"--pid={record.pid}", "-n", "50", "-F", str(rd.launch_log)])
    print(rd.launch_log.read_text(errors="replace")[-20000:], end="")
    return 0
