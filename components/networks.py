"""Networks: the team's internal network and the egress network (only the egress proxy joins both); for a team the
data network, where only the database and its users meet (never a worker); and for a team that publishes operator
ports the operator network those services join (see addressing.derived_operator). The same networks serve a swarm
as overlay networks (components/swarm.py)."""

from __future__ import annotations

import pulumi
import pulumi_docker as docker

from model.profile import Profile
from model.topology import Layout


def docker_labels(labels: dict[str, str]) -> list[docker.NetworkLabelArgsDict]:
    """Labels in the provider's form (a network's and a container's take the same two keys)."""
    return [{"label": k, "value": v} for k, v in sorted(labels.items())]


def docker_networks(
    name: str, profile: Profile, layout: Layout, opts: pulumi.ResourceOptions, overlay: bool = False
) -> dict[str, docker.Network]:
    """The profile's networks by kind, as this host's bridges or (overlay) a swarm's overlay networks, the internal
    one attachable for the one-shot bootstrap. Only the operator network (published ports) and a real gateway's
    egress reach outside."""
    names = layout.network_names
    outside = {"operator": True, "egress": not profile.egress_internal}
    return {
        kind: docker.Network(
            f"{name}-{kind}",
            name=names[kind],
            internal=not outside.get(kind, False),
            driver="overlay" if overlay else None,
            attachable=kind == "internal" if overlay else None,
            ipam_configs=[docker.NetworkIpamConfigArgs(subnet=str(subnet))],
            labels=docker_labels(profile.labels(f"{kind}-network")),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=True)),
        )
        for kind, subnet in layout.networks.items()
    }


class Networks(pulumi.ComponentResource):
    by_kind: dict[str, docker.Network]  # internal, egress, and for a team data (and operator when ports are published)

    def __init__(self, name: str, profile: Profile, layout: Layout, opts: pulumi.ResourceOptions | None = None):
        super().__init__("agensh:index:Networks", name, None, opts)
        self.by_kind = docker_networks(name, profile, layout, pulumi.ResourceOptions(parent=self))
        self.register_outputs({kind: n.name for kind, n in self.by_kind.items()})
