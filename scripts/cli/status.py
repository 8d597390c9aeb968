"""status: what a run is doing now, from its run directory, Docker and the team repository's data, for a stack.

    .venv/bin/python -m scripts.cli status STACK            a live view that refreshes (Ctrl-C to leave)
    .venv/bin/python -m scripts.cli status STACK --once     one view
    .venv/bin/python -m scripts.cli status STACK --json     one snapshot as JSON

Per task: its phase (waiting, seeding, ramp k of N woken, waiting for kickoff, working with the time to the deadline,
exporting, archiving, evaluating, scored, failed) with times; per worker its container's state, health, memory use
against its ceiling, last activity and its Copilot CLI session (turns, tool calls, watchdog recoveries, from the
activity log); the commits on the team repository's `main` and the pull requests merged into
it (read from Gitea's data on this host, no password needed); failure markers; the score. It reads only the stack
file's plain settings (never the passphrase or a secret) and says plainly what it cannot see.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from model import contract, step_graph, steps
from model.profile import Profile, ProfileError
from model.records import KickoffResult, Ramp, Score, Session, WakeResult, ok_result, read_record
from model.rundir import ProfileDir, RunDir
from model.stackfiles import load_profile
from model.topology import Layout
from scripts.cli import options
from scripts.lib import launcher
from scripts.lib.activity import Follower, epoch, reader
from scripts.lib.step import held, iso

cli = options.typer_app()


class Worker(BaseModel):
    name: str
    state: str  # Docker's state, or "absent"
    health: str | None
    memory_mb: float | None
    ceiling_mb: float | None
    last_activity: str | None
    session: Session | None = None  # its Copilot CLI session from the activity log: turns, tool calls, watchdog


class Repo(BaseModel):
    commits_on_main: int | None
    merged_pull_requests: int | None
    head: str | None
    note: str | None = None  # why it cannot be seen


class TaskView(BaseModel):
    task_id: str
    phase: str
    detail: str
    time_to_deadline_s: float | None
    deadline: str | None
    score: float | None
    markers: list[str]
    workers: list[Worker]
    repo: Repo


class LaunchView(BaseModel):
    """The stack's launcher, from its launch lock (scripts/lib/launcher.py)."""

    running: bool  # the launcher, or an update it started, holds the lock
    launcher_alive: bool  # the launcher's own process lives
    how: str
    pid: int
    unit: str | None
    started: str
    log: str | None
    ended: str | None
    exit: int | None


class StatusView(BaseModel):
    stack: str
    profile: str
    run_id: str
    run_dir: str
    at: str
    launch: LaunchView | None = None  # None: never launched by this project's launcher
    tasks: list[TaskView]
    cannot_see: list[str]


def running(rd: RunDir, step: str, task: str) -> bool:
    """A step is running when its program holds the lock beside its receipt (scripts/lib/step.py)."""
    return held(rd.lock(step, task))


def phase(p: Profile, rd: RunDir, task: str, now: float) -> tuple[str, str, float | None]:
    """(phase, detail, deadline epoch) of a task, from its receipts and the steps running."""
    receipts = {
        s: r
        for s in rd.receipt_steps(task)
        if s in steps.RESULTS and (r := steps.parse_receipt(s, rd.receipt(s, task).read_text())) is not None
    }

    def ok(step: steps.StepDef) -> bool:
        return step.name in receipts and receipts[step.name].status == "ok"

    # any step of the task (a nudge or a reminder too), the first to fail first; a failed step running again is not
    failed = sorted(
        (r for s, r in receipts.items() if r.status == "failed" and not running(rd, s, task)), key=lambda r: r.finished
    )
    kickoff = ok_result(receipts.get(steps.KICKOFF.name), KickoffResult)
    deadline = kickoff.deadline_epoch if kickoff else None
    if failed:
        return "failed", f"{failed[0].step} failed: {failed[0].error}", deadline
    # the phase of the task's latest step done that names one (the step graph's order: model/step_graph.py)
    latest = next((s for s in step_graph.phases(step_graph.Run.of(p)) if ok(s)), None)
    if latest == steps.SCORE:
        s = ok_result(receipts[steps.SCORE.name], Score)
        return ("scored" if s and s.complete else "incomplete"), ", ".join(s.problems) if s else "", deadline
    if latest in (steps.SHUTDOWN, steps.BASELINE_STOP):
        return latest.phase, "programbench eval", deadline
    if latest == steps.EXPORT:
        return latest.phase, f"workers seal their archives (grace {p.export_grace_s} s)", deadline
    if latest == steps.KICKOFF and kickoff:
        left = kickoff.deadline_epoch - now
        if left > 0:
            return latest.phase, f"{left / 60:.0f} min to the deadline ({kickoff.deadline})", deadline
        return "exporting", "the deadline has passed", deadline
    woke = ok_result(receipts.get(steps.WAKE.name), WakeResult)
    if latest == steps.WAKE and woke:
        at = woke.ramp_start_epoch + p.task_budget.kickoff_s
        return latest.phase, f"kickoff at {iso(at)} (in {max(0, at - now):.0f} s)", None
    if latest == steps.SEED:
        ramp = read_record(rd.ramp(task), Ramp)
        return latest.phase, f"{len(ramp.woken) if ramp else 0} of {p.workers} woken", None
    if running(rd, steps.SEED.name, task):
        return "seeding", "the task's repository and starting workspace", None
    return "waiting", "", None


def containers(profile: str) -> dict[str, dict[str, Any]] | None:
    """Docker's view of the profile's containers by name (state, health, memory), or None when Docker cannot be
    asked."""
    ps = subprocess.run(
        ["docker", "ps", "-a", "--filter", contract.profile_filter(profile), "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
    )
    if ps.returncode:
        return None
    names = ps.stdout.split()
    if not names:
        return {}
    inspected = json.loads(subprocess.run(["docker", "inspect", *names], capture_output=True, text=True).stdout or "[]")
    stats = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{json .}}", *names], capture_output=True, text=True
    ).stdout.splitlines()
    used = {s["Name"]: s["MemUsage"].split("/")[0].strip() for s in map(json.loads, stats) if s.get("Name")}
    return {
        c["Name"].lstrip("/"): {
            "state": c["State"]["Status"],
            "health": (c["State"].get("Health") or {}).get("Status"),
            "ceiling_mb": (c["HostConfig"].get("Memory") or 0) / 2**20 or None,
            "memory_mb": mib(used.get(c["Name"].lstrip("/"))),
            "started": started_at(c["State"].get("StartedAt")),
        }
        for c in inspected
    }


def started_at(docker_time: str | None) -> float | None:
    """Docker's start time of a container, None when it never started (Docker's zero time: 0001-01-01...)."""
    return None if not docker_time or docker_time.startswith("0001") else epoch(docker_time)


def services(p: Profile) -> dict[str, dict[str, Any]] | None:
    """A swarm's view of the profile's services by name, asked of the manager: running (1/1), stopped (0/0: not woken
    or shut down) or starting. Health, memory and activity live on each task's node and are not asked for."""
    assert p.swarm is not None
    ls = subprocess.run(
        [
            "docker",
            "--host",
            p.swarm.docker_host,
            "service",
            "ls",
            "--filter",
            contract.profile_filter(p.profile),
            "--format",
            "{{.Name}}\t{{.Replicas}}",
        ],
        capture_output=True,
        text=True,
    )
    if ls.returncode:
        return None
    state = {"1/1": "running", "0/0": "stopped"}
    return {
        name: {
            "state": state.get(replicas.split()[0], f"starting ({replicas.split()[0]})"),
            "health": None,
            "ceiling_mb": None,
            "memory_mb": None,
        }
        for name, replicas in (line.split("\t", 1) for line in ls.stdout.splitlines() if "\t" in line)
    }


def mib(text: str | None) -> float | None:
    """Docker's `12.5MiB` / `1.2GiB` -> MiB."""
    if not text:
        return None
    for unit, factor in (("KiB", 1 / 1024), ("MiB", 1), ("GiB", 1024), ("B", 1 / 2**20)):
        if text.endswith(unit):
            return round(float(text[: -len(unit)]) * factor, 1)
    return None


def repo(p: Profile, task: str) -> Repo:
    """The team repository's `main` from Gitea's data on this host (read only; Gitea's own files, not an agent's)."""
    bare = ProfileDir.of(p).gitea_repositories / f"{contract.team_repo(task)}.git"
    if not bare.is_dir():
        return Repo(commits_on_main=None, merged_pull_requests=None, head=None, note=f"no repository at {bare} yet")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", f"safe.directory={bare}", "--git-dir", str(bare), *args], capture_output=True, text=True
        ).stdout.strip()

    head = git("rev-parse", "--verify", "-q", "main")
    if not head:
        return Repo(commits_on_main=0, merged_pull_requests=0, head=None, note="main not pushed yet")
    return Repo(
        commits_on_main=int(git("rev-list", "--count", "main") or 0),
        merged_pull_requests=int(git("rev-list", "--count", "--merges", "main") or 0),
        head=head[:12],
    )


def launch_view(rd: RunDir) -> LaunchView | None:
    r = launcher.read(rd)
    if r is None:
        return None
    alive = r.ended is None and Path(f"/proc/{r.pid}").exists() and r.host == socket.gethostname()
    shown = {k: v for k, v in asdict(r).items() if k in LaunchView.model_fields}  # the record's fields the view has
    return LaunchView(running=launcher.running(rd), launcher_alive=alive, **shown)


def snapshot(stack: str, p: Profile, follow: Follower | None = None) -> StatusView:
    """`follow` carries the workers' session logs from one refresh to the next (read on, never again whole)."""
    read = reader(p.checkout_convention)  # the activity report the profile's checkout writes
    follow = follow or read.follower()
    rd = RunDir.of(p)
    now = time.time()
    cannot: list[str] = []
    if not rd.path.exists():
        cannot.append(f"no run directory {rd.path} (not launched, or another data_root)")
    swarm = p.engine == "swarm"
    docker = services(p) if swarm else containers(p.profile)
    if docker is None:
        cannot.append("Docker cannot be asked (no engine, or no permission): container states unknown")
    elif swarm:
        cannot.append(
            "a swarm's workers run on several nodes: their health, memory and last activity are not shown "
            "(`docker service ps` on the manager)"
        )
    tasks = []
    for task in p.tasks:
        name, detail, deadline = phase(p, rd, task, now)
        workers = []
        for c in Layout.of(p).members(task, "worker"):
            d = (docker or {}).get(c.name)
            active = (
                max(filter(None, (read.last_active(c.name), d["started"])), default=None)
                if d and d["state"] == "running" and not swarm
                else None
            )
            workers.append(
                Worker(
                    name=c.name,
                    state=d["state"] if d else ("absent" if docker is not None else "unknown"),
                    health=d and d["health"],
                    memory_mb=d and d["memory_mb"],
                    ceiling_mb=d and d["ceiling_mb"],
                    last_activity=iso(active) if active else None,
                    session=follow.session(c.name) if d and not swarm else None,
                )
            )
        score = steps.result_of(rd, steps.SCORE, task, Score)
        tasks.append(
            TaskView(
                task_id=task,
                phase=name,
                detail=detail,
                time_to_deadline_s=round(deadline - now) if deadline and name == "working" else None,
                deadline=iso(deadline) if deadline else None,
                score=score.score if score else None,
                markers=rd.markers(task),
                workers=workers,
                repo=repo(p, task),
            )
        )
    return StatusView(
        stack=stack,
        profile=p.profile,
        run_id=p.run_id,
        run_dir=str(rd.path),
        at=iso(now),
        launch=launch_view(rd),
        tasks=tasks,
        cannot_see=cannot,
    )


def render(v: StatusView) -> Group:
    head = Text(f"{v.stack}  run {v.run_id}  {v.at}  ({v.run_dir})", style="bold")
    launch = Text(f"launch: {describe_launch(v.launch)}")
    tasks = Table("task", "phase", "detail", "main", "merged PRs", "markers", "score", title="tasks")
    for t in v.tasks:
        tasks.add_row(
            t.task_id,
            t.phase,
            t.detail,
            str(t.repo.commits_on_main if t.repo.head else t.repo.note),
            str(t.repo.merged_pull_requests or 0),
            ", ".join(t.markers) or "-",
            "-" if t.score is None else f"{t.score:.4f}",
        )
    workers = Table(
        "worker",
        "state",
        "health",
        "memory / ceiling",
        "last activity",
        "turns / tool calls",
        "watchdog",
        title="workers",
    )
    for t in v.tasks:
        for w in t.workers:
            mem = f"{w.memory_mb or 0:.0f} / {w.ceiling_mb:.0f} MiB" if w.ceiling_mb else "-"
            s = w.session
            workers.add_row(
                w.name,
                w.state,
                w.health or "-",
                mem,
                w.last_activity or "-",
                f"{s.turns} / {s.tool_calls}" if s else "-",
                str(s.watchdog) if s else "-",
            )
    notes = [Text(f"cannot see: {c}", style="yellow") for c in v.cannot_see]
    return Group(head, launch, tasks, workers, *notes)


def describe_launch(v: LaunchView | None) -> str:
    if v is None:
        return "none recorded"
    where = v.unit or f"pid {v.pid}"
    if v.running and v.launcher_alive:
        return f"running ({v.how}, {where}, since {v.started})" + (f"; log {v.log}" if v.log else "")
    if v.running:
        return f"the launcher ({where}) is gone, but an update it started still runs; `make stop` cannot reach it"
    if v.ended:
        return f"ended {v.ended} (exit {v.exit}); `make up` resumes"
    return f"the launcher ({where}, since {v.started}) died without ending; `make up` resumes"


@cli.command()
def command(
    stack: options.Stack,
    as_json: options.Json = False,
    once: Annotated[bool, typer.Option("--once", help="one view, no refresh")] = False,
    every: Annotated[float, typer.Option(help="seconds between refreshes")] = 5.0,
) -> int:
    """A live view that refreshes until Ctrl-C, unless --once or --json. It reads only the stack file's plain settings,
    never a secret."""
    try:
        p = load_profile(stack)
    except (FileNotFoundError, ProfileError) as err:
        print(f"status: {err}", file=sys.stderr)
        return 2
    if as_json:
        print(snapshot(stack, p).model_dump_json(indent=2))
        return 0
    if once:
        from rich.console import Console

        Console().print(render(snapshot(stack, p)))
        return 0
    try:
        follow = reader(p.checkout_convention).follower()
        with Live(render(snapshot(stack, p, follow)), refresh_per_second=1) as live:
            while True:
                time.sleep(every)
                live.update(render(snapshot(stack, p, follow)))
    except KeyboardInterrupt:
        return 0
