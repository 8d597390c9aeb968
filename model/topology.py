"""Which containers a profile runs and where they sit on the networks.

Pure data derived from the Profile and the role table; the Pulumi components translate it into resources one to
one.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from . import addressing, contract
from .profile import Profile
from .roles import ROLES, Role


@dataclass(frozen=True)
class Placement:
    name: str  # physical container name
    role: str  # a role of roles.ROLES
    internal_ip: str | None
    egress_ip: str | None = None
    operator_ip: str | None = None  # services with operator ports (see addressing.derived_operator)
    data_ip: str | None = None  # the database and its users (see addressing.derived_data)
    task: str | None = None
    index: int | None = None  # worker/router number, 1-based
    router_ip: str | None = None  # a team worker's own router
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def hostname(self) -> str:
        """A team member's hostname is its own name, a platform service's its role's."""
        return self.name if ROLES[self.role].per_task else self.role

    def aliases(self, kind: str) -> list[str] | None:
        """The other name it answers to on a network of this kind: its role's on the internal and data networks
        (one host; a swarm's services answer to their service names)."""
        return [self.role] if kind in ("internal", "data") else None

    @property
    def addresses(self) -> dict[str, str]:
        """Its address on each network it joins, by network kind, in the order a container attaches them."""
        return {
            kind: ip
            for kind, ip in (
                ("internal", self.internal_ip),
                ("egress", self.egress_ip),
                ("data", self.data_ip),
                ("operator", self.operator_ip),
            )
            if ip
        }


def platform_roles(p: Profile) -> list[Role]:
    """The platform services this profile runs, in start order."""
    return [
        r for r in ROLES.values() if not r.per_task and (p.kind in r.kinds or (r.name == "model" and p.model_standin))
    ]


def networks(p: Profile) -> dict[str, ipaddress.IPv4Network]:
    """The profile's networks by kind."""
    nets = {
        "internal": p.internal_network,
        "egress": p.egress_network,
        "operator": p.operator_network,
        "data": p.data_network,
    }
    return {k: n for k, n in nets.items() if n is not None}


@dataclass(frozen=True)
class Layout:
    """What a profile's topology is, derived once: its networks, their names, and every container's placement.

    The program derives it once and hands it to each component: it asks for a task's members ~40 times, and at
    128 x 5 deriving the placements took a second of the preview's serial start (docs/performance.md)."""

    networks: dict[str, ipaddress.IPv4Network]
    network_names: dict[str, str]
    placements: tuple[Placement, ...]  # platform first, then routers and workers task by task

    @classmethod
    def of(cls, p: Profile) -> Layout:
        nets = networks(p)
        return cls(nets, {k: contract.resource_name(p.profile, k) for k in nets}, tuple(_derive(p)))

    def members(self, task: str, role: str) -> list[Placement]:
        """A task's routers or workers, in order."""
        return [c for c in self.placements if c.task == task and c.role == role]


def platform_placements(p: Profile) -> list[Placement]:
    """The platform services' placements, in start order."""
    nets = networks(p)
    internal, egress, operator, data = nets["internal"], nets["egress"], nets.get("operator"), nets.get("data")
    out: list[Placement] = []
    for role in platform_roles(p):
        egress_host = {
            "egress-proxy": addressing.EGRESS_PROXY_EGRESS_HOST,
            "model": addressing.MODEL_STANDIN_EGRESS_HOST,
        }.get(role.name)
        out.append(
            Placement(
                name=contract.resource_name(p.profile, role.name),
                role=role.name,
                internal_ip=addressing.service_ip(internal, role.slot)
                if "internal" in role.networks and role.slot is not None
                else None,
                egress_ip=addressing.host(egress, egress_host) if "egress" in role.networks and egress_host else None,
                operator_ip=addressing.service_ip(operator, role.slot)
                if operator is not None and role.operator_port is not None and role.slot is not None
                else None,
                data_ip=addressing.service_ip(data, role.slot)
                if data is not None and "data" in role.networks and role.slot is not None
                else None,
                labels=p.labels(role.name),
            )
        )
    return out


def _member(
    p: Profile,
    task: str,
    role: str,
    n: int,
    internal_ip: str | None,
    data_ip: str | None = None,
    router_ip: str | None = None,
) -> Placement:
    """A task's `n`th router or worker, named and labelled by its task and role."""
    return Placement(
        name=contract.member_name(p.profile, task, role, n),
        role=role,
        task=task,
        index=n,
        internal_ip=internal_ip,
        data_ip=data_ip,
        router_ip=router_ip,
        labels=p.labels(role, task),
    )


def _derive(p: Profile) -> list[Placement]:
    internal, data = p.internal_network, p.data_network
    out = platform_placements(p)
    team = p.kind == "team"
    for task in p.tasks:
        for n in range(1, p.workers + 1):
            router_ip = p.member_ip(task, "router", n, internal) if team else None
            if team:
                out.append(_member(p, task, "router", n, router_ip, data_ip=p.router_data_ip(task, n, data)))
            out.append(_member(p, task, "worker", n, p.member_ip(task, "worker", n, internal), router_ip=router_ip))
        if p.kind in ROLES["snapshot"].kinds:
            out.append(
                Placement(
                    name=contract.resource_name(p.profile, f"{contract.task_slug(task)}-snapshot"),
                    role="snapshot",
                    task=task,
                    index=1,
                    internal_ip=None,
                    labels=p.labels("snapshot", task),
                )
            )
    return out
