"""launch: the documented preview and launch of a stack (make preview, make up, make demo, a scheduled launch).

    python -m scripts.cli launch preview STACK [pulumi args]
    python -m scripts.cli launch up STACK [--yes] [--foreground] [pulumi args]
    python -m scripts.cli launch stop STACK        ask a running launch to stop (make stop)
    python -m scripts.cli launch logs STACK        a detached launch's output, followed while it runs (make logs)

The preview declares the whole profile (for a per-task profile, in the profile's stack: model/parts.py) under
scripts/setup/preview.env, so the policy pack checks all of it, with the profile's numbers, before anything exists; a
preview writes no state, so it skips the engine's checkpoints (docs/performance.md). The update then runs each stack's
`pulumi up --skip-preview` (with checkpoints, so a killed one resumes; with the pack, whose resource rules see every
resource created), in order: one stack; or the platform, each task (the next one beginning once the previous one has
written the receipt the step graph hands over at, model/step_graph.py: its shutdown; its evaluation goes on beside the
next task), the record once every task's stack is done. A failed part stops the launch after the parts in flight end;
the same command then resumes, completed steps staying done. A `--config KEY=VALUE` goes to the preview, which saves it
in the profile's file, where every part reads it.

`up` runs detached unless `--foreground` (scripts/lib/launcher.py): after the preview and the question on this
terminal, the launch runs on without it, logged to the run directory's launch.log. Every launch holds the stack's
launch lock, so a second one is refused while one runs. Ctrl-C (SIGINT) is passed on to every update in flight, each
time (a second one makes pulumi give up what is in flight, as it does on its own); SIGTERM (its systemd service
stopped: a host's shutdown) is passed on twice, GIVE_UP_S apart, so the updates give up what is in flight at once and
the launcher ends within seconds. Nothing new starts after either.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType
from typing import Annotated, Literal

import typer

from model import parts, step_graph, steps
from model.profile import Profile, ProfileError
from model.project import ROOT
from model.records import ok_result
from model.rundir import CopyDir, RunDir
from model.stackfiles import load_profile
from scripts.cli import options
from scripts.lib import launcher

PREVIEW_ENV = ROOT / "scripts" / "setup" / "preview.env"
POLL_S = 2.0
GIVE_UP_S = 2.0  # between the two SIGTERMs: pulumi takes one signal at a time, and drops one that comes too soon
PACK = ["--policy-pack", "policies"]  # it reads each part's numbers, its profile's, by itself

cli = options.typer_app()


def preview_env() -> dict[str, str]:
    """scripts/setup/preview.env's KEY=VALUE lines."""
    lines = (line.strip() for line in PREVIEW_ENV.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def without_config(args: list[str]) -> list[str]:
    """The arguments without `--config KEY=VALUE` (`-c`, `--config=`): the preview saved those in the profile's file."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--config", "-c"):
            skip = True
        elif not arg.startswith("--config="):
            out.append(arg)
    return out


class Updates:
    """The part stacks' `pulumi up` processes: each in a process group of its own, so a terminal's Ctrl-C reaches this
    launcher alone and each update gets it once from here; without the terminal (`--non-interactive`, no stdin), so a
    background group never stops on it and two updates' lines do not draw over each other."""

    def __init__(self, pulumi_args: list[str], lock: int):
        self.args = pulumi_args
        self.lock = lock  # the launch lock's descriptor, held by each update too (scripts/lib/launcher.py)
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.failed: list[str] = []
        self.stopping = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.pass_on)

    def pass_on(self, sig: int, frame: FrameType | None) -> None:
        self.stopping = True
        print(f"launch: {signal.Signals(sig).name}, passed on to {', '.join(self.running) or 'nothing'}", flush=True)
        self.signal_all(sig)
        if sig == signal.SIGTERM:  # stop now: pulumi's second signal gives up what is in flight
            threading.Timer(GIVE_UP_S, self.signal_all, (sig,)).start()

    def signal_all(self, sig: int) -> None:
        for proc in list(self.running.values()):
            if proc.poll() is None:
                proc.send_signal(sig)

    def start(self, stack: str) -> subprocess.Popen[bytes] | None:
        """The stack's update, unless a signal came meanwhile."""
        if self.stopping:
            return None
        print(f"{launcher.UPDATE_BEGINS}{stack}", flush=True)  # what a detaching launch waits for
        args = [a for a in self.args if a != "--non-interactive"]  # given here already
        cmd = ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "-s", stack, *args]
        self.running[stack] = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.DEVNULL, process_group=0, pass_fds=(self.lock,)
        )
        return self.running[stack]

    def ended(self) -> bool:
        """True once a part has failed or a signal came: nothing new starts."""
        for stack, proc in list(self.running.items()):
            if proc.poll() is not None:
                del self.running[stack]
                if proc.returncode != 0:
                    self.failed.append(f"{stack} (exit {proc.returncode})")
        return bool(self.failed) or self.stopping

    def wait_all(self) -> None:
        while self.running:
            self.ended()
            time.sleep(0.2)


def run_parts(stack: str, p: Profile, pulumi_args: list[str], lock: int) -> int:
    """The stacks' updates in launch order (the module's docstring)."""
    rd = RunDir.of(p)
    handover = step_graph.handover(step_graph.Run.of(p))  # the receipt that lets the next task begin
    updates = Updates(pulumi_args, lock)
    try:
        for part_stack, part in parts.stacks_of(stack, p):
            if part.kind == "record":
                updates.wait_all()
            proc = None if updates.ended() else updates.start(part_stack)
            if proc is None:
                break
            done = part.kind != "task" or not p.run_steps
            while not updates.ended() and proc.poll() is None:
                if not done and ok_result(steps.read_receipt(rd, handover, part.task), steps.RESULTS[handover.name]):
                    print(f"launch: {part.task} shut down; its stack goes on (evaluation) beside the next", flush=True)
                    break
                time.sleep(POLL_S)
    finally:  # whatever happens here, no update is left without its launcher
        updates.wait_all()
    if updates.failed or updates.stopping:
        print(
            f"launch: stopped ({', '.join(updates.failed) or 'by a signal'}); fix the cause and run the same command "
            "again: every completed step stays done",
            file=sys.stderr,
        )
        return 1
    return 0


def preview(stack: str, args: list[str]) -> int:
    """The launch's preview of the whole profile with the pack; a terminal's Ctrl-C reaches it directly, a signal to
    this launcher alone is passed on."""
    env = {**os.environ, **preview_env(), parts.WHOLE_PREVIEW_ENV: "1"}
    proc = subprocess.Popen(["pulumi", "preview", "-s", stack, *PACK, *args], cwd=ROOT, env=env)
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)


def confirmed() -> bool:
    if not sys.stdin.isatty():
        print("launch: not on a terminal; pass --yes to perform the update", file=sys.stderr)
        return False
    if not input("Do you want to perform this update? [y/N] ").lower().startswith("y"):
        print("launch: nothing changed", file=sys.stderr)
        return False
    return True


def launch(stack: str, p: Profile, yes: bool, rest: list[str]) -> int:
    """The preview, then the updates, holding the stack's launch lock throughout."""
    detached = os.environ.get(launcher.HOW_ENV) in ("session", "unit")
    try:
        fh, record = launcher.hold(stack, p, RunDir.of(p).launch_log if detached else None)
    except launcher.Running as err:
        print(
            f"launch: {err}; follow it with `make status STACK={stack}`, stop it with `make stop STACK={stack}`",
            file=sys.stderr,
        )
        return 2
    except launcher.Refused as err:
        print(f"launch: {err}", file=sys.stderr)
        return 2
    code = 1
    try:
        code = preview(stack, rest)
        if code == 0 and (yes or confirmed()):
            p = load_profile(stack)  # again: the preview saved any `--config` in the profile's file
            code = run_parts(stack, p, [*PACK, *without_config(rest)], fh.fileno())
        elif code == 0:
            code = 1
    finally:
        launcher.release(fh, record, code, CopyDir.of(p.traj_root, p.profile, p.run_id))
    return code


@cli.command(context_settings=options.PASS_THROUGH)
def command(
    ctx: typer.Context,
    mode: Annotated[
        Literal["preview", "up", "stop", "logs"],
        typer.Argument(
            metavar="MODE", help="preview; up: the preview, the question, the update; stop or follow a running launch"
        ),
    ],
    stack: options.Stack,
    yes: options.Yes = False,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="up runs in this terminal, not detached from it")
    ] = False,
) -> int:
    """Any other option, with its value, goes to pulumi: to the preview and each part's update (a `--config` to the
    preview alone, which saves it in the profile's file)."""
    rest = ctx.args
    if "--skip-preview" in rest:
        ctx.fail("the launch always previews first (that is where the policy pack sees the profile)")
    if mode in ("stop", "logs") and rest:
        ctx.fail(f"{mode} takes no other arguments: {' '.join(rest)}")
    try:
        p = load_profile(stack)
    except (FileNotFoundError, ProfileError) as err:
        print(f"launch: {err}", file=sys.stderr)
        return 2
    if mode == "stop":
        return launcher.stop(stack, p)
    if mode == "logs":
        return launcher.logs(stack, p)
    os.environ.pop("PULUMI_OPTION_POLICY_PACK", None)  # scripts/env.sh's: with PACK it would attach the pack twice
    if mode == "preview":
        return preview(stack, rest)
    if foreground:
        return launch(stack, p, yes, rest)
    if launcher.running(RunDir.of(p)):
        print(
            f"launch: {launcher.describe(launcher.read(RunDir.of(p)))}; follow it with `make status "
            f"STACK={stack}`, stop it with `make stop STACK={stack}`",
            file=sys.stderr,
        )
        return 2
    if not yes:  # the question is asked here, on the terminal; the detached launch previews again and goes on
        if (code := preview(stack, rest)) != 0:
            return code
        if not confirmed():
            return 1
    return launcher.detach(stack, p, rest)
