"""The container plan: every container of a profile as each engine runs it, computed once: which container waits for
which (and until it is started, healthy or done), and each container's rendered settings (its spec on the node that
runs it, labels, networks with their addresses and aliases, published port, health check and its timing, restart
policy, secrets given as files, stop grace).

One plan for all its renderers: `components/containers.py` (a Docker container on one host), `components/swarm.py`
(a swarm service, or the one-shot container on the manager), `components/platform.py` (the start order) and the
bench's plain and Compose sides (`scripts/lab/bench.py`); the renderers translate a `PlannedContainer` field by field
and derive nothing of their own. The images are `image_plan.py`'s.

Pure Python, no Pulumi.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from . import contract, placement
from .profile import Profile
from .roles import ROLES
from .services import Mount, ServiceSpec, spec
from .settings import SwarmNode
from .topology import Layout, Placement, platform_placements

RESTART = "no"  # no engine restarts a container: the steps decide what runs (a swarm's restart condition `none`)
MODEL_SECRET_KEY = "llm_upstream_token"  # on a swarm a file (a docker.Secret), never the environment
SECRETS_DIR = "/run/secrets"


@dataclass(frozen=True)
class Health:
    """A container's health check and how often its engine runs it (Docker's and the swarm's the same)."""

    test: tuple[str, ...]
    interval: str
    timeout: str
    retries: int
    start_period: str

    def timing(self) -> dict[str, str | int]:
        """interval, timeout, retries and start_period, as the engines' health check arguments name them."""
        return {
            "interval": self.interval,
            "timeout": self.timeout,
            "retries": self.retries,
            "start_period": self.start_period,
        }


def health(s: ServiceSpec) -> Health | None:
    """Checked every 5 s and waited for up to 30 tries; a router (`ready_at_wake`) every 30 s, 3 tries (its wake step
    waits for it instead)."""
    if not s.healthcheck:
        return None
    if s.ready_at_wake:
        return Health(s.healthcheck, interval="30s", timeout="3s", retries=3, start_period="5s")
    return Health(s.healthcheck, interval="5s", timeout="3s", retries=30, start_period="5s")


Condition = Literal["completed", "healthy", "started"]


def condition(s: ServiceSpec) -> Condition:
    """Until when a container that waits for one with this spec waits: a one-shot container until it is done, one the
    engine waits for (`ServiceSpec.waited`) until it is healthy, any other until it is started."""
    return "completed" if s.one_shot else "healthy" if s.waited else "started"


@dataclass(frozen=True)
class Wait:
    """A container this one waits for (the container's name and role) and until when."""

    name: str
    role: str
    condition: Condition


@dataclass(frozen=True)
class Attachment:
    """A network a container joins (by kind), its fixed address there (one host; none on a swarm) and its aliases."""

    network: str
    address: str | None
    aliases: tuple[str, ...] | None


@dataclass(frozen=True)
class Published:
    """A port published for the steps: on 127.0.0.1 of one host, on a swarm in host mode on the node."""

    internal: int
    external: int


@dataclass(frozen=True)
class PlannedContainer:
    placement: Placement
    spec: ServiceSpec  # on a swarm: as the node that runs it sees it (its data under the node's data root)
    labels: dict[str, str]  # the container's (on a swarm with the node's label)
    networks: tuple[Attachment, ...]  # in the order it attaches them; none: no network at all
    published: Published | None
    health: Health | None
    waits: tuple[Wait, ...]  # what it waits for, in start order
    model_path: bool  # on the model's way: made before the model check that every other platform service waits for
    node: str | None = None  # a swarm's node that runs it
    file_secrets: dict[str, str] = field(default_factory=dict)  # a swarm's: variable -> file (`<VAR>_FILE` names it)
    stop_grace_s: int | None = None  # a swarm's worker: time to seal its archive when its service is scaled to 0
    restart: str = RESTART

    @property
    def name(self) -> str:
        return self.placement.name

    @property
    def role(self) -> str:
        return self.placement.role

    @property
    def per_task(self) -> bool:
        return ROLES[self.role].per_task

    @property
    def runs_after_up(self) -> bool:
        """`up` leaves it running: not one-shot, not created stopped for the wake step."""
        return not (self.spec.one_shot or self.spec.woken)


def on_node(p: Profile, node: SwarmNode) -> Profile:
    """The profile as a swarm's node sees it: its data is under the node's data root."""
    return p.model_copy(update={"data_root": node.data_root or p.data_root})


def waited_roles(c: Placement, platform: Iterable[str]) -> tuple[str, ...]:
    """The platform services a container waits for, by role, of those the profile runs (`platform`, in start order):
    a platform service its role's `after`; a router, worker or snapshot every platform service."""
    if ROLES[c.role].per_task:
        return tuple(platform)
    return tuple(r for r in ROLES[c.role].after if r in platform)


class Planner:
    """Plans one container at a time (the program declares them one by one); what every container shares (the
    platform's waits, the swarm's placement, each node's view of the profile) is derived once."""

    def __init__(self, p: Profile):
        self.p = p
        self.spread = placement.plan(p) if p.engine == "swarm" else None
        self.platform = {c.role: Wait(c.name, c.role, condition(spec(p, c))) for c in platform_placements(p)}
        self.views: dict[str, Profile] = {}

    def node(self, c: Placement) -> SwarmNode | None:
        """The swarm's node that runs it (None on one host)."""
        if self.spread is None:
            return None
        assert self.p.swarm is not None
        return self.p.swarm.node(self.spread.node_of(c.role, c.index))

    def view(self, node: SwarmNode) -> Profile:
        if node.name not in self.views:
            self.views[node.name] = on_node(self.p, node)
        return self.views[node.name]

    def waits(self, c: Placement) -> tuple[Wait, ...]:
        return tuple(self.platform[r] for r in waited_roles(c, self.platform))

    def plan(self, c: Placement) -> PlannedContainer:
        p, role, node = self.p, ROLES[c.role], self.node(c)
        s = spec(p if node is None else self.view(node), c)
        labels, file_secrets, stop_grace_s = c.labels, dict[str, str](), None
        if node is None:  # one host: its fixed addresses, its operator port when it has an operator address
            nets = tuple(Attachment(kind, ip, _tuple(c.aliases(kind))) for kind, ip in c.addresses.items())
            published = Published(role.port, p.ports[c.role]) if c.operator_ip else None
        elif s.one_shot:  # a swarm's one-shot: a container on the manager, on the internal overlay network
            assert p.swarm is not None
            labels = {**c.labels, contract.NODE_LABEL: p.swarm.manager.name}
            nets, published = (Attachment("internal", None, _tuple(c.aliases("internal"))),), None
        else:  # a swarm service: its role's networks by name, the operator network when it publishes a port
            labels = {**c.labels, contract.NODE_LABEL: node.name}
            publishes = c.role in p.ports
            aliases = None if role.per_task else (c.role,)
            nets = tuple(Attachment(k, None, aliases) for k in (*role.networks, *(("operator",) if publishes else ())))
            published = Published(role.port, p.ports[c.role]) if publishes else None
            file_secrets = {
                k: f"{SECRETS_DIR}/{k.lower()}"
                for k, ref in sorted(s.secret_env.items())
                if ref == MODEL_SECRET_KEY and not k.endswith("_SHA256")
            }
            stop_grace_s = p.export_grace_s if c.role == "worker" else None
        return PlannedContainer(
            placement=c,
            spec=s,
            labels=labels,
            networks=nets,
            published=published,
            health=health(s),
            waits=self.waits(c),
            model_path=role.model_path,
            node=None if node is None else node.name,
            file_secrets=file_secrets,
            stop_grace_s=stop_grace_s,
        )


def _tuple(aliases: list[str] | None) -> tuple[str, ...] | None:
    return tuple(aliases) if aliases is not None else None


@dataclass(frozen=True)
class ContainerPlan:
    """Every container of a profile, planned, in the layout's order (the platform in start order, then each task's
    routers and workers)."""

    profile: Profile
    layout: Layout
    containers: tuple[PlannedContainer, ...]

    @classmethod
    def of(cls, p: Profile, layout: Layout | None = None) -> ContainerPlan:
        layout = layout or Layout.of(p)
        planner = Planner(p)
        return cls(p, layout, tuple(planner.plan(c) for c in layout.placements))

    @property
    def by_name(self) -> dict[str, PlannedContainer]:
        return {c.name: c for c in self.containers}

    def phases(self, per_task: bool) -> list[tuple[PlannedContainer, ...]]:
        """What one `up` creates: everything; or (per task) the platform's containers, then each task's, as a
        per-task profile's stacks create them one after another (parts.py)."""
        if not per_task:
            return [self.containers]
        return [tuple(c for c in self.containers if c.placement.task == t) for t in (None, *self.profile.tasks)]


# --- read back: a declared container in the plan's own records (the policy pack's view) -----------------------------
@dataclass(frozen=True)
class Port:
    """A published port as declared: a container's on a host address (`ip`; absent: every address), a swarm
    service's in a publish mode (host, or the routing mesh's ingress)."""

    internal: int | None
    external: int | None
    ip: str | None = None
    mode: str | None = None


@dataclass(frozen=True)
class Declared:
    """A container as its engine was given it, read back from the engine's view of the resource (camelCase names,
    numbers as floats, values unknown at preview absent; what the policy pack sees): a docker.Container, or a swarm's
    docker.Service as the container its task runs. The same records as the plan's (`Attachment`, services.`Mount`), so
    what the renderers made of a PlannedContainer reads back the same from either engine."""

    name: str | None
    labels: dict[str, str]
    user: str | None
    env: dict[str, str]  # a service's model credential is a file: `<VAR>_FILE` here, the secret in `secrets`
    memory_mb: float | None
    command: tuple[str, ...]  # its arguments (a service's `args`)
    networks: tuple[Attachment, ...]  # by name (a service's by id, unknown before the network exists)
    mounts: tuple[Mount, ...]
    ports: tuple[Port, ...]
    network_mode: str | None = None
    privileged: bool = False
    secrets: tuple[str, ...] = ()  # a service's swarm secrets, by name
    node: str | None = None  # a service's node (its placement constraint)

    @property
    def role(self) -> str | None:
        return self.labels.get(contract.ROLE_LABEL)


def label_map(props: Any) -> dict[str, str]:
    """A resource's labels: the engine hands over proxies (mapping-like, not dict subclasses), so duck-typed."""
    return {item.get("label"): item.get("value") for item in props.get("labels") or [] if hasattr(item, "get")}


def env_entries(entries: Any) -> dict[str, str]:
    """`NAME=value` entries (a container's `envs`) as a mapping."""
    return dict(e.split("=", 1) for e in entries or [] if isinstance(e, str) and "=" in e)


def _mounts(items: Any, host: str, target: str) -> tuple[Mount, ...]:
    return tuple(Mount(str(m.get(host) or ""), str(m.get(target) or ""), bool(m.get("readOnly"))) for m in items or [])


def node_of(props: Any) -> str | None:
    """The node a service is pinned to, from its placement constraint (contract.node_constraint)."""
    prefix = contract.node_constraint("")
    for c in ((props.get("taskSpec") or {}).get("placement") or {}).get("constraints") or []:
        if str(c).replace(" ", "").startswith(prefix):
            return str(c).replace(" ", "")[len(prefix) :]
    return None


MIB = 1024 * 1024  # a service's memory ceiling is in bytes (the plan's in MB)


def memory_bytes_mb(props: Any) -> float:
    """A service's memory ceiling in MB (0 without one)."""
    limits = ((props.get("taskSpec") or {}).get("resources") or {}).get("limits") or {}
    return float(limits.get("memoryBytes") or 0) / MIB


def declared_container(props: Any) -> Declared:
    return Declared(
        name=props.get("name"),
        labels=label_map(props),
        user=props.get("user"),
        env=env_entries(props.get("envs")),
        memory_mb=props.get("memory"),
        command=tuple(props.get("command") or ()),
        networks=tuple(
            Attachment(n.get("name"), n.get("ipv4Address"), _tuple(n.get("aliases")))
            for n in props.get("networksAdvanced") or []
        ),
        mounts=_mounts(props.get("volumes"), "hostPath", "containerPath"),
        ports=tuple(
            Port(pt.get("internal"), pt.get("external"), ip=pt.get("ip", "0.0.0.0")) for pt in props.get("ports") or []
        ),
        network_mode=props.get("networkMode"),
        privileged=bool(props.get("privileged")),
    )


def declared_service(props: Any) -> Declared:
    """A swarm service as the container it runs: its task's container spec, networks, resources and published
    ports."""
    task = props.get("taskSpec") or {}
    spec_ = task.get("containerSpec") or {}
    return Declared(
        name=props.get("name"),
        labels=label_map(props),
        user=spec_.get("user"),
        env={str(k): str(v) for k, v in (spec_.get("env") or {}).items()},
        memory_mb=memory_bytes_mb(props) or None,
        command=tuple(spec_.get("args") or ()),
        networks=tuple(
            Attachment(n.get("name") or n.get("id"), None, _tuple(n.get("aliases")))
            for n in task.get("networksAdvanceds") or []
        ),
        mounts=_mounts(spec_.get("mounts"), "source", "target"),
        ports=tuple(
            Port(pt.get("targetPort"), pt.get("publishedPort"), mode=pt.get("publishMode", "ingress"))
            for pt in (props.get("endpointSpec") or {}).get("ports") or []
        ),
        secrets=tuple(x.get("secretName") for x in spec_.get("secrets") or []),
        node=node_of(props),
    )
