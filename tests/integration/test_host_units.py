"""Host units for real: pbench.slice and the reboot guard installed over SSH (command.remote) on a container
that boots systemd, through the real engine. Install, reinstall without change, dry run of the guard, removal,
reuse of a guard another checkout installed, and two profiles sharing the units by reference."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from components.host_units import install_script
from model.profile import parse_profile
from model.project import ROOT
from tests.conftest import require
from tests.integration.conftest import docker

GUARD = "/etc/systemd/system/pbench-reboot-guard.service"
SLICE = "/etc/systemd/system/pbench.slice"
STATE = "/var/lib/agensh/host-units.hostunits-test.json"
INSTALLED = "/var/lib/agensh/host-units.installed"


@pytest.fixture
def project(tmp_path: Path, systemd_host, pulumi_engine: str):
    """The throwaway project on a file backend. `new_stack(profile)` makes a stack (named as its profile) whose host
    units go on the systemd host and returns its `pulumi(*args)`; every stack made is destroyed at the end."""
    proj = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "host_units_project", proj)
    (proj / "Pulumi.yaml").write_text((proj / "Pulumi.yaml").read_text().replace("VIRTUALENV", str(ROOT / ".venv")))
    (tmp_path / "state").mkdir()
    env = dict(
        os.environ,
        PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}",
        PULUMI_CONFIG_PASSPHRASE="t",
    )
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    made: list[str] = []

    def new_stack(profile: str = "hostunits-test"):
        def pulumi(*args: str, stdin: str | None = None, check: bool = True):
            out = subprocess.run(
                ["pulumi", *args, "--non-interactive", "-s", profile],
                cwd=proj,
                env=env,
                input=stdin,
                capture_output=True,
                text=True,
            )
            if not check:
                return out
            assert out.returncode == 0, f"pulumi {args}: {out.stdout}\n{out.stderr}"
            return out.stdout

        subprocess.run(
            ["pulumi", "stack", "init", profile, "--non-interactive"],
            cwd=proj,
            env=env,
            check=True,
            capture_output=True,
        )
        made.append(profile)
        pulumi("config", "set", "profile", profile)
        pulumi("config", "set", "host", systemd_host["ip"])
        pulumi("config", "set", "host_key", systemd_host["host_key"])
        pulumi("config", "set", "--secret", "key", stdin=systemd_host["key"])
        return pulumi

    yield new_stack, systemd_host
    for profile in made:
        subprocess.run(
            ["pulumi", "destroy", "--yes", "-s", profile, "--non-interactive"], cwd=proj, env=env, capture_output=True
        )


@pytest.fixture
def stack(project):
    new_stack, host = project
    return new_stack(), host


def host_exec(host: dict, *cmd: str, check: bool = True, stdin: str | None = None) -> str:
    return docker("exec", *(["-i"] if stdin is not None else []), host["name"], *cmd, check=check, stdin=stdin)


def test_install_reinstall_dry_run_remove(stack):
    pulumi, host = stack
    pulumi("up", "--yes", "--skip-preview")
    receipt = json.loads(json.loads(pulumi("stack", "output", "--json", "--show-secrets"))["receipt"])
    assert receipt["slice"] == "installed" and receipt["guard"] == "installed"
    assert receipt["slice_memory_max"] not in ("infinity", "unknown", "")
    assert host_exec(host, "systemctl", "is-enabled", "pbench-reboot-guard.service") == "enabled"
    assert "MemoryMax=80%" in host_exec(host, "cat", SLICE)
    # the settings reached the script on stdin: the host's sshd accepts no such environment (no AcceptEnv for them)
    assert "SLICE_MEMORY_PERCENT" not in host_exec(host, "sh", "-c", "sshd -T | grep -i acceptenv")
    assert json.loads(host_exec(host, "cat", STATE)) == receipt  # what this owner installed, kept for removal

    again = pulumi("up", "--yes", "--expect-no-changes")
    assert "unchanged" in again

    project = f"omcgitea-guardtest-{host['run']}"
    made = []
    try:
        for n, labelled in ((1, True), (2, True), (3, False)):
            name = f"agensh-test-guard-{host['run']}-{n}"
            labels = ["--label", f"com.docker.compose.project={project}"] if labelled else []
            docker(
                "run",
                "-d",
                "--name",
                name,
                "--network",
                "none",
                "--label",
                f"agensh.test={host['run']}",
                *labels,
                "agensh-systemd-host:bookworm",
                "sleep",
                "300",
            )
            made.append(name)
        listed = host_exec(host, "env", "PBENCH_GUARD_DRY_RUN=1", receipt["guard_exec"])
        ours = sorted(line for line in listed.splitlines() if host["run"] in line)
        assert ours == [
            f"would stop agensh-test-guard-{host['run']}-1 ({project})",
            f"would stop agensh-test-guard-{host['run']}-2 ({project})",
        ]
        assert all(docker("inspect", "-f", "{{.State.Running}}", m) == "true" for m in made)  # nothing stopped
    finally:
        docker("rm", "-f", *made, check=False)

    pulumi("destroy", "--yes", "--skip-preview")
    for unit in (GUARD, SLICE, STATE):
        assert host_exec(host, "sh", "-c", f"test -e {unit} && echo present || echo absent") == "absent"


def test_another_host_key_is_refused(stack, tmp_path: Path):
    """The host's key is pinned: a host answering with another key (a man in the middle) gets nothing."""
    pulumi, host = stack
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    pulumi("config", "set", "host_key", (tmp_path / "other.pub").read_text().rsplit(" ", 1)[0])
    refused = pulumi("up", "--yes", "--skip-preview", check=False)
    assert refused.returncode != 0 and "ssh: handshake failed" in refused.stdout + refused.stderr
    assert host_exec(host, "sh", "-c", f"test -e {GUARD} && echo present || echo absent") == "absent"


def test_existing_guard_is_reused_not_overwritten(stack):
    pulumi, host = stack
    other = "/opt/other-checkout/scripts/pbench_reboot_guard.sh"
    host_exec(
        host,
        "sh",
        "-c",
        f"mkdir -p $(dirname {other}) && printf '#!/bin/sh\\necho other\\n' > {other} && chmod +x {other} && "
        f"printf '[Unit]\\nDescription=other\\n[Service]\\nType=oneshot\\nExecStart={other}\\n[Install]\\n"
        f"WantedBy=multi-user.target\\n' > {GUARD} && systemctl daemon-reload && systemctl enable pbench-reboot-guard",
    )
    before = host_exec(host, "cat", GUARD)
    pulumi("up", "--yes", "--skip-preview")
    receipt = json.loads(json.loads(pulumi("stack", "output", "--json", "--show-secrets"))["receipt"])
    assert receipt["guard"] == "reused" and receipt["guard_exec"] == other
    assert host_exec(host, "cat", GUARD) == before
    pulumi("destroy", "--yes", "--skip-preview")
    assert host_exec(host, "cat", GUARD) == before  # destroy removes only what this stack installed
    assert host_exec(host, "systemctl", "is-enabled", "pbench-reboot-guard.service") == "enabled"


def present(host: dict, path: str) -> bool:
    return host_exec(host, "sh", "-c", f"test -e {path} && echo present || echo absent") == "present"


def container_in_slice(host: dict, profile: str) -> str:
    """A running container of `profile` in the host's pbench.slice as the host's systemd sees it: the host is a
    container sharing this machine's cgroup tree, so Docker (cgroupfs driver) places it by the slice's cgroup path."""
    name = f"agensh-test-slice-{host['run']}-{profile}"
    cgroup = host_exec(host, "systemctl", "show", "-p", "ControlGroup", "--value", "pbench.slice")
    docker(
        "run",
        "-d",
        "--name",
        name,
        "--network",
        "none",
        "--label",
        f"agensh.test={host['run']}",
        "--label",
        f"agensh.profile={profile}",
        "--cgroup-parent",
        cgroup,
        "agensh-systemd-host:bookworm",
        "sleep",
        "600",
    )
    return name


def test_two_profiles_share_the_units_by_reference(project):
    """The profile that installed the units is destroyed first: the other's container in the slice keeps running, its
    guard stays enabled, and the destroy says what it left and why; the last profile's destroy removes the units. A
    slice that still runs tasks is stopped by no one's removal (the script driven as the component drives it)."""
    require(
        docker("info", "-f", "{{.CgroupDriver}}") == "cgroupfs",
        "Docker's cgroupfs driver (the test places a container in the systemd host's slice by its cgroup path)",
    )
    new_stack, host = project
    first, second = new_stack("hostunits-a"), new_stack("hostunits-b")
    first("up", "--yes", "--skip-preview")
    second("up", "--yes", "--skip-preview")
    receipt = json.loads(json.loads(second("stack", "output", "--json", "--show-secrets"))["receipt"])
    assert receipt["slice"] == "present" and receipt["guard"] == "reused"
    seconds = host_exec(host, "cat", "/var/lib/agensh/host-units.hostunits-b.json")
    assert not present(host, INSTALLED)  # until the installer leaves, its receipt alone says so (as earlier versions)

    theirs = container_in_slice(host, "hostunits-b")
    try:
        assert host_exec(host, "systemctl", "show", "-p", "TasksCurrent", "--value", "pbench.slice") == "1"
        gone = first("destroy", "--yes", "--skip-preview")
        assert "left pbench.slice and pbench-reboot-guard.service: still used by profiles hostunits-b" in gone, gone
        assert docker("inspect", "-f", "{{.State.Running}}", theirs) == "true"
        assert host_exec(host, "systemctl", "is-active", "pbench.slice") == "active"  # never stopped
        assert host_exec(host, "systemctl", "is-enabled", "pbench-reboot-guard.service") == "enabled"
        assert present(host, SLICE) and present(host, GUARD)
        assert host_exec(host, "cat", "/var/lib/agensh/host-units.hostunits-b.json") == seconds
    finally:
        docker("rm", "-f", theirs, check=False)

    # the second's containers go before its host units (they depend on them): the last profile to leave removes them
    gone = second("destroy", "--yes", "--skip-preview")
    assert "removed pbench.slice and pbench-reboot-guard.service" in gone, gone
    for path in (SLICE, GUARD, INSTALLED, "/var/lib/agensh/host-units.hostunits-a.json"):
        assert not present(host, path), path

    # the last to leave, with a neighbour's container still in the slice: nothing is stopped or removed
    profile = parse_profile(
        {
            "profile": "hostunits-c",
            "run_id": "20261129t000000z",
            "tasks": ["testorg__calculator.abc1234"],
            "llm_upstream": "http://model.invalid",
            "agensh_checkout": "/nonexistent",
            "host_units": "remote",
            "ssh_host": host["ip"],
            "ssh_user": "root",
            "ssh_host_key": host["host_key"],
        }
    )
    units = install_script(profile)
    host_exec(host, "sh", "-s", "install", stdin=units)
    neighbour = container_in_slice(host, "neighbour")
    try:
        left = host_exec(host, "sh", "-s", "remove", stdin=units)
        assert (
            left
            == "left pbench.slice and pbench-reboot-guard.service: tasks still run in pbench.slice (TasksCurrent=1)"
        )
        assert docker("inspect", "-f", "{{.State.Running}}", neighbour) == "true"
        assert host_exec(host, "systemctl", "is-active", "pbench.slice") == "active"
        assert host_exec(host, "systemctl", "is-enabled", "pbench-reboot-guard.service") == "enabled"
    finally:
        docker("rm", "-f", neighbour, check=False)
    assert host_exec(host, "sh", "-s", "remove", stdin=units) == "removed pbench.slice and pbench-reboot-guard.service"
    assert not present(host, SLICE) and not present(host, GUARD) and not present(host, INSTALLED)
