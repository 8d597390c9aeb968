"""The deadline without the launcher: at a task's deadline `main`'s HEAD is recorded (`freeze.json`) and `main` is
made immovable for everyone but the administrator, so work done after the deadline never reaches the submission,
even when the launcher (`make up`: the engine and its step programs) was dead at the deadline and resumed later.

The export arms a keeper as it starts (right after the kickoff): the export's program with the argument `keep`, in a
session of its own (its own process group, stdin from /dev/null, output to `keeper.log`), so neither a hang-up nor a
kill of the launcher's process group reaches it. It sleeps until the deadline (at once when that has passed) and
freezes. It is not a transient systemd timer: the unit would carry Gitea's administrator password in its environment
(shown by `systemctl show`), and it would not outlive a reboot either. Keeper and export both freeze; the first record
written stays (it is created once, never replaced), and both lock `main` before reading its HEAD, so they agree.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from model import contract, steps
from model.project import ROOT
from model.records import Freeze, KickoffResult, read_record
from model.rundir import RunDir
from model.step_inputs import ExportInputs, GiteaInputs
from scripts.lib.http import HTTPFailure, request
from scripts.lib.step import held, iso, now, progress, wait_until, write_atomic

KEEP = "keep"  # the export program's argument that makes it the keeper (its path is pinned with the step's)
RETRY_S = 30  # the keeper tries again this often while Gitea does not answer at the deadline
GIVE_UP_S = 3600  # then leaves the freeze to the export, which records how late it froze
WATCH_S = 2  # how often the keeper looks for the export's receipt during the grace after the deadline


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


def arm(a: ExportInputs, password: str) -> str:
    """Start the task's keeper, detached from the launcher, unless `main` is frozen or a keeper lives; says which."""
    rd = RunDir(Path(a.run_dir))
    if rd.freeze(a.task_id).exists():
        return "not needed: main is frozen"
    if keeper_alive(rd, a.task_id):
        return "already armed"
    log = rd.keeper_log(a.task_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", steps.EXPORT.module, KEEP],
            cwd=ROOT,
            env={**os.environ, "AGENSH_INPUT": a.model_dump_json(), "AGENSH_GITEA_PASSWORD": password},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return f"armed (pid {proc.pid}, log: the task's {log.name})"


def stop_unexported(a: ExportInputs, deadline: float) -> str:
    """At the deadline plus the grace, with no export running or done (the launcher is dead), stop the task's workers:
    main is locked, so what they do cannot reach the submission, and they would spend the model's budget for nothing.
    Each gets the grace to seal its archive, as the shutdown gives it; the shutdown, when the launch resumes, finds
    them stopped. On a swarm the workers are services on other nodes: left to the shutdown."""
    rd = RunDir(Path(a.run_dir))
    exported = rd.receipt(steps.EXPORT.name, a.task_id)
    while time.time() < deadline + a.grace_s:  # an export that ends meanwhile ends the keeper's watch at once
        if exported.exists() or not rd.path.is_dir():
            return "the export is done: the team is the launch's to stop"
        time.sleep(WATCH_S)
    if held(rd.lock(steps.EXPORT.name, a.task_id)) or exported.exists():
        return "an export has started: the team is the launch's to stop"
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
    return f"no export by the deadline + {a.grace_s} s: {len(names)} worker(s) stopped, archives sealed"


def keep(env: Mapping[str, str]) -> int:
    """The keeper: one per task (its lock), asleep until the deadline, then the freeze, retried while Gitea is down;
    then, if no export has started by the deadline and the grace, the team's stop."""
    a = ExportInputs.model_validate_json(env["AGENSH_INPUT"])
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
                f = freeze(a, env["AGENSH_GITEA_PASSWORD"], kickoff.deadline_epoch, "keeper")
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
            progress(f"keeper: {stop_unexported(a, kickoff.deadline_epoch)}")
        return code
