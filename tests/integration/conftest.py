"""Fixtures shared by the integration tests: a systemd host to install units on; a swarm lab (scripts/lab/swarm_lab.py)
that is removed even when a test fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from model.project import ROOT
from scripts.lab import swarm_lab
from scripts.lab.sandbox import free_octet
from tests.conftest import require


def docker(*args: str, check: bool = True, stdin: str | None = None) -> str:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, input=stdin)
    if check and out.returncode:
        raise AssertionError(f"docker {' '.join(args[:3])}: {out.stderr}")
    return out.stdout.strip()


def venv_mounts() -> list[str]:
    """`-v` arguments for the project's venv and the Python it is made from, read-only at their own paths (and the
    venv also where the project names it, when that is a link), which a launch on the host runs: the checkout sits at
    the same paths there, as on a real host."""
    venv = (ROOT / ".venv").resolve()
    cfg = dict(line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if " = " in line)
    pairs = {venv: venv, ROOT / ".venv": venv, Path(cfg["home"]).resolve().parent: Path(cfg["home"]).resolve().parent}
    return [arg for target, source in pairs.items() for arg in ("-v", f"{source}:{target}:ro")]


@contextmanager
def booted(kind: str, *args: str, ready: tuple[str, ...] = ()) -> Iterator[tuple[str, str, str]]:
    """A container of the systemd test host's image (scripts/setup/base_image.sh systemd) booting systemd, with
    `args` for `docker run`, on an internal network of its own, removed with its volumes and network at the end;
    yields its name, address and run id once systemd runs (and the `ready` units are active)."""
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup" / "base_image.sh"), "systemd"], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout + built.stderr
    run = uuid.uuid4().hex[:8]
    net, name, octet = f"agensh-test-{run}", f"agensh-test-{kind}-{run}", free_octet()
    docker("network", "create", "--internal", "--subnet", f"10.{octet}.0.0/28", "--label", f"agensh.test={run}", net)
    try:
        docker(
            "run",
            "-d",
            "--name",
            name,
            "--label",
            f"agensh.test={run}",
            "--network",
            net,
            "--ip",
            f"10.{octet}.0.5",
            "--cgroupns=host",
            "-v",
            "/sys/fs/cgroup:/sys/fs/cgroup:rw",
            "--tmpfs",
            "/run",
            "--tmpfs",
            "/run/lock",
            *args,
            "agensh-systemd-host:bookworm",
            "/sbin/init",
        )
        for _ in range(60):
            state = docker("exec", name, "systemctl", "is-system-running", check=False)
            if state in ("running", "degraded") and all(
                docker("exec", name, "systemctl", "is-active", unit, check=False) == "active" for unit in ready
            ):
                break
            time.sleep(1)
        else:
            raise AssertionError(f"systemd did not come up: {state}")
        yield name, f"10.{octet}.0.5", run
    finally:
        docker("rm", "-f", "-v", name, check=False)
        docker("network", "rm", net, check=False)


@pytest.fixture
def systemd_host(tmp_path: Path, docker_engine: None):
    """A container booting systemd and sshd on an internal network, with this host's Docker socket and client and
    the project's venv (read-only, at its own path).
    The checkout is there read-only at its own path, and a folder of the test's (`shared`) read-write at its own.
    Yields its name, address, its SSH host key, the SSH private key (text and file) accepted for root, a run id and
    that folder."""
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    shared = tmp_path / "shared"
    shared.mkdir()
    mounts = {
        "/var/run/docker.sock": "/var/run/docker.sock",
        f"{shutil.which('docker')}": "/usr/local/bin/docker:ro",
        f"{key}.pub": "/root/.ssh/authorized_keys:ro",
        f"{ROOT}": f"{ROOT}:ro",
        f"{shared}": f"{shared}",
    }
    with booted(
        "systemd",
        "--cap-add",
        "SYS_ADMIN",
        "--security-opt",
        "seccomp=unconfined",
        *(arg for source, target in mounts.items() for arg in ("-v", f"{source}:{target}")),
        *venv_mounts(),
        ready=("ssh",),
    ) as (name, ip, run):
        host_key = docker("exec", name, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").rsplit(" ", 1)[0]
        yield {
            "name": name,
            "ip": ip,
            "key": key.read_text(),
            "key_path": str(key),
            "run": run,
            "host_key": host_key,
            "shared": str(shared),
        }


def require_lab_tools() -> None:
    require(os.geteuid() == 0, "root (the swarm lab starts Docker daemons in network namespaces)")
    missing = swarm_lab.missing_tools()
    require(not missing, f"{', '.join(missing)} (the swarm lab's tools)")


@pytest.fixture(scope="module")
def swarm(docker_engine: None) -> Iterator[swarm_lab.Lab]:
    """Two extra Docker daemons in network namespaces of their own, joined in a swarm, with a registry on the
    manager; torn down (and checked torn down) after the module's tests."""
    require_lab_tools()
    lab = swarm_lab.up(2)
    try:
        yield lab
    finally:
        assert swarm_lab.down(lab) == [], "the swarm lab left something behind"


CAPABILITIES = (  # capability(7)'s numbering, as /proc/<pid>/status gives the sets
    "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE "
    "NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN "
    "SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE "
    "MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE"
).split()


def missing_capabilities() -> list[str]:
    """The capabilities this machine's bounding set lacks, of those Docker's `ALL` names (up to AUDIT_READ in 20.10)."""
    status = Path("/proc/self/status").read_text()
    bounding = int(status.split("CapBnd:")[1].split()[0], 16)
    known = CAPABILITIES[: CAPABILITIES.index("AUDIT_READ") + 1]
    return [name for bit, name in enumerate(known) if not bounding >> bit & 1]


@pytest.fixture
def docker29_host(tmp_path: Path, docker_engine: None):
    """A container booting systemd whose docker.service is Docker Engine 29, built from its Go modules and cached by
    version (scripts/setup/docker29.sh; `make test` builds it before the tests). Privileged: a daemon in it makes
    namespaces, mounts and cgroups (every capability this machine has: `--privileged` asks for all, which a machine
    lacking one refuses). Its data root is a volume of its own (overlayfs cannot sit on the container's
    overlay root); its socket is also in a folder of the test's (`socket`), for this host's client. Without iptables
    in the test host's image the daemon runs with `--iptables=false`. Yields its name, address and that socket."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "setup" / "docker29.sh")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    engine = built.stdout.strip()
    sockets = tmp_path / "docker29"
    sockets.mkdir()
    with booted(
        "docker29",
        # what --privileged gives, but for the capabilities this machine lacks (CAP_SYS_RESOURCE here): the
        # daemon in it makes namespaces, mounts, cgroups and devices
        "--cap-add=ALL",
        *(f"--cap-drop={c}" for c in missing_capabilities()),
        "--security-opt",
        "seccomp=unconfined",
        "--security-opt",
        "apparmor=unconfined",
        "--security-opt",
        "systempaths=unconfined",
        "--device-cgroup-rule",
        "a *:* rwm",
        "-v",
        "/var/lib/docker",
        "-v",
        f"{engine}:/opt/docker29/bin:ro",
        "-v",
        f"{sockets}:/run/docker29",
    ) as (name, ip, run):
        unit = (
            "[Unit]\nDescription=Docker Engine 29 (agensh test host)\nAfter=network.target\n\n[Service]\nType=notify\n"
            "Environment=PATH=/opt/docker29/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
            "ExecStart=/opt/docker29/bin/dockerd --iptables=false --ip6tables=false "
            "-H unix:///run/docker.sock -H unix:///run/docker29/docker.sock\n"
            "[Install]\nWantedBy=multi-user.target\n"
        )
        docker("exec", "-i", name, "sh", "-c", "cat > /etc/systemd/system/docker.service", stdin=unit)
        docker("exec", name, "ln", "-s", "/opt/docker29/bin/docker", "/usr/local/bin/docker")  # its client, on PATH
        docker("exec", name, "systemctl", "daemon-reload")
        started = docker("exec", name, "systemctl", "start", "docker", check=False)
        state = docker("exec", name, "systemctl", "is-active", "docker", check=False)
        journal = docker("exec", name, "journalctl", "--no-pager", "-u", "docker", "-n", "40", check=False)
        assert state == "active", started + journal
        yield {"name": name, "ip": ip, "socket": str(sockets / "docker.sock"), "run": run}
