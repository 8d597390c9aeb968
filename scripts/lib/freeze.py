"""The deadline without the launcher: at a task's deadline `main`'s HEAD is recorded (`freeze.json`) and `main` is
made immovable for everyone but the administrator, so work done after the deadline never reaches the submission,
even when the launcher (`make up`: the engine and its step programs) was dead at the deadline and resumed later.

The export arms a keeper as it starts (right after the kickoff): the export's program with the arguments `keep
<profile>` (the profile so that `make down` finds it), stdin from /dev/null, output to `keeper.log`. Where systemd is
the host's init it runs as a transient service of its own (scripts/lib/transient.py) in the profile's slice: a
process of the launcher's unit, whatever its session, dies when that unit ends. Elsewhere it runs in a session of its
own, which neither a hang-up nor a kill of the launcher's process group reaches. Gitea's administrator password
reaches it in a file only it can read (0600, in a private directory outside the run), which it reads and deletes as
it starts: a unit's environment is shown to every user. It sleeps until the deadline (at once when that has passed)
and freezes. Keeper and export both freeze; the first record written stays (it is created once, never replaced), and
both lock `main` before reading its HEAD, so they agree. It does not outlive a reboot: the resumed export arms it
again. The export's undo (`pulumi destroy`) and `make down` stop it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from model import contract, steps
from model.project import ROOT
from model.records import Freeze, KickoffResult, ShutdownResult, read_record
from model.rundir import RunDir
from model.step_inputs import ExportInputs, GiteaInputs
from scripts.lib import privilege, transient
from scripts.lib.http import HTTPFailure, request
from scripts.lib.step import held, iso, now, progress, wait_until, write_atomic

KEEP = "keep"  # the export program's argument that makes it the keeper (its path is pinned with the step's)
SECRET_ENV = "AGENSH_GITEA_PASSWORD_FILE"  # where the keeper finds the password (a file it deletes once read)
CARRIED = ("PATH", "HOME", "LANG", "DOCKER_HOST")  # what the keeper's service is given of the export's environment
RETRY_S = 30  # the keeper tries again this often while Gitea does not answer at the deadline
GIVE_UP_S = 3600  # then leaves the freeze to the export, which records how late it froze
WATCH_S = 2  # how often the keeper looks for the launch's shutdown after the deadline
QUIET_S = 10  # no launch at work for this long (past the deadline and the grace) before the keeper stops the team:
# between two steps (the nudges' end, the shutdown's start) the engine holds no step's lock for a moment


def lock_main(gitea: str, repo: str, auth: tuple[str, str], attempts: int, timeout: float) -> None:
    """`main`'s protection rule: pushes and merges by the administrator (`auth`'s user) only, no force push."""
    rule = {
        "rule_name": "main",
        "enable_push": True,
        "enable_push_whitelist": True,
        "push_whitelist_usernames": [auth[0]],
        "enable_merge_whitelist": True,
        "merge_whitelist_usernames": [auth[0]],
        "enable_force_push": False,
    }
    api = f"{gitea}/api/v1/repos/{repo}/branch_protections"
    _, rules, _ = request("GET", api, auth=auth, attempts=attempts, timeout=timeout)
    if any(r.get("rule_name") == "main" for r in rules or []):
        request("PATCH", f"{api}/main", rule, auth=auth, attempts=attempts, timeout=timeout)
    else:
        request("POST", api, rule, auth=auth, attempts=attempts, timeout=timeout)


def claim(path: Path, record: Freeze) -> Freeze:
    """The record at `path`: this one when none was there, else the one written first (never replaced)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    write_atomic(tmp, record)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    frozen = read_record(path, Freeze)
    assert frozen is not None
    return frozen


def freeze(
    a: GiteaInputs,
    password: str,
    deadline: float,
    by: Literal["keeper", "export"],
    attempts: int = 30,
    timeout: float = 30,
) -> Freeze:
    """The task's freeze: the recorded one, or `main` locked now and its HEAD recorded. HTTPFailure when Gitea cannot
    give it (the requests' `attempts` and `timeout`: patient by default)."""
    path = RunDir(Path(a.run_dir)).freeze(a.task_id)
    done = read_record(path, Freeze)
    if done is not None:
        return done
    gitea, auth = a.gitea_url.rstrip("/"), (a.gitea_user, password)
    lock_main(gitea, a.repo, auth, attempts, timeout)
    _, branch, _ = request(
        "GET", f"{gitea}/api/v1/repos/{a.repo}/branches/main", auth=auth, attempts=attempts, timeout=timeout
    )
    t = time.time()
    record = Freeze(
        head=branch["commit"]["id"],
        by=by,
        deadline=iso(deadline),
        frozen_at=iso(t),
        late_s=round(max(0.0, t - deadline), 1),
    )
    return claim(path, record)


def keeper_alive(rd: RunDir, task_id: str) -> bool:
    """Whether a keeper of the task holds its lock (a dead one's lock is released with its process)."""
    return held(rd.keeper_lock(task_id))


def unit_name(a: ExportInputs) -> str:
    """The keeper's systemd service: one per task of a run directory (two checkouts' profiles of one name get two)."""
    tag = hashlib.sha256(str(RunDir(Path(a.run_dir)).task(a.task_id)).encode()).hexdigest()[:12]
    return f"agensh-keeper-{a.profile}-{tag}"


def hand_over(password: str) -> Path:
    """The password in a file only this user can read, in a private directory of its own (never in the run, which is
    copied to the results)."""
    folder = Path(tempfile.mkdtemp(prefix="agensh-keeper-"))  # 0700
    path = folder / "password"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password)
    return path


def taken(env: Mapping[str, str]) -> str:
    """The password the keeper was handed, its file and folder deleted."""
    path = Path(env[SECRET_ENV])
    try:
        return path.read_text()
    finally:
        path.unlink(missing_ok=True)
        path.parent.rmdir()


def arm(a: ExportInputs, password: str) -> str:
    """Start the task's keeper out of the launcher's reach, unless `main` is frozen or a keeper lives; says which."""
    rd = RunDir(Path(a.run_dir))
    if rd.freeze(a.task_id).exists():
        return "not needed: main is frozen"
    if keeper_alive(rd, a.task_id):
        return "already armed"
    log = rd.keeper_log(a.task_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", steps.EXPORT.module, KEEP, a.profile]
    env = {
        **{k: os.environ[k] for k in CARRIED if os.environ.get(k)},
        "PYTHONUNBUFFERED": "1",
        "AGENSH_INPUT": a.model_dump_json(),
        SECRET_ENV: str(hand_over(password)),
    }
    unsafe = ""
    if transient.systemd_runs():
        unit = unit_name(a)
        command = transient.service(
            unit, f"agensh: deadline keeper of {a.task_id}", argv, env, log, a.keeper_slice or None
        )
        try:
            what = "the deadline keeper's own systemd service"
            started = privilege.run(command, what, capture_output=True, text=True)
            if started.returncode == 0:
                return f"armed (service {unit}, log: {log.name})"
            unsafe = f"systemd-run failed ({started.stderr.strip()})"
        except privilege.NotRoot as err:
            unsafe = str(err)
        unsafe = f"; WARNING: it ends with the launcher's systemd unit: {unsafe}"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return f"armed (pid {proc.pid}, own session, log: {log.name}){unsafe}"


def disarm(a: ExportInputs) -> str:
    """Stop the task's keeper, if one lives (the export's undo): its process ends, and with it its service."""
    rd = RunDir(Path(a.run_dir))
    lock = rd.keeper_lock(a.task_id)
    if not keeper_alive(rd, a.task_id):
        return "no keeper alive"
    pid = int(lock.read_text().split()[1])
    os.kill(pid, signal.SIGTERM)
    return f"keeper (pid {pid}) stopped"


def stop_abandoned(a: ExportInputs, deadline: float) -> str:
    """At the deadline plus the grace, stop the task's workers unless the launch is stopping them: `main` is locked,
    so what they do cannot reach the submission, and they would spend the model's budget for nothing. The launch is
    stopping them while it runs (its launcher, or a step before the shutdown or the shutdown itself, alive, seen over
    QUIET_S) and has when its shutdown completed; a launch that died, whose export failed, or that was stopped after
    its export (one `make stop` in the window ends it before its shutdown) leaves them to the keeper. Each gets the
    grace to seal its archive, as the shutdown gives it; the shutdown, when the launch resumes, finds them stopped. On a
    swarm the workers are services on other nodes: left to the shutdown."""
    rd = RunDir(Path(a.run_dir))
    at_work = (steps.EXPORT, steps.REMINDERS, steps.NUDGES, steps.SHUTDOWN)

    def launch_alive() -> bool:
        return held(rd.launcher) or any(held(rd.lock(s.name, a.task_id)) for s in at_work)

    idle_since = None
    while True:
        if not rd.path.is_dir():
            return "the run is gone"
        if steps.result_of(rd, steps.SHUTDOWN, a.task_id, ShutdownResult) is not None:
            return "the launch's shutdown stopped the team"
        if time.time() < deadline + a.grace_s or launch_alive():
            idle_since = None
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= QUIET_S:
            break
        time.sleep(WATCH_S)
    filters = [
        contract.profile_filter(a.profile),
        contract.role_filter("worker"),
        f"label={contract.TASK_LABEL}={a.task_id}",
    ]
    names = subprocess.run(
        ["docker", "ps", "-q", *(arg for f in filters for arg in ("--filter", f))], capture_output=True, text=True
    ).stdout.split()
    if names:
        subprocess.run(["docker", "stop", "-t", str(a.grace_s), *names], capture_output=True, text=True)
    return f"no launch stopping the team by the deadline + {a.grace_s} s: {len(names)} worker(s) stopped"


def keep(env: Mapping[str, str], argv: list[str]) -> int:
    """The keeper: one per task (its lock), asleep until the deadline, then the freeze, retried while Gitea is down;
    then the team's stop, unless a launch stops it (`stop_abandoned`)."""
    a = ExportInputs.model_validate_json(env["AGENSH_INPUT"])
    password = taken(env)
    if argv != [a.profile]:
        progress(f"keeper: takes `{KEEP} {a.profile}` (the profile, for `make down` to find it); got {argv}")
        return 2
    rd = RunDir(Path(a.run_dir))
    with open(rd.keeper_lock(a.task_id), "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("keeper: another keeper of this task is alive")
            return 0
        lock.truncate(0)
        lock.write(f"pid {os.getpid()} since {now()}\n")
        lock.flush()
        kickoff = steps.result_of(rd, steps.KICKOFF, a.task_id, KickoffResult)
        if kickoff is None:
            progress("keeper: no kickoff receipt: no deadline to keep")
            return 1
        wait_until(kickoff.deadline_epoch, f"keeper: freeze of {a.repo}'s main")
        give_up = time.time() + GIVE_UP_S
        code = 0
        while rd.path.is_dir():  # gone: the profile was destroyed meanwhile
            try:
                f = freeze(a, password, kickoff.deadline_epoch, "keeper")
                progress(f"keeper: main frozen at {f.head[:12]} by the {f.by} at {f.frozen_at}")
                break
            except HTTPFailure as err:
                if time.time() > give_up:
                    progress(f"keeper: gave up, Gitea did not answer ({err}); the export freezes main when it runs")
                    code = 1
                    break
                progress(f"keeper: Gitea did not answer ({err}); trying again in {RETRY_S} s")
                time.sleep(RETRY_S)
        if rd.path.is_dir():
            progress(f"keeper: {stop_abandoned(a, kickoff.deadline_epoch)}")
        return code
