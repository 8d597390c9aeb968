"""A team's members as containers or, on a swarm, as one-replica services: which a name is, is one running, start
one, stop some.

Which a member is, is asked of the Docker API the step is given (a swarm's manager, or this host's Docker), never read
from the step's inputs: those are in every running stack's state, and the engine is not theirs to say."""

from __future__ import annotations

import functools
import subprocess

NOT_A_MANAGER = "not a swarm manager"  # what Docker answers service commands with on a host that runs no swarm


@functools.cache
def _services() -> frozenset[str]:
    """The services the Docker API knows, asked once per program (a team's are made before its steps run). A failed
    answer other than "no swarm here" is not kept: the next question asks again."""
    out = subprocess.run(["docker", "service", "ls", "--format", "{{.Name}}"], capture_output=True, text=True)
    if out.returncode == 0:
        return frozenset(out.stdout.split())
    if NOT_A_MANAGER in out.stderr:
        return frozenset()
    raise OSError(out.stderr.strip() or f"docker service ls exited {out.returncode}")


def is_service(name: str) -> bool:
    """Whether a member is a service; a Docker that cannot be asked counts as no swarm (the command that follows then
    fails as it would have, and the next question asks again)."""
    try:
        return name in _services()
    except OSError:
        return False


def running(name: str) -> bool:
    """Started already: the container runs, or the service was scaled to its task."""
    if is_service(name):
        out = subprocess.run(
            ["docker", "service", "inspect", "-f", "{{.Spec.Mode.Replicated.Replicas}}", name],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() == "1"
    out = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", name], capture_output=True, text=True)
    return out.stdout.strip() == "true"


def start_worker(name: str) -> subprocess.CompletedProcess[str]:
    """`docker start`, or on a swarm the scale to one task (returning once the task is scheduled, as `docker start`
    returns once the process is)."""
    cmd = ["docker", "service", "scale", "--detach", f"{name}=1"] if is_service(name) else ["docker", "start", name]
    return subprocess.run(cmd, capture_output=True, text=True)


def stop(names: list[str], grace_s: int) -> None:
    """`docker stop -t grace` for containers; services are scaled to 0 (their stop period is the grace) and this waits
    until their tasks have stopped."""
    services = [n for n in names if is_service(n)]
    containers = [n for n in names if n not in services]
    if services:
        subprocess.run(
            ["docker", "service", "scale", "--detach=false", *(f"{n}=0" for n in services)],
            capture_output=True,
            text=True,
        )
    if containers:
        subprocess.run(["docker", "stop", "-t", str(grace_s), *containers], capture_output=True, text=True)
