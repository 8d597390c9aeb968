"""Host units for real: pbench.slice and the reboot guard installed over SSH (command.remote) on a container
that boots systemd, through the real engine. Install, reinstall without change, dry run of the guard, removal,
reuse of a guard another checkout installed, and two profiles sharing the units by reference."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.host_units import GUARD_EXEC, install_script
from model.profile import parse_profile
from model.project import ROOT
from tests.conftest import require
from tests.integration.conftest import docker

GUARD = "/etc/systemd/system/pbench-reboot-guard.service"
SLICE = "/etc/systemd/system/pbench.slice"
INSTALLED = "/var/lib/agensh/host-units.installed"


def receipts_of(host: dict, profile: str) -> list[str]:
    """The paths of a profile's receipts on the host, one per owner (`host-units.<profile>.<uid>-<hash>.json`)."""
    listed = host_exec(host, "sh", "-c", f"ls /var/lib/agensh/host-units.{profile}.*.json 2>/dev/null || true")
    return listed.split()


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

    def new_stack(profile: str = "hostunits-test", stack: str | None = None, data_root: str | None = None):
        """A stack named `stack` (else as its profile)."""
        stack = stack or profile

        def pulumi(*args: str, stdin: str | None = None, check: bool = True):
            out = subprocess.run(
                ["pulumi", *args, "--non-interactive", "-s", stack],
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
            ["pulumi", "stack", "init", stack, "--non-interactive"],
            cwd=proj,
            env=env,
            check=True,
            capture_output=True,
        )
        made.append(stack)
        pulumi("config", "set", "profile", profile)
        if data_root:
            pulumi("config", "set", "data_root", data_root)
        pulumi("config", "set", "host", systemd_host["ip"])
        pulumi("config", "set", "host_key", systemd_host["host_key"])
        pulumi("config", "set", "--secret", "key", stdin=systemd_host["key"])
        return pulumi

    yield new_stack, systemd_host
    for stack in made:
        subprocess.run(
            ["pulumi", "destroy", "--yes", "-s", stack, "--non-interactive"], cwd=proj, env=env, capture_output=True
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
    # the guard's script is root's, outside any checkout, and every profile's guard runs it by that path
    assert receipt["guard_exec"] == GUARD_EXEC and host_exec(host, "stat", "-c", "%U %a", GUARD_EXEC) == "root 755"
    # the settings reached the script on stdin: the host's sshd accepts no such environment (no AcceptEnv for them)
    assert "SLICE_MEMORY_PERCENT" not in host_exec(host, "sh", "-c", "sshd -T | grep -i acceptenv")
    [state] = receipts_of(host, "hostunits-test")  # what this owner installed, kept for removal, and who it is
    kept = json.loads(host_exec(host, "cat", state))
    assert {k: kept[k] for k in receipt} == receipt and (kept["profile"], kept["checkout"]) == (
        "hostunits-test",
        str(ROOT),
    )

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
    for unit in (GUARD, SLICE, state):
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
    [seconds_path] = receipts_of(host, "hostunits-b")
    seconds = host_exec(host, "cat", seconds_path)
    assert not present(host, INSTALLED)  # until the installer leaves, its receipt alone says so (as earlier versions)

    theirs = container_in_slice(host, "hostunits-b")
    try:
        assert host_exec(host, "systemctl", "show", "-p", "TasksCurrent", "--value", "pbench.slice") == "1"
        gone = first("destroy", "--yes", "--skip-preview")
        assert "left pbench.slice and pbench-reboot-guard.service: still used by profiles hostunits-b." in gone, gone
        assert docker("inspect", "-f", "{{.State.Running}}", theirs) == "true"
        assert host_exec(host, "systemctl", "is-active", "pbench.slice") == "active"  # never stopped
        assert host_exec(host, "systemctl", "is-enabled", "pbench-reboot-guard.service") == "enabled"
        assert present(host, SLICE) and present(host, GUARD)
        assert host_exec(host, "cat", seconds_path) == seconds
    finally:
        docker("rm", "-f", theirs, check=False)

    # the second's containers go before its host units (they depend on them): the last profile to leave removes them
    gone = second("destroy", "--yes", "--skip-preview")
    assert "removed pbench.slice and pbench-reboot-guard.service" in gone, gone
    for path in (SLICE, GUARD, INSTALLED):
        assert not present(host, path), path
    assert receipts_of(host, "hostunits-a") == []

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


def test_one_profile_name_of_two_owners_keeps_two_receipts(project):
    """Two owners' profiles of one name (two data roots, as two users' homes give): a receipt each. Destroying the
    installer's leaves the other's container running in the slice, its memory limit intact."""
    require(
        docker("info", "-f", "{{.CgroupDriver}}") == "cgroupfs",
        "Docker's cgroupfs driver (the test places a container in the systemd host's slice by its cgroup path)",
    )
    new_stack, host = project
    first = new_stack("hostunits-same", stack="same-one", data_root="/srv/one/agensh")
    second = new_stack("hostunits-same", stack="same-two", data_root="/srv/two/agensh")
    first("up", "--yes", "--skip-preview")
    second("up", "--yes", "--skip-preview")
    owners = receipts_of(host, "hostunits-same")
    assert len(owners) == 2, owners
    limit = host_exec(host, "systemctl", "show", "-p", "MemoryMax", "--value", "pbench.slice")
    theirs = container_in_slice(host, "hostunits-same")
    try:
        gone = first("destroy", "--yes", "--skip-preview")
        assert "left pbench.slice and pbench-reboot-guard.service: still used by profiles hostunits-same." in gone
        assert len(receipts_of(host, "hostunits-same")) == 1
        assert docker("inspect", "-f", "{{.State.Running}}", theirs) == "true"
        assert host_exec(host, "systemctl", "show", "-p", "MemoryMax", "--value", "pbench.slice") == limit
    finally:
        docker("rm", "-f", theirs, check=False)
    second("destroy", "--yes", "--skip-preview")
    assert receipts_of(host, "hostunits-same") == [] and not present(host, SLICE)


def test_stale_receipts_listed_and_pruned(systemd_host, tmp_path: Path):
    """`host-units` on the host: a receipt whose checkout lost its stack file and whose profile has no container is
    stale and `--prune` removes it as a destroy would; one whose stack file is there, or whose profile still has a
    container (stopped too), is live and kept; so are the units while a receipt remains. A container whose cgroup
    parent is the slice keeps the units, the slice inactive or not."""
    host = systemd_host
    hostname = host_exec(host, "hostname")
    checkout = Path(host["shared"]) / "checkout"
    (checkout / "stacks").mkdir(parents=True)
    (checkout / "stacks" / "Pulumi.kept.yaml").write_text("config: {}\n")

    def install(profile: str) -> None:
        p = parse_profile(
            {
                "profile": profile,
                "run_id": "20261129t000000z",
                "tasks": ["testorg__calculator.abc1234"],
                "llm_upstream": "http://model.invalid",
                "agensh_checkout": "/nonexistent",
            }
        )
        script = install_script(p)  # as installed from the host itself, from a checkout of the test's
        script = script.replace(f"CHECKOUT={ROOT}", f"CHECKOUT={checkout}", 1)
        script = re.sub(r"(?m)^FROM_HOST=.*$", f"FROM_HOST={hostname}", script, count=1)
        host_exec(host, "sh", "-s", "install", stdin=script)

    for profile in ("gone", "kept", "busy"):
        install(profile)
    busy = docker(
        "create",
        "--label",
        f"agensh.test={host['run']}",
        "--label",
        "agensh.profile=busy",
        "--network",
        "none",
        "agensh-systemd-host:bookworm",
        "true",
    )
    cli = ["env", "-C", str(ROOT), sys.executable, "-m", "scripts.cli", "host-units"]
    try:
        listed = host_exec(host, *cli).splitlines()
        verdicts = {line.split()[1].split(".")[0]: line.split()[0] for line in listed}
        assert verdicts == {"gone": "stale", "kept": "live", "busy": "live"}, listed
        pruned = host_exec(host, *cli, "--prune")
        assert (
            "host-units: gone." in pruned and "left pbench.slice and pbench-reboot-guard.service: still used" in pruned
        )
        assert receipts_of(host, "gone") == [] and len(receipts_of(host, "kept")) == 1
        assert len(receipts_of(host, "busy")) == 1 and present(host, SLICE)
    finally:
        docker("rm", "-f", busy, check=False)
    (checkout / "stacks" / "Pulumi.kept.yaml").unlink()  # its state gone too (`pulumi stack rm`)
    # the last receipt's removal with a stopped container still parented to the slice, the slice stopped (a reboot)
    parented = docker(
        "create",
        "--label",
        f"agensh.test={host['run']}",
        "--network",
        "none",
        "--cgroup-parent",
        host_exec(host, "systemctl", "show", "-p", "ControlGroup", "--value", "pbench.slice"),
        "agensh-systemd-host:bookworm",
        "true",
    )
    try:
        host_exec(host, "systemctl", "stop", "pbench.slice")
        pruned = host_exec(host, *cli, "--prune")
        assert "host-units: kept." in pruned and "host-units: busy." in pruned, pruned
        assert "1 container(s) have pbench.slice as their cgroup parent" in pruned, pruned
        assert present(host, SLICE) and present(host, GUARD)
    finally:
        docker("rm", "-f", parented, check=False)
    operator = "OWNER=_operator\n" + (ROOT / "scripts" / "host" / "host_units.sh").read_text()
    assert (
        host_exec(host, "sh", "-s", "remove", stdin=operator) == "removed pbench.slice and pbench-reboot-guard.service"
    )
