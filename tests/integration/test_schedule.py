"""Delayed launches for real: `scripts.cli schedule` installs the service and timer over SSH on a container that boots
systemd, refuses without host units, with a time in the past or a passphrase file others can read, and the timer
fires the launch at the scheduled time; the launch records when it began and the manifest carries both times;
`remove` leaves no unit behind.

The launch's `pulumi` is a STAND-IN (a script that records how and when it was called): the point is the units and
the timer, and the systemd host has no Pulumi. It is put on PATH the way the real one is: scripts/env.sh takes
`$AGENSH_TOOLCHAIN/bin/pulumi`, and the service gets AGENSH_TOOLCHAIN in its explicit environment.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from components.host_units import install_script
from model.profile import parse_profile
from model.project import DEMO_CHECKOUT, ROOT
from model.stackfiles import plain_settings
from scripts import manifest
from scripts.lab.sandbox import profile_config, project_copy
from tests.integration.conftest import docker

STACK = "launchit"
UNIT = f"agensh-launch-{STACK}"
PASSPHRASE = "not-in-any-unit-file"
STANDIN_PULUMI = """#!/bin/sh
# STAND-IN pulumi (tests/integration/test_schedule.py): records how and when the scheduled launch called it.
{ date -u +%s; echo "$*"; env | grep -E '^(PULUMI|AGENSH)_' | sort; } > "$AGENSH_TOOLCHAIN/called-$1"
"""


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.fixture
def launch(tmp_path: Path, systemd_host):
    """A project copy whose stack `launchit` has its host units on the systemd test host (host_units: remote), copied
    onto that host at the same absolute path, with a stand-in toolchain and a passphrase file there."""
    host = systemd_host
    config = profile_config(
        "demo.profile.yaml",
        profile=STACK,
        host_units="remote",
        ssh_host=host["ip"],
        ssh_key_path=host["key_path"],
        ssh_host_key=host["host_key"],
        data_root=str(tmp_path / "data"),
    )
    proj = project_copy(tmp_path, STACK, config)
    shutil.copytree(ROOT / "toolchain", proj / "toolchain")  # scripts/env.sh keys the toolchain by it
    stack_file = proj / "stacks" / f"Pulumi.{STACK}.yaml"
    toolchain = tmp_path / "standin-toolchain"
    (toolchain / "bin").mkdir(parents=True)
    (toolchain / "bin" / "pulumi").write_text(STANDIN_PULUMI)
    (toolchain / "bin" / "pulumi").chmod(0o755)
    passphrase = tmp_path / "agensh-home" / "passphrase"
    env = dict(
        os.environ,
        AGENSH_HOME=str(tmp_path / "agensh-home"),
        AGENSH_TOOLCHAIN=str(toolchain),
        PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}",
        PULUMI_CONFIG_PASSPHRASE_FILE=str(passphrase),
    )
    for key in ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_HOME", "DOCKER_HOST"):
        env.pop(key, None)
    docker("exec", host["name"], "mkdir", "-p", str(tmp_path))
    docker("cp", str(proj), f"{host['name']}:{proj}")
    docker("cp", str(toolchain), f"{host['name']}:{toolchain}")

    def schedule(action: str, start_at: float | None = None) -> subprocess.CompletedProcess[str]:
        if start_at is not None:
            stack_file.write_text(yaml.safe_dump({"config": {**config, "agensh:start_at": iso(start_at)}}))
            docker("cp", str(stack_file), f"{host['name']}:{stack_file}")  # the launch there reads it
        return subprocess.run(
            [sys.executable, "-m", "scripts.cli", "schedule", action, STACK],
            cwd=proj,
            env=env,
            capture_output=True,
            text=True,
        )

    def on_host(*cmd: str, check: bool = True, stdin: str | None = None) -> str:
        return docker("exec", *(["-i"] if stdin is not None else []), host["name"], *cmd, check=check, stdin=stdin)

    on_host(
        "sh", "-c", f"mkdir -p {passphrase.parent} && printf %s {PASSPHRASE} > {passphrase} && chmod 644 {passphrase}"
    )
    yield schedule, on_host, host, toolchain, stack_file
    schedule("remove")


def units_left(on_host) -> str:
    files = on_host("sh", "-c", f"ls /etc/systemd/system | grep '^{UNIT}' || true")
    loaded = on_host("systemctl", "list-units", "--all", "--no-legend", "--plain", f"{UNIT}*")
    return (files + loaded).strip()


def test_timer_fires_the_launch_at_the_scheduled_time_and_is_removed(launch, tmp_path: Path):
    schedule, on_host, host, toolchain, stack_file = launch

    # refused: no host units on the target yet (nothing written), a time in the past, a passphrase file others read
    refused = schedule("install", time.time() + 600)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "host units missing on" in refused.stderr and "pbench.slice is not installed" in refused.stderr
    assert "pbench-reboot-guard.service is not enabled" in refused.stderr
    assert units_left(on_host) == ""
    profile = parse_profile(plain_settings(yaml.safe_load(stack_file.read_text())["config"]))
    units = on_host("sh", "-s", "install", stdin=install_script(profile))  # the project's own host-units installer
    assert json.loads(units.splitlines()[-1])["guard"] == "installed"
    past = schedule("install", time.time() - 60)
    assert past.returncode == 2 and "is in the past" in past.stderr, past.stderr
    readable = schedule("install", time.time() + 600)
    assert readable.returncode == 2 and "readable by others" in readable.stderr, readable.stderr
    assert units_left(on_host) == ""
    on_host("chmod", "600", str(tmp_path / "agensh-home" / "passphrase"))

    # scheduled a few seconds ahead; installing twice reschedules (idempotent)
    assert schedule("install", time.time() + 600).returncode == 0
    start_at = math.ceil(time.time()) + 12
    done = schedule("install", start_at)
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    assert receipt["unit"] == UNIT and receipt["start_at"] == iso(start_at)
    service = on_host("cat", f"/etc/systemd/system/{UNIT}.service")
    timer = on_host("cat", f"/etc/systemd/system/{UNIT}.timer")
    assert f"OnCalendar={datetime.fromtimestamp(start_at, UTC):%Y-%m-%d %H:%M:%S} UTC" in timer
    assert "Persistent=false" in timer
    assert "Restart=no" in service and "After=docker.service pbench-reboot-guard.service" in service
    assert f"ExecStart=/bin/bash {tmp_path / 'project' / 'scripts' / 'scheduled_launch.sh'}" in service
    assert f"Environment=PULUMI_CONFIG_PASSPHRASE_FILE={tmp_path / 'agensh-home' / 'passphrase'}" in service
    assert PASSPHRASE not in service + timer
    assert on_host("systemctl", "is-active", f"{UNIT}.timer") == "active"

    def called(command: str) -> list[str]:
        return on_host("sh", "-c", f"cat {toolchain / ('called-' + command)} 2>/dev/null || true").splitlines()

    while not called("up") and time.time() < start_at + 60:
        time.sleep(0.5)
    journal = on_host("journalctl", "--no-pager", "-u", f"{UNIT}.service", "-u", f"{UNIT}.timer", check=False)
    preview, up = called("preview"), called("up")
    assert preview and up, journal
    fired = int(preview[0])
    assert start_at <= fired <= start_at + 3, (fired, start_at)  # AccuracySec=1s
    # the documented launch (scripts/host/launch.sh): the preview the policy pack checks, then the update
    assert preview[1] == f"preview -s {STACK} --policy-pack policies --non-interactive"
    assert up[1] == f"up --yes --skip-preview --non-interactive -s {STACK} --policy-pack policies"
    preview_env, seen_env = (dict(line.split("=", 1) for line in lines[2:]) for lines in (preview, up))
    assert preview_env["PULUMI_SKIP_CHECKPOINTS"] == "true"
    assert "PULUMI_SKIP_CHECKPOINTS" not in seen_env  # the update keeps its checkpoints: a killed launch resumes
    assert seen_env["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(tmp_path / "agensh-home" / "passphrase")
    assert "PULUMI_CONFIG_PASSPHRASE" not in seen_env

    record_path = Path(receipt["launch_record"])
    record = json.loads(on_host("cat", str(record_path)))
    assert record["scheduled"] == iso(start_at) and record["unit"] == f"{UNIT}.service"
    assert start_at <= epoch(record["started"]) <= start_at + 3
    for _ in range(20):
        shown = json.loads(schedule("status").stdout)
        if shown["service.ActiveState"] == "inactive":
            break
        time.sleep(0.5)
    assert shown["service.Result"] == "success" and shown["launch"] == record
    day, clock, zone = shown["timer.LastTriggerUSec"].split()[1:]  # e.g. "Tue 2026-12-01 10:37:05 UTC"
    assert zone == "UTC" and start_at <= epoch(f"{day}T{clock}Z") <= start_at + 3

    # the run manifest (written on the launch host once `pulumi up` gets there) carries both times
    record_path.parent.mkdir(parents=True)
    record_path.write_text(json.dumps(record))
    profile = parse_profile(plain_settings(yaml.safe_load(stack_file.read_text())["config"]))
    inputs = {
        "run_dir": str(record_path.parent),
        "project_dir": str(tmp_path / "project"),
        "checkout": str(tmp_path / "project" / DEMO_CHECKOUT),
        "profile": profile.model_dump(mode="json"),
        "profile_digest": profile.digest(),
        "start_at": iso(start_at),
        "copy_dir": str(tmp_path / "copy"),
    }
    assert manifest.main(["start"], {"AGENSH_INPUT": json.dumps(inputs)}) == 0
    m = json.loads((record_path.parent / "run_manifest.json").read_text())
    assert (m["scheduled_start"], m["actual_start"], m["launched_by"]) == (
        iso(start_at),
        record["started"],
        f"{UNIT}.service",
    )

    removed = schedule("remove")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["removed"] == f"{UNIT}.service {UNIT}.timer"
    assert units_left(on_host) == ""
    assert on_host("systemctl", "list-unit-files", "--no-legend", f"{UNIT}*", check=False) == ""
