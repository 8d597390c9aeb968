"""Which containers a profile runs, where they sit on the networks, and what limits they get.

Pure data derived from the Profile; the Pulumi components translate it into resources one to one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import addressing, naming
from .profile import Profile

GIB_MB = 1024
WORKER_USER = "10000:10000"
PLATFORM_SERVICES = ("mysql", "gitea", "mattermost", "board", "secret-service", "egress-proxy", "bootstrap")


@dataclass(frozen=True)
class Placement:
    name: str  # physical container name
    role: str  # service name, "router" or "worker"
    internal_ip: str | None
    egress_ip: str | None = None
    operator_ip: str | None = None  # services with operator ports (see addressing.derived_operator)
    task: str | None = None
    index: int | None = None  # worker/router number, 1-based
    memory_mb: int | None = None
    labels: dict[str, str] = field(default_factory=dict)


def network_names(p: Profile) -> dict[str, str]:
    kinds = ["internal", "egress"] + (["operator"] if p.operator_network else [])
    return {k: naming.resource_name(p.profile, k) for k in kinds}


def router_ip(p: Profile, task: str, n: int) -> str:
    """Address of task `task`'s router number n (1-based)."""
    return addressing.host(p.internal_network, addressing.TeamSlot(p.workers).router_index(p.tasks.index(task), n - 1))


def worker_ip(p: Profile, task: str, n: int) -> str:
    return addressing.host(p.internal_network, addressing.TeamSlot(p.workers).worker_index(p.tasks.index(task), n - 1))


def placements(p: Profile) -> list[Placement]:
    """Every container of the profile, platform first, then routers and workers task by task."""
    internal, egress = p.internal_network, p.egress_network
    out: list[Placement] = []

    def service(name: str, egress_ip: str | None = None) -> Placement:
        return Placement(
            name=naming.resource_name(p.profile, name),
            role=name,
            internal_ip=addressing.service_ip(internal, name) if name != "model" else None,
            egress_ip=egress_ip,
            operator_ip=addressing.service_ip(p.operator_network, name) if name in p.ports else None,
            labels=p.labels(name),
        )

    services = PLATFORM_SERVICES if p.kind == "team" else ("egress-proxy",)
    for name in services:
        eip = addressing.host(egress, addressing.EGRESS_PROXY_EGRESS_HOST) if name == "egress-proxy" else None
        out.append(service(name, eip))
    if p.model_standin:
        out.append(service("model", addressing.host(egress, addressing.MODEL_STANDIN_EGRESS_HOST)))

    for task in p.tasks:
        for n in range(p.workers):
            if p.kind == "team":
                out.append(Placement(
                    name=naming.router_name(p.profile, task, n + 1), role="router", task=task, index=n + 1,
                    internal_ip=router_ip(p, task, n + 1),
                    memory_mb=p.router_memory_gib * GIB_MB,
                    labels=p.labels("router", task),
                ))
            out.append(Placement(
                name=naming.worker_name(p.profile, task, n + 1), role="worker", task=task, index=n + 1,
                internal_ip=worker_ip(p, task, n + 1),
                memory_mb=p.worker_memory_gib * GIB_MB,
                labels=p.labels("worker", task),
            ))
        if p.kind == "baseline":  # commits the worker's non-ignored changes every snapshot_seconds; no network
            out.append(Placement(name=naming.resource_name(p.profile, f"{naming.task_slug(task)}-snapshot"),
                                 role="snapshot", task=task, index=1, internal_ip=None,
                                 labels=p.labels("snapshot", task)))
    return out
