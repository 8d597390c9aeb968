"""Platform: the profile's platform services in the role table's start order (a team: MySQL, Gitea, Mattermost,
board, token service, egress proxy, bootstrap; a baseline: the egress proxy). With a gate (the model check), the
services on the model path (egress proxy, stand-in model) come first and every other service waits for the gate, so
a wrong model id stops the launch before MySQL, Gitea or Mattermost exist."""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from model.container_plan import waited_roles
from model.roles import ROLES
from model.step_inputs import OneShot
from model.topology import Layout, Placement

from .containers import Declare
from .sdk import Container


class Platform(pulumi.ComponentResource):
    services: dict[str, pulumi.Resource]
    one_shot_containers: dict[str, Container]  # the one-shot services (the bootstrap), by container name

    def __init__(
        self,
        name: str,
        layout: Layout,
        declare: Declare,
        after: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
        gate: Callable[[list[pulumi.Resource]], pulumi.Resource] | None = None,
    ):
        """`declare`: the engine's declaration of one container. `after`: what every service waits for (a component's
        own depends_on does not reach its children). `gate`: declares, given the model-path services, what every
        other service waits for (it is `self.gate`)."""
        super().__init__("agensh:index:Platform", name, None, opts)
        self.services, self.one_shot_containers = {}, {}
        platform = [c for c in layout.placements if not ROLES[c.role].per_task]
        roles = [c.role for c in platform]

        def add(c: Placement, wait_for: list[pulumi.Resource]) -> None:
            deps = [self.services[r] for r in waited_roles(c, roles)]  # declared before it (start order)
            r = self.services[c.role] = declare(
                f"{name}-{c.role}", c, pulumi.ResourceOptions(parent=self, depends_on=[*wait_for, *deps])
            )
            if isinstance(r, Container) and r.reads_exit_code:
                self.one_shot_containers[c.name] = r

        first = [c for c in platform if gate and ROLES[c.role].model_path]
        for c in first:
            add(c, after)
        self.gate = gate([self.services[c.role] for c in first]) if gate else None
        for c in platform:
            if c not in first:
                add(c, [*after, self.gate] if self.gate else after)
        self.register_outputs({"services": {r: c.name for r, c in self.services.items()}})  # type: ignore[attr-defined]

    def one_shots(self) -> pulumi.Output[dict[str, OneShot]]:
        """How each one-shot service (the bootstrap) ended, by container name: the platform's preflight checks it,
        since the engine counts such a container created whatever its exit code."""
        ran = list(self.one_shot_containers.items())
        return pulumi.Output.all(*(pulumi.Output.all(r.urn, r.exit_code) for _, r in ran)).apply(
            lambda ended: {name: OneShot(urn=urn, exit_code=code) for (name, _), (urn, code) in zip(ran, ended)}
        )
