"""schedule: a delayed launch (docs/requirements.md R31) as a host-managed systemd service and timer.

    .venv/bin/python -m scripts.cli schedule install cohort-w8   # at the profile's start_at (UTC)
    .venv/bin/python -m scripts.cli schedule status cohort-w8
    .venv/bin/python -m scripts.cli schedule remove cohort-w8    # leaves no unit behind

`install` writes `agensh-launch-<stack>.service` and `.timer` to /etc/systemd/system of the host the profile's host
units live on (this machine, or over SSH for `host_units: remote`, where the checkout, the state and the passphrase
file must sit at the same paths) and enables the timer: `OnCalendar=` the profile's `start_at` in UTC, not
persistent (a launch missed while the host was down is not started late). The service runs
`scripts/scheduled_launch.sh` of this checkout by absolute path, as the calling user, with an explicit environment
(the Pulumi state backend, the toolchain, the path of the stack passphrase file: never a secret), `Restart=no`, after
docker.service and pbench-reboot-guard.service; that script runs the documented launch in the service's foreground,
which records when it began (`<run dir>/launch.json`, which the manifest copies).

Refused, before anything is written: a stack without `start_at`, a time not in the future, a passphrase given as a
value (`PULUMI_CONFIG_PASSPHRASE`: the unit would hold it; use a mode-600 file and PULUMI_CONFIG_PASSPHRASE_FILE),
and, on the target host, missing host units (pbench.slice, an enabled pbench-reboot-guard.service), a missing or
readable-by-others passphrase file, or a launch of this stack already running. The settings reach the target's
shell on stdin (`sh -s install`), never through SSH environment or the command line (as for the host units).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import typer

from model.profile import Profile, ProfileError
from model.project import ROOT
from model.root_powers import as_root
from model.rundir import RunDir
from model.stackfiles import load_profile as stack_profile
from scripts.cli import options
from scripts.lib import launcher
from scripts.lib.launcher import Refused, launch_environment

UNITS_SCRIPT = ROOT / "scripts" / "host" / "schedule_units.sh"
LAUNCH_SCRIPT = ROOT / "scripts" / "scheduled_launch.sh"
HEREDOC_END = "AGENSH_SCHEDULE_UNIT_END"
PLAIN_VALUE = re.compile(r"[A-Za-z0-9_@+=:,./~-]*")  # what a unit file takes unquoted (checked, never escaped)

cli = options.typer_app()


def unit_name(stack: str) -> str:
    return f"agensh-launch-{stack}"


def load_profile(stack: str) -> Profile:
    try:
        return stack_profile(stack)
    except FileNotFoundError as err:
        raise Refused(str(err)) from None
    except ProfileError as err:
        raise Refused(f"stack {stack}: {err}") from None


def start_time(stack: str, p: Profile, now: datetime) -> datetime:
    t = p.start_time
    if t is None:
        raise Refused(
            f"stack {stack} has no agensh:start_at; set it (UTC), e.g. "
            f"`.venv/bin/python -m scripts.cli new-stack {stack} --set start_at=2026-12-02T06:00:00Z`"
        )
    if t <= now:
        raise Refused(
            f"agensh:start_at {p.start_at} is in the past (now {now:%Y-%m-%dT%H:%M:%SZ}); choose a later time"
        )
    return t


def service_environment(stack: str, p: Profile, at: datetime, base: dict[str, str]) -> dict[str, str]:
    """Everything the launch service is given: the carried settings and what scheduled_launch.sh needs."""
    env = {
        **base,
        "AGENSH_STACK": stack,
        launcher.START_AT_ENV: at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        launcher.UNIT_ENV: f"{unit_name(stack)}.service",
    }
    for key, value in [*env.items(), ("checkout", str(ROOT))]:
        if not PLAIN_VALUE.fullmatch(value):
            raise Refused(f"{key}={value!r}: a unit file takes paths of letters, digits and ./_-+@:,~ only here")
    return env


def render(stack: str, p: Profile, at: datetime, user: str, env: dict[str, str]) -> tuple[str, str]:
    """The service and timer unit files."""
    unit = unit_name(stack)
    header = (
        f"# Scheduled launch of stack {stack} (run {p.run_id}), written by scripts/cli/schedule.py.\n"
        f"# Remove with: .venv/bin/python -m scripts.cli schedule remove {stack}\n"
    )
    service = (
        header
        + "\n".join(
            [
                "[Unit]",
                f"Description=agensh: launch stack {stack} (scheduled for {env[launcher.START_AT_ENV]})",
                "Wants=docker.service",
                "After=docker.service pbench-reboot-guard.service",
                "",
                "[Service]",
                "Type=exec",
                f"User={user}",
                f"WorkingDirectory={ROOT}",
                *(f"Environment={k}={v}" for k, v in sorted(env.items())),
                f"ExecStart=/bin/bash {LAUNCH_SCRIPT}",
                "Restart=no",
                *launcher.UNIT_PROPS,
            ]
        )
        + "\n"
    )
    timer = (
        header
        + "\n".join(
            [
                "[Unit]",
                f"Description=agensh: start stack {stack} at {env[launcher.START_AT_ENV]}",
                "",
                "[Timer]",
                f"OnCalendar={at:%Y-%m-%d %H:%M:%S} UTC",
                "Persistent=false",
                "AccuracySec=1s",
                f"Unit={unit}.service",
                "",
                "[Install]",
                "WantedBy=timers.target",
            ]
        )
        + "\n"
    )
    return service, timer


def script(settings: dict[str, str]) -> str:
    """Shell assignments of the settings, then the units script: what `sh -s` reads on stdin."""
    lines = []
    for key, value in settings.items():
        if "\n" in value:
            assert HEREDOC_END not in value
            lines.append(f"{key}=$(cat <<'{HEREDOC_END}'\n{value.rstrip()}\n{HEREDOC_END}\n)")
        else:
            lines.append(f"{key}={shlex.quote(value)}")
    return "\n".join(lines) + "\n" + UNITS_SCRIPT.read_text()


def on_target(p: Profile, action: str, stdin: str) -> subprocess.CompletedProcess[str]:
    """`sh -s <action>` on the host of the profile's host units: here, or over SSH for host_units: remote; install
    and remove as root (or through the user's passwordless sudo: /etc/systemd/system, systemctl)."""
    command = f"sh -s {action}"
    if action != "status":
        command = as_root(command, f"{action} of a scheduled launch (systemctl, /etc/systemd/system)")
    if p.host_units != "remote":
        return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, text=True)
    with tempfile.NamedTemporaryFile("w", prefix="agensh-known-hosts-") as known:  # only the pinned host key
        host = p.ssh_host if p.ssh_port == 22 else f"[{p.ssh_host}]:{p.ssh_port}"
        known.write(f"{host} {p.ssh_host_key}\n")
        known.flush()
        cmd = [
            "ssh",
            "-p",
            str(p.ssh_port),
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={known.name}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            *(["-i", str(Path(p.ssh_key_path).expanduser())] if p.ssh_key_path else []),
            f"{p.ssh_user}@{p.ssh_host}",
            command,
        ]
        return subprocess.run(cmd, input=stdin, capture_output=True, text=True)


def target_user(p: Profile) -> str:
    return p.ssh_user if p.host_units == "remote" else pwd.getpwuid(os.getuid()).pw_name


def install(stack: str, now: datetime) -> dict[str, str]:
    p = load_profile(stack)
    if p.host_units == "off":
        raise Refused(
            f"stack {stack} has host_units off: a scheduled launch needs pbench.slice and the reboot guard "
            "(host_units local or remote)"
        )
    at = start_time(stack, p, now)
    env = service_environment(stack, p, at, launch_environment())
    service, timer = render(stack, p, at, target_user(p), env)
    out = on_target(
        p,
        "install",
        script(
            {
                "UNIT": unit_name(stack),
                "SERVICE": service,
                "TIMER": timer,
                "PASSPHRASE_FILE": env["PULUMI_CONFIG_PASSPHRASE_FILE"],
            }
        ),
    )
    if out.returncode:
        raise Refused(out.stderr.strip() or f"install failed on the target host (exit {out.returncode})")
    return {
        **json.loads(out.stdout.strip().splitlines()[-1]),
        "start_at": p.start_at or "",
        "launch_record": str(RunDir.of(p).launch_record),
    }


def remove(stack: str) -> dict[str, str]:
    p = load_profile(stack)
    out = on_target(p, "remove", script({"UNIT": unit_name(stack)}))
    if out.returncode:
        raise Refused(out.stderr.strip() or f"remove failed on the target host (exit {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


def status(stack: str) -> dict[str, object]:
    """The timer's and the service's state on the target host, and the launch record when the launch began."""
    p = load_profile(stack)
    out = on_target(p, "status", script({"UNIT": unit_name(stack), "RECORD": str(RunDir.of(p).launch_record)}))
    if out.returncode:
        raise Refused(out.stderr.strip() or f"status failed on the target host (exit {out.returncode})")
    shown: dict[str, object] = {"stack": stack, "start_at": p.start_at}
    for line in out.stdout.splitlines():
        key, _, value = line.partition("=")
        shown[key] = json.loads(value) if key == "launch" and value else value
    return shown


@cli.command()
def command(
    action: Annotated[
        Literal["install", "remove", "status"],
        typer.Argument(metavar="ACTION", help="install at the profile's start_at, remove (no unit left), or status"),
    ],
    stack: options.ProfileStack,
) -> int:
    """The units of this checkout's scheduled launch, on the host the profile's host units live on; prints what it
    found or did as JSON. Refused (exit 2, before anything is written): no start_at or one not in the future, a
    passphrase given as a value, missing host units, or a launch of the stack running."""
    try:
        if action == "install":
            shown: dict[str, object] = dict(install(stack, datetime.now(UTC)))
        elif action == "remove":
            shown = dict(remove(stack))
        else:
            shown = status(stack)
    except Refused as err:
        print(f"schedule {action} {stack}: refused: {err}", file=sys.stderr)
        return 2
    print(json.dumps(shown, indent=2, sort_keys=True))
    return 0
