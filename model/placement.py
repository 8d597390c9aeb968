"""Where each container of a swarm profile runs: the plan computed from the nodes and the placement policy.

A profile with `engine: swarm` spreads one team over the nodes of a Docker Swarm. The platform services (the role
table's roles that are not per task) run on one node: the manager, or the first node carrying the label the policy
names; their data stays on that node. Each router runs beside its worker, and the pairs of a task are spread over
the nodes in proportion to what each node can take: a node's limit comes from its memory (the slice's share of it,
times the allowed overcommit, less the platform's share where the platform runs) divided by a pair's memory
ceilings, from its CPUs divided by what a pair counts for, and from the profile's own ceiling per node. Tasks run one
after another, so every task's team gets the same nodes.

The plan is computed here, before anything is created (`python -m scripts.cli plan` prints it); the profile refuses a
plan that does not fit, and the policy pack checks the rendered services with `fit_problem` (the same rule and numbers,
handed over through the policy config `Profile.policy_config` writes). The nodes and the policy are settings of
the profile (`settings.py`), and the plan reads the settings alone, nothing derived from them. Pure: no Pulumi
imports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import contract
from .roles import ROLES
from .settings import MANAGER, ProfileSettings, SwarmNode, SwarmSettings


@dataclass(frozen=True)
class Capacity:
    """What a team may commit on one node (platform not yet subtracted)."""

    memory_mb: int
    cpus: float
    max_members: int | None = None


@dataclass(frozen=True)
class Load:
    """What is committed on one node at once: memory ceilings, CPUs counted, router+worker pairs."""

    memory_mb: int = 0
    cpus: float = 0.0
    pairs: int = 0

    def __add__(self, other: Load) -> Load:
        return Load(self.memory_mb + other.memory_mb, self.cpus + other.cpus, self.pairs + other.pairs)


def capacity(node: SwarmNode, s: SwarmSettings, slice_memory_percent: int) -> Capacity:
    memory = node.memory_gib * contract.GIB_MB * slice_memory_percent / 100 * s.memory_overcommit
    return Capacity(memory_mb=math.floor(memory), cpus=node.cpus, max_members=s.max_members_per_node)


def platform_load(s: SwarmSettings) -> Load:
    return Load(memory_mb=round(s.platform_memory_gib * contract.GIB_MB), cpus=s.platform_cpus)


def pair_load(p: ProfileSettings, s: SwarmSettings) -> Load:
    """A worker and its router: their memory ceilings and the CPUs they count for."""
    return Load(
        memory_mb=(p.worker_memory_gib + p.router_memory_gib) * contract.GIB_MB,
        cpus=s.worker_cpus + s.router_cpus,
        pairs=1,
    )


def pair_limit(cap: Capacity, pair: Load, platform: Load | None) -> int:
    """How many pairs fit a node of this capacity (with the platform when it runs there)."""
    base = platform or Load()
    by_memory = (cap.memory_mb - base.memory_mb) // pair.memory_mb
    by_cpu = math.floor((cap.cpus - base.cpus) / pair.cpus + 1e-9)
    limit = min(by_memory, by_cpu, cap.max_members if cap.max_members is not None else by_memory)
    return max(0, int(limit))


def fit_problem(node: str, cap: Capacity, load: Load) -> str | None:
    """The rule: what is committed on a node at once stays within its capacity (the plan and the policy pack)."""
    out = []
    if load.memory_mb > cap.memory_mb:
        out.append(f"memory ceilings add up to {load.memory_mb} MB, the node allows {cap.memory_mb} MB")
    if load.cpus > cap.cpus + 1e-9:
        out.append(f"{load.cpus:g} CPUs counted, the node has {cap.cpus:g}")
    if cap.max_members is not None and load.pairs > cap.max_members:
        out.append(f"{load.pairs} router+worker pairs, the profile allows {cap.max_members} per node")
    return f"node {node!r}: " + "; ".join(out) if out else None


def platform_node(s: SwarmSettings) -> SwarmNode | None:
    """The node the platform services run on: the manager, or the first node with the label platform_on names."""
    if s.platform_on == MANAGER:
        return s.manager
    key, _, value = s.platform_on.partition("=")
    return next((n for n in s.nodes if n.labels.get(key) == value), None)


@dataclass
class NodePlan:
    node: SwarmNode
    capacity: Capacity
    limit: int  # router+worker pairs this node takes
    platform: bool
    members: list[int] = field(default_factory=list)  # worker numbers (1-based) whose pair runs here

    def load(self, p: ProfileSettings, s: SwarmSettings) -> Load:
        pair = pair_load(p, s)
        n = len(self.members)
        return (platform_load(s) if self.platform else Load()) + Load(pair.memory_mb * n, pair.cpus * n, n)


@dataclass
class Plan:
    nodes: list[NodePlan]
    unplaced: list[int]  # worker numbers that fit no node

    @property
    def fits(self) -> bool:
        return not self.unplaced

    def node_of(self, role: str, index: int | None) -> str:
        """The node a container of this role (and worker number, for routers and workers) runs on."""
        if not ROLES[role].per_task:
            return next(n.node.name for n in self.nodes if n.platform)
        return next(n.node.name for n in self.nodes if index in n.members)


def plan(p: ProfileSettings) -> Plan:
    """Spread the pairs: each next pair goes to the node with the lowest share of its limit used (ties: the order of
    the nodes in the profile), so pairs spread in proportion to what each node can take."""
    s = p.swarm
    assert s is not None, "plan() is for profiles with engine: swarm"
    where = platform_node(s)
    pair = pair_load(p, s)
    nodes = []
    for node in s.nodes:
        cap = capacity(node, s, p.slice_memory_percent)
        here = where is not None and node.name == where.name
        nodes.append(NodePlan(node, cap, pair_limit(cap, pair, platform_load(s) if here else None), here))
    unplaced = []
    for n in range(1, p.workers + 1):
        open_nodes = [x for x in nodes if len(x.members) < x.limit]
        if not open_nodes:
            unplaced.append(n)
            continue
        min(open_nodes, key=lambda x: len(x.members) / x.limit).members.append(n)
    return Plan(nodes, unplaced)


def reference_node(s: SwarmSettings) -> SwarmNode:
    """The size hosts are counted in: the profile's first worker node, or the manager when it is alone."""
    return next((n for n in s.nodes if n.role == "worker"), s.manager)


def hosts_needed(p: ProfileSettings) -> int | None:
    """How many hosts the team needs: the platform's node plus as many more as the pairs left over take, all of the
    reference node's size (None: a host of that size takes no pair)."""
    s = p.swarm
    assert s is not None
    size = reference_node(s)
    cap = capacity(size, s, p.slice_memory_percent)
    pair = pair_load(p, s)
    on_platform = pair_limit(cap, pair, platform_load(s))
    per_node = pair_limit(cap, pair, None)
    if p.workers <= on_platform:
        return 1
    if per_node == 0:
        return None
    return 1 + math.ceil((p.workers - on_platform) / per_node)


def needs(p: ProfileSettings) -> str:
    """The hosts the team needs, in words."""
    size, needed = reference_node(p.swarm), hosts_needed(p)  # type: ignore[arg-type]
    if needed is None:
        return f"a host of {size.memory_gib:g} GiB and {size.cpus:g} CPUs takes no router+worker pair"
    return f"the team needs {needed} hosts of {size.memory_gib:g} GiB and {size.cpus:g} CPUs"


def problems(p: ProfileSettings) -> list[tuple[str, str]]:
    """The swarm settings' own rules, as (profile key, problem)."""
    s = p.swarm
    if p.engine == "docker":
        return [("swarm", "set engine: swarm to use the swarm settings")] if s is not None else []
    if s is None:
        return [("swarm", "engine: swarm needs the swarm settings (docker_host, registry, nodes)")]
    out: list[tuple[str, str]] = []
    if p.kind != "team":
        out.append(("engine", "a baseline runs on one host (engine: docker)"))
    managers = [n.name for n in s.nodes if n.role == "manager"]
    if len(managers) != 1:
        out.append(("swarm.nodes", f"exactly one node is the manager, not {len(managers)} ({', '.join(managers)})"))
    names = [n.name for n in s.nodes]
    if len(set(names)) != len(names):
        out.append(("swarm.nodes", f"node names repeat: {sorted({x for x in names if names.count(x) > 1})}"))
    if s.platform_on != MANAGER and "=" not in s.platform_on:
        out.append(("swarm.platform_on", f"{s.platform_on!r}: `manager` or a node label `key=value`"))
    elif len(managers) == 1 and platform_node(s) is None:
        out.append(("swarm.platform_on", f"no node carries the label {s.platform_on}"))
    if p.host_units == "remote":
        out.append(("host_units", "on a swarm host units go on every node: `local` (each node's ssh_host) or `off`"))
    if p.host_units == "local":
        out += [
            ("swarm.nodes", f"node {n.name!r} needs ssh_host for its host units (or host_units: off)")
            for n in s.nodes
            if n.role != "manager" and not n.ssh_host
        ]
    out += [
        (
            "swarm.nodes",
            f"node {n.name!r} needs docker_host or ssh_host: the steps make its data directories "
            "and collect its workers' archives through its Docker API",
        )
        for n in s.nodes
        if s.docker_host_of(n) is None and not (p.host_units == "local" and not n.ssh_host)
    ]
    if out:
        return out
    made = plan(p)
    if not made.fits:
        limits = ", ".join(f"{x.node.name} {x.limit}" for x in made.nodes)
        out.append(
            (
                "swarm.nodes",
                f"{p.workers} router+worker pairs do not fit: the nodes take {limits} "
                f"({sum(x.limit for x in made.nodes)}); {needs(p)}",
            )
        )
    return out


def policy_config(p: ProfileSettings) -> dict[str, object]:
    """The numbers the policy pack's swarm-placement rule checks the rendered services against."""
    s = p.swarm
    assert s is not None
    where = platform_node(s)
    caps = {n.name: capacity(n, s, p.slice_memory_percent) for n in s.nodes}
    return {
        "nodes": {
            name: {"memoryMb": c.memory_mb, "cpus": c.cpus, "maxMembers": c.max_members} for name, c in caps.items()
        },
        "platformNode": where.name if where else None,
        "platformMemoryMb": platform_load(s).memory_mb,
        "platformCpus": s.platform_cpus,
        "workerCpus": s.worker_cpus,
        "routerCpus": s.router_cpus,
    }
