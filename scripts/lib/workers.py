"""A team's workers as containers (or, on a swarm, one-replica services): is one running, start one."""

from __future__ import annotations

import subprocess


def running(name: str, service: bool) -> bool:
    """Started already: the container runs, or the service was scaled to its task."""
    if service:
        out = subprocess.run(
            ["docker", "service", "inspect", "-f", "{{.Spec.Mode.Replicated.Replicas}}", name],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() == "1"
    out = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", name], capture_output=True, text=True)
    return out.stdout.strip() == "true"


def start_worker(name: str, service: bool) -> subprocess.CompletedProcess[str]:
    """`docker start`, or on a swarm the scale to one task (returning once the task is scheduled, as `docker start`
    returns once the process is)."""
    cmd = ["docker", "service", "scale", "--detach", f"{name}=1"] if service else ["docker", "start", name]
    return subprocess.run(cmd, capture_output=True, text=True)
