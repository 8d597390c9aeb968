"""The lab host of a researcher's shape: systemd as PID 1 running Docker Engine 29, built from its Go modules
(scripts/setup/docker29.sh). What the engine is, and what it does with the project's images and containers: the
figures are printed for the record (`pytest -s`), the facts the project relies on asserted."""

from __future__ import annotations

import json
import subprocess

from scripts.setup.calculator import BASE_IMAGE
from tests.integration.conftest import docker


def test_the_lab_host_runs_docker_29_with_the_projects_containers(docker29_host, base_image: str):
    """Docker 29 answers inside the host (server 29.x, its minimum API printed) and to this machine's client through
    its socket; the project's base image loads into its containerd image store and runs sandboxed as the
    workers are (no network, every capability dropped, no-new-privileges, a pids limit, a read-only root)."""
    name = docker29_host["name"]
    shown = docker("exec", name, "docker", "version")
    print(shown)
    version = json.loads(docker("exec", name, "docker", "version", "--format", "{{json .}}"))
    server, client = version["Server"], version["Client"]
    assert server["Version"].startswith("29.") and client["Version"].startswith("29."), version
    print(f"server {server['Version']}, API {server['ApiVersion']} (minimum {server['MinAPIVersion']})")
    info = json.loads(docker("exec", name, "docker", "info", "--format", "{{json .}}"))
    print(f"storage {info['Driver']}, cgroup {info['CgroupDriver']} v{info['CgroupVersion']}")
    assert info["CgroupDriver"] in ("cgroupfs", "systemd")

    ours = subprocess.run(
        ["docker", "-H", f"unix://{docker29_host['socket']}", "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
    )
    mine = docker("version", "--format", "{{.Client.Version}} (API {{.Client.APIVersion}})")
    print(f"this machine's client {mine} against it: exit {ours.returncode}: {(ours.stdout + ours.stderr).strip()}")
    assert ours.returncode == 0 and ours.stdout.strip() == server["Version"], ours.stderr

    saved = subprocess.run(["docker", "save", BASE_IMAGE], capture_output=True, check=True)
    loaded = subprocess.run(["docker", "exec", "-i", name, "docker", "load"], input=saved.stdout, capture_output=True)
    assert loaded.returncode == 0, loaded.stderr.decode()
    ids = {
        "classic store (this machine)": docker("image", "inspect", "-f", "{{.Id}}", BASE_IMAGE),
        "containerd store (Docker 29)": docker("exec", name, "docker", "image", "inspect", "-f", "{{.Id}}", BASE_IMAGE),
    }
    print(f"{BASE_IMAGE}: " + "; ".join(f"{k} {v}" for k, v in ids.items()))
    sandboxed = docker(
        "exec", name, "docker", "run", "--rm", "--network", "none", "--cap-drop", "ALL", "--security-opt",
        "no-new-privileges", "--pids-limit", "64", "--read-only", BASE_IMAGE,
        "python3", "-c", "import os; print(os.getuid(), open('/proc/self/status').read().count('NoNewPrivs:\\t1'))",
    )  # fmt: skip
    assert sandboxed == "0 1", sandboxed
