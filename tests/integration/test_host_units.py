"""Host units for real: pbench.slice and the reboot guard installed over SSH (command.remote) on a container
that boots systemd, through the real engine. Install, reinstall without change, dry run of the guard, removal,
and reuse of a guard another checkout installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import docker

ROOT = Path(__file__).resolve().parents[2]
GUARD = "/etc/systemd/system/pbench-reboot-guard.service"
SLICE = "/etc/systemd/system/pbench.slice"
STATE = "/var/lib/agensh/host-units.hostunits-test.json"


@pytest.fixture
def stack(tmp_path: Path, systemd_host, pulumi_engine: str):
    proj = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "host_units_project", proj)
    (proj / "Pulumi.yaml").write_text((proj / "Pulumi.yaml").read_text().replace("VIRTUALENV", str(ROOT / ".venv")))
    (tmp_path / "state").mkdir()
    env = dict(
        os.environ,
        PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}",
        PULUMI_CONFIG_PASSPHRASE="t",
        AGENSH_ROOT=str(ROOT),
    )
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)

    def pulumi(*args: str, stdin: str | None = None, check: bool = True):
        out = subprocess.run(
            ["pulumi", *args, "--non-interactive", "-s", "units"],
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
        ["pulumi", "stack", "init", "units", "--non-interactive"], cwd=proj, env=env, check=True, capture_output=True
    )
    pulumi("config", "set", "host", systemd_host["ip"])
    pulumi("config", "set", "host_key", systemd_host["host_key"])
    pulumi("config", "set", "--secret", "key", stdin=systemd_host["key"])
    yield pulumi, systemd_host
    subprocess.run(
        ["pulumi", "destroy", "--yes", "-s", "units", "--non-interactive"], cwd=proj, env=env, capture_output=True
    )


def host_exec(host: dict, *cmd: str, check: bool = True) -> str:
    return docker("exec", host["name"], *cmd, check=check)


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
