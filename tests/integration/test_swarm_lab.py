"""The swarm lab itself: two nodes in a swarm with their labels, an internal attachable overlay network whose tasks
on different nodes talk to each other by name and reach nothing else, an image through the manager's registry by
digest, and a teardown that leaves nothing on the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from model.project import ROOT
from scripts.lab import sandbox, swarm_lab

PROBE = """
import json, socket, sys, urllib.request
ips = sorted(socket.gethostbyname_ex(sys.argv[1])[2])
statuses = [urllib.request.urlopen(f"http://{ip}:8080/", timeout=5).status for ip in ips]
try:
    urllib.request.urlopen(f"http://{sys.argv[2]}:22/", timeout=3)
    outside = "reached"
except OSError as err:
    outside = type(err).__name__
print(json.dumps({"ips": ips, "statuses": statuses, "outside": outside}))
"""
MEMBERS = """
import json, sys
from scripts.lib.workers import is_service
print(json.dumps({n: is_service(n) for n in sys.argv[1:]}))
"""


def wait_running(lab: swarm_lab.Lab, service: str, replicas: int, timeout: float = 120) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        tasks = lab.docker(
            lab.manager,
            "service",
            "ps",
            service,
            "--filter",
            "desired-state=running",
            "--format",
            "{{.Node}} {{.CurrentState}}",
        ).stdout.splitlines()
        if sum(t.split()[1] == "Running" for t in tasks) == replicas:
            return tasks
        assert time.monotonic() < deadline, tasks
        time.sleep(2)


def members(socket: str, *names: str) -> dict[str, bool]:
    """Whether each name is a service, as a step reaching that node's Docker API finds it."""
    asked = subprocess.run(
        [sys.executable, "-c", MEMBERS, *names],
        env=dict(os.environ, DOCKER_HOST=f"unix://{socket}"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(asked.stdout)


def test_two_nodes_talk_over_an_internal_overlay_and_nothing_else(swarm: swarm_lab.Lab, base_image: str):
    """(Any image with python3 serves the probe: the base image every test builds, never one only `make demo` makes.)"""
    lab = swarm
    nodes = json.loads(lab.docker(lab.manager, "node", "inspect", *(n.node_id for n in lab.nodes)).stdout)
    assert sorted(n["Spec"]["Labels"]["agensh.node"] for n in nodes) == ["n1", "n2"]
    assert {n["Spec"]["Role"] for n in nodes} == {"manager", "worker"}

    swarm_lab.load(lab, [base_image])
    pushed = f"{lab.registry}/{base_image}"
    lab.docker(lab.manager, "tag", base_image, pushed)
    lab.docker(lab.manager, "push", pushed)
    digest = lab.docker(lab.manager, "image", "inspect", "-f", "{{index .RepoDigests 0}}", pushed).stdout.strip()
    assert digest.startswith(f"{lab.registry}/") and "@sha256:" in digest

    net, svc = f"probe-{uuid.uuid4().hex[:6]}", "probe"
    lab.docker(
        lab.manager,
        "network",
        "create",
        "-d",
        "overlay",
        "--internal",
        "--attachable",
        "--subnet",
        "10.200.7.0/24",
        net,
    )
    lab.docker(
        lab.manager,
        "service",
        "create",
        "-d",
        "--name",
        svc,
        "--replicas",
        "2",
        "--network",
        net,
        "--replicas-max-per-node",
        "1",
        "--restart-condition",
        "none",
        digest,
        "python3",
        "-m",
        "http.server",
        "8080",
    )
    tasks = wait_running(lab, svc, 2)
    assert len(tasks) == 2
    # the steps ask the Docker API they are given whether a member is a service: the manager knows, a worker does not
    assert members(lab.manager.socket, svc, "probe-none") == {svc: True, "probe-none": False}
    assert members(lab.nodes[1].socket, svc, "probe-none") == {svc: False, "probe-none": False}
    on_n2 = lab.docker(lab.nodes[1], "ps", "-q", "--filter", f"name={svc}").stdout.split()
    assert len(on_n2) == 1  # one task per node, so the probe below crosses nodes
    out = json.loads(
        lab.docker(lab.nodes[1], "exec", on_n2[0], "python3", "-c", PROBE, f"tasks.{svc}", lab.host_address).stdout
    )
    assert len(out["ips"]) == 2 and all(ip.startswith("10.200.7.") for ip in out["ips"]), out
    assert out["statuses"] == [200, 200], out  # both tasks answer by name, one of them on the other node
    assert out["outside"] != "reached", out  # the internal overlay reaches neither the host nor anything else


def test_down_leaves_nothing(docker_engine: None, tmp_path: Path):
    """A lab of its own, taken down: no namespace, bridge, iptables rule, daemon, mount or directory is left."""
    from tests.integration.conftest import require_lab_tools

    require_lab_tools()
    lab = swarm_lab.up(2)
    problems = swarm_lab.down(lab)
    assert problems == []
    assert not any(
        n.netns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout for n in lab.nodes
    )
    assert subprocess.run(["ip", "link", "show", lab.bridge], capture_output=True).returncode != 0
    assert (
        f"agensh-swarm-lab-{lab.id}"
        not in subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True).stdout
    )
    assert not any(sandbox.alive(pid) for pid in [lab.registry_pid, *(n.pid for n in lab.nodes)] if pid)
    assert lab.state_dir not in Path("/proc/self/mountinfo").read_text()
    assert not Path(lab.state_dir).exists() and not (swarm_lab.RUN_ROOT / lab.id).exists()


def test_an_engine_of_its_own_restarts_like_a_host_daemon(docker_engine: None, base_image: str):
    """The fault harness's engine (one daemon, no swarm, its own default bridge): a container runs on it and answers
    on its address from the engine's namespace only; a restart stops it (no live-restore) and the engine comes back
    with its networks and containers, the container startable again; `down` leaves nothing."""
    from scripts.setup.calculator import BASE_IMAGE
    from tests.integration.conftest import require_lab_tools

    require_lab_tools()
    lab = swarm_lab.up(1, swarm=False)
    try:
        node = lab.manager
        swarm_lab.load(lab, [BASE_IMAGE])
        lab.docker(node, "network", "create", "--internal", "--subnet", "10.201.7.0/24", "probe")
        server = [BASE_IMAGE, "python3", "-m", "http.server", "8080"]
        lab.docker(node, "run", "-d", "--name", "probe", "--network", "probe", "--ip", "10.201.7.5", *server)
        answer = ["curl", "-fsS", "-o", "/dev/null", "--retry", "20", "--retry-connrefused", "--retry-delay", "1"]
        assert run(*node.enter, *answer, "http://10.201.7.5:8080/").returncode == 0
        before = node.pid
        swarm_lab.restart(lab, node)
        assert node.pid != before and not sandbox.alive(before)
        state = lab.docker(node, "inspect", "-f", "{{.State.Running}} {{.RestartCount}}", "probe").stdout.split()
        assert state == ["false", "0"]  # stopped by the restart, not started again by itself
        lab.docker(node, "start", "probe")
        assert "probe" in lab.docker(node, "network", "ls", "--format", "{{.Name}}").stdout.split()
        assert lab.docker(node, "inspect", "-f", "{{.State.Running}}", "probe").stdout.strip() == "true"
    finally:
        assert swarm_lab.down(lab) == [], "the engine left something behind"
    assert not Path(lab.state_dir).exists() and not sandbox.alive(node.pid or 0)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True)
