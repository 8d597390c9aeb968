"""Networks: the team's internal network and the egress network (only the egress proxy joins both), and for a
team that publishes operator ports the operator network those services join (see addressing.derived_operator)."""

from __future__ import annotations

import pulumi
import pulumi_docker as docker

from .profile import Profile
from .topology import network_names


def docker_labels(labels: dict[str, str]) -> list[dict[str, str]]:
    return [{"label": k, "value": v} for k, v in sorted(labels.items())]


class Networks(pulumi.ComponentResource):
    internal: docker.Network
    egress: docker.Network
    operator: docker.Network | None

    def __init__(self, name: str, profile: Profile, opts: pulumi.ResourceOptions | None = None):
        super().__init__("agensh:index:Networks", name, None, opts)
        names = network_names(profile)

        def network(kind: str, subnet: str, internal: bool) -> docker.Network:
            return docker.Network(
                f"{name}-{kind}", name=names[kind], internal=internal,
                ipam_configs=[docker.NetworkIpamConfigArgs(subnet=subnet)],
                labels=docker_labels(profile.labels(f"{kind}-network")),
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True))

        self.internal = network("internal", str(profile.internal_network), True)
        self.egress = network("egress", str(profile.egress_network), profile.egress_internal)
        op = profile.operator_network
        self.operator = network("operator", str(op), False) if op else None
        self.register_outputs({"internal": self.internal.name, "egress": self.egress.name})
