"""Extra Docker daemons on this machine: a Docker Swarm of N for the swarm tests and the benchmark, or one engine of
the fault harness's own, which it may restart (the machine's own daemon is never restarted).

    .venv/bin/python -m scripts.lab.swarm_lab up [--nodes 2] [--id ab12]   # prints the lab's description (JSON)
    .venv/bin/python -m scripts.lab.swarm_lab load ID IMAGE...                # images into the manager and its registry
    .venv/bin/python -m scripts.lab.swarm_lab down ID                         # removes everything the lab made

Each node is a `dockerd` in a network namespace of its own (`ip netns add`), started with `nsenter --net=...`
(`ip netns exec` remounts /sys and the daemon then finds no cgroups), with its own data root, exec root, pid file
and socket (and its own containerd, which it supervises). The namespaces hang on one host bridge of a free
10.31.Y.0/24 that nothing else uses; the only iptables rule the lab adds accepts forwarding on that bridge (Docker's
FORWARD policy is DROP), and no namespace has a default route: all traffic stays between the namespaces and the
host's end of the bridge. In a swarm the nodes have no default bridge; the first node is the swarm manager and runs
Debian's `docker-registry` on its bridge address; the others join as workers. Every node carries its name as the
node label contract.NODE_LABEL (their hostnames are all the same). A lone engine (`swarm=False`) keeps its default
bridge, inside its namespace, so that a stack builds and runs on it as on any host; whatever must reach its
containers' addresses runs in its namespace (`LabNode.enter`).

Everything made is recorded in `<state>/lab.json` as soon as it exists, so `down` removes exactly that (daemons,
registry, mounts, data roots, namespaces, bridge, iptables rule), also after a failed `up`.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel

from model import contract
from scripts.lab.sandbox import alive, claim_subnet
from scripts.lib.step import write_atomic

LAB_OCTET = 31  # the lab's underlay lives in 10.31.0.0/16, one /24 per lab
REGISTRY_PORT = 5000
STATE_ROOT = Path(os.environ.get("AGENSH_SWARM_LAB", Path.home() / ".agensh" / "swarm-lab"))
RUN_ROOT = Path("/run/agensh-swarm")  # exec roots and sockets: unix socket paths must stay short
DAEMON_START_S = 60


class LabNode(BaseModel):
    name: str  # n1, n2, ...
    netns: str
    address: str
    socket: str
    data_root: str
    exec_root: str
    pid: int | None = None
    node_id: str | None = None

    @property
    def enter(self) -> list[str]:
        """The prefix that runs a command in the node's network namespace, where its containers' addresses are."""
        return ["nsenter", f"--net=/var/run/netns/{self.netns}"]


class Lab(BaseModel):
    id: str
    state_dir: str
    subnet: str
    bridge: str
    host_address: str
    nodes: list[LabNode] = []
    registry_pid: int | None = None
    swarm: bool = True  # False: one engine on its own, with its default bridge
    forward_rule: list[str] | None = None  # the iptables rule spec (after `-I FORWARD` / `-D FORWARD`)

    @property
    def manager(self) -> LabNode:
        return self.nodes[0]

    @property
    def registry(self) -> str:
        return f"{self.manager.address}:{REGISTRY_PORT}"

    def docker(self, node: LabNode, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
        return run("docker", "-H", f"unix://{node.socket}", *args, check=check, **kw)

    def save(self) -> None:
        write_atomic(Path(self.state_dir) / "lab.json", self)  # `down` reads it after a crash: never half written

    def swarm_settings(self, memory_gib: float, cpus: float) -> dict:
        """The profile's `swarm` setting for this lab (model/settings.py: SwarmSettings)."""
        return {
            "docker_host": f"unix://{self.manager.socket}",
            "registry": self.registry,
            "build_network": "host",  # the daemons have no default bridge; `host` is the node's own namespace
            "nodes": [
                {
                    "name": n.name,
                    "address": n.address,
                    "role": "manager" if i == 0 else "worker",
                    "memory_gib": memory_gib,
                    "cpus": cpus,
                    "docker_host": f"unix://{n.socket}",
                }
                for i, n in enumerate(self.nodes)
            ],
        }


def run(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    out = subprocess.run(list(args), **kw)
    if check and out.returncode:
        raise RuntimeError(f"{' '.join(args[:6])} failed ({out.returncode}): {(out.stderr or '').strip()[-800:]}")
    return out


def say(message: str) -> None:
    print(f"swarm-lab: {message}", file=sys.stderr, flush=True)


TOOLS = ("dockerd", "nsenter", "ip", "iptables", "docker-registry")


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def free_subnet() -> ipaddress.IPv4Network:
    """A 10.31.Y.0/24 that no host route, no Docker network of the host and no other lab of this process uses."""
    net = claim_subnet(ipaddress.IPv4Network(f"10.{LAB_OCTET}.{y}.0/24") for y in range(1, 255))
    if net is None:
        raise RuntimeError(f"no free 10.{LAB_OCTET}.Y.0/24 for a swarm lab")
    return net


def load_lab(lab_id: str) -> Lab:
    return Lab.model_validate_json((STATE_ROOT / lab_id / "lab.json").read_text())


def up(nodes: int, lab_id: str | None = None, swarm: bool = True) -> Lab:
    """Build the lab (a swarm, or with `swarm=False` one engine on its own); on any failure remove what was made and
    re-raise."""
    if nodes < 2 if swarm else nodes != 1:
        raise ValueError(f"a swarm lab has at least 2 nodes, an engine on its own 1, not {nodes}")
    lab_id = lab_id or secrets.token_hex(2)
    if not lab_id.isalnum() or len(lab_id) > 6:
        raise ValueError(f"lab id {lab_id!r}: at most 6 letters or digits (interface names are short)")
    if missing := missing_tools():
        raise RuntimeError(
            f"{', '.join(missing)} missing (apt-get install docker.io iproute2 iptables util-linux docker-registry)"
        )
    subnet = free_subnet()
    lab = Lab(
        id=lab_id,
        state_dir=str(STATE_ROOT / lab_id),
        subnet=str(subnet),
        bridge=f"agsw{lab_id}",
        host_address=str(subnet.network_address + 1),
        swarm=swarm,
    )
    if (Path(lab.state_dir) / "lab.json").exists():
        raise RuntimeError(f"lab {lab_id} exists already ({lab.state_dir}); `down {lab_id}` first")
    lab.save()
    try:
        _network(lab, nodes)
        for node in lab.nodes:
            _daemon(lab, node)
        if swarm:
            _swarm(lab)
            _registry(lab)
    except BaseException:
        say("up failed; removing what was made")
        down(lab)
        raise
    return lab


def _network(lab: Lab, nodes: int) -> None:
    net = ipaddress.ip_network(lab.subnet)
    run("ip", "link", "add", lab.bridge, "type", "bridge")
    run("ip", "addr", "add", f"{lab.host_address}/{net.prefixlen}", "dev", lab.bridge)
    run("ip", "link", "set", lab.bridge, "up")
    lab.forward_rule = [
        "-i",
        lab.bridge,
        "-o",
        lab.bridge,
        "-m",
        "comment",
        "--comment",
        f"agensh-swarm-lab-{lab.id}",
        "-j",
        "ACCEPT",
    ]
    run("iptables", "-I", "FORWARD", "1", *lab.forward_rule)
    lab.save()
    for i in range(1, nodes + 1):
        name = f"n{i}"
        node = LabNode(
            name=name,
            netns=f"agensh-swarm-{lab.id}-{name}",
            address=str(net.network_address + 10 + i),
            socket=str(RUN_ROOT / lab.id / name / "docker.sock"),
            data_root=str(Path(lab.state_dir) / name / "docker"),
            exec_root=str(RUN_ROOT / lab.id / name),
        )
        run("ip", "netns", "add", node.netns)
        lab.nodes.append(node)
        lab.save()
        host_end, peer = f"{lab.bridge}{name}", f"{lab.bridge}p{i}"
        run("ip", "link", "add", host_end, "type", "veth", "peer", "name", peer)
        run("ip", "link", "set", peer, "netns", node.netns)
        run("ip", "link", "set", host_end, "master", lab.bridge)
        run("ip", "link", "set", host_end, "up")
        ns = ["ip", "netns", "exec", node.netns]  # only for `ip` itself; the daemons are started with nsenter
        run(*ns, "ip", "link", "set", "lo", "up")
        run(*ns, "ip", "link", "set", peer, "name", "eth0")
        run(*ns, "ip", "addr", "add", f"{node.address}/{net.prefixlen}", "dev", "eth0")
        run(*ns, "ip", "link", "set", "eth0", "up")


def _daemon(lab: Lab, node: LabNode) -> None:
    Path(node.exec_root).mkdir(parents=True, exist_ok=True)
    Path(node.data_root).mkdir(parents=True, exist_ok=True)
    log = open(Path(lab.state_dir) / node.name / "dockerd.log", "ab")
    proc = subprocess.Popen(
        [
            *node.enter,
            "dockerd",
            "--data-root",
            node.data_root,
            "--exec-root",
            node.exec_root,
            "--pidfile",
            f"{node.exec_root}/dockerd.pid",
            "-H",
            f"unix://{node.socket}",
            *(["--bridge", "none", "--insecure-registry", lab.subnet] if lab.swarm else []),
            "--log-level",
            "warn",
        ],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    node.pid = proc.pid  # nsenter execs dockerd: the same process
    lab.save()
    deadline = time.monotonic() + DAEMON_START_S
    while lab.docker(node, "info", check=False).returncode:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"dockerd of {node.name} did not start; see {log.name}")
        time.sleep(0.5)
    say(f"{node.name}: dockerd in {node.netns} at {node.address} ({node.socket})")


def restart(lab: Lab, node: LabNode) -> None:
    """Restart a node's daemon as a host's service manager would: SIGTERM (the daemon stops its containers, as it does
    without live-restore), wait for it to exit, start it again with the same settings."""
    _stop(node.pid, 60)
    deadline = time.monotonic() + 30
    while node.pid and alive(node.pid) and time.monotonic() < deadline:  # after a SIGKILL: gone before the new one
        time.sleep(0.2)
    _daemon(lab, node)


def _swarm(lab: Lab) -> None:
    m = lab.manager
    lab.docker(m, "swarm", "init", "--advertise-addr", m.address, "--listen-addr", f"{m.address}:2377")
    token = lab.docker(m, "swarm", "join-token", "-q", "worker").stdout.strip()
    for node in lab.nodes[1:]:
        lab.docker(node, "swarm", "join", "--token", token, "--advertise-addr", node.address, f"{m.address}:2377")
    for node in lab.nodes:
        node.node_id = lab.docker(node, "info", "-f", "{{.Swarm.NodeID}}").stdout.strip()
        lab.docker(m, "node", "update", "--label-add", f"{contract.NODE_LABEL}={node.name}", node.node_id)
    lab.save()
    say(f"swarm: manager {m.name}, workers {', '.join(n.name for n in lab.nodes[1:])}")


def _registry(lab: Lab) -> None:
    m = lab.manager
    root = Path(lab.state_dir) / "registry"
    root.mkdir(parents=True, exist_ok=True)
    config = root / "config.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"  delete:\n    enabled: true\nhttp:\n  addr: {lab.registry}\n"
    )
    log = open(root / "registry.log", "ab")
    proc = subprocess.Popen(
        [*m.enter, "docker-registry", "serve", str(config)],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    lab.registry_pid = proc.pid
    lab.save()
    deadline = time.monotonic() + 30
    while run("curl", "-fsS", f"http://{lab.registry}/v2/", check=False).returncode:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the registry did not start; see {log.name}")
        time.sleep(0.3)
    say(f"registry: {lab.registry} (on {m.name})")


def load(lab: Lab, images: list[str]) -> dict[str, str]:
    """Each image of this machine's engine into the manager (`docker save | docker load`), where the stack finds it
    as if pulled; returns image -> its image id there."""
    out = {}
    for image in images:
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        lab.docker(lab.manager, "load", "-q", stdin=save.stdout, text=False)
        if save.wait():
            raise RuntimeError(f"docker save {image} failed")
        out[image] = lab.docker(lab.manager, "image", "inspect", "-f", "{{.Id}}", image).stdout.strip()
        say(f"loaded {image} into {lab.manager.name}")
    return out


def demo_images(standin_tag: str = "demo") -> list[str]:
    """What a demo-profile stack on the lab expects on the manager as pulled (scripts/setup/demo_images.py builds them
    here): the stand-in base of the checkout's images and the Mattermost stand-in (by `standin_tag`), the real MariaDB
    and Gitea images, the Copilot CLI the agent base image copies, the task's cleanroom."""
    from scripts.lab.sandbox import profile_config
    from scripts.setup.copilot_cli import image_name
    from scripts.setup.demo_images import standin_images
    from scripts.setup.service_images import GITEA_IMAGE, MARIADB_IMAGE

    cfg = profile_config("demo.profile.yaml")
    cleanroom = [contract.cleanroom_image(t, cfg["agensh:cleanroom_org"]) for t in cfg["agensh:tasks"]]
    copilot = image_name(str(cfg["agensh:copilot_version"]))
    return [*standin_images(standin_tag), MARIADB_IMAGE, GITEA_IMAGE, copilot, *cleanroom]


def _stop(pid: int | None, wait_s: float) -> None:
    """SIGTERM, then SIGKILL after `wait_s` seconds."""
    if not pid or not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def _mounts_under(roots: list[str]) -> list[str]:
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return sorted(
        {p for p in points if any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)}, key=len, reverse=True
    )


def down(lab: Lab) -> list[str]:
    """Remove everything the lab recorded; every stage runs even when an earlier one fails. Returns the problems."""
    problems: list[str] = []

    def stage(what: str, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as err:  # noqa: BLE001 - the next stages still run; the problem is reported
            problems.append(f"{what}: {err}")

    for node in reversed(lab.nodes):  # services and containers first, while the daemons answer
        stage(f"{node.name}: swarm and containers", _empty, lab, node)
    stage("registry", _stop, lab.registry_pid, 10)
    for node in lab.nodes:
        stage(f"{node.name}: dockerd", _stop, node.pid, 30)
        for pid in run("ip", "netns", "pids", node.netns, check=False).stdout.split():  # left-over shims
            stage(f"{node.name}: process {pid}", _stop, int(pid), 5)
    for point in _mounts_under([lab.state_dir, *(n.exec_root for n in lab.nodes)]):
        stage(f"umount {point}", run, "umount", "-l", point)
    for node in lab.nodes:
        if Path(f"/var/run/netns/{node.netns}").exists():
            stage(f"netns {node.netns}", run, "ip", "netns", "delete", node.netns)
    if run("ip", "link", "show", lab.bridge, check=False).returncode == 0:
        stage(f"bridge {lab.bridge}", run, "ip", "link", "delete", lab.bridge)
    if lab.forward_rule:
        for _ in range(10):  # the lab inserted it once; remove every copy of exactly that rule
            if run("iptables", "-C", "FORWARD", *lab.forward_rule, check=False).returncode:
                break
            stage("iptables rule", run, "iptables", "-D", "FORWARD", *lab.forward_rule)
    shutil.rmtree(RUN_ROOT / lab.id, ignore_errors=True)
    if _mounts_under([lab.state_dir]):
        problems.append(f"{lab.state_dir} still has mounts; left in place")
    else:
        shutil.rmtree(lab.state_dir, ignore_errors=True)
    for problem in problems:
        say(f"down: {problem}")
    say(f"lab {lab.id} removed" if not problems else f"lab {lab.id}: {len(problems)} problem(s) left")
    return problems


def _empty(lab: Lab, node: LabNode) -> None:
    """Services (manager), the swarm membership and every container of a node whose daemon answers."""
    if not node.pid or lab.docker(node, "info", check=False).returncode:
        return
    if lab.swarm:
        if node is lab.manager:
            ids = lab.docker(node, "service", "ls", "-q", check=False).stdout.split()
            if ids:
                lab.docker(node, "service", "rm", *ids, check=False)
        lab.docker(node, "swarm", "leave", "--force", check=False)
    ids = lab.docker(node, "ps", "-aq", check=False).stdout.split()
    if ids:
        lab.docker(node, "rm", "-f", *ids, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="swarm_lab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--nodes", type=int, default=2)
    p_up.add_argument("--id")
    p_load = sub.add_parser("load")
    p_load.add_argument("id")
    p_load.add_argument("images", nargs="+")
    p_down = sub.add_parser("down")
    p_down.add_argument("id")
    a = parser.parse_args(argv)
    if a.cmd == "up":
        print(up(a.nodes, a.id).model_dump_json(indent=2))
    elif a.cmd == "load":
        print(json.dumps(load(load_lab(a.id), a.images), indent=2))
    else:
        return 1 if down(load_lab(a.id)) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
