"""Team: one task's routers and workers (one router per worker); for a baseline, the worker and its snapshot
sidecar."""

from __future__ import annotations

from typing import Protocol, cast

import pulumi

from model import contract
from model.topology import Layout

from .containers import Declare


class Named(Protocol):
    """What every member is, a container or a swarm service: a resource with its Docker name (`Declare` promises only
    a Resource)."""

    name: pulumi.Output[str]


class Team(pulumi.ComponentResource):
    members: dict[str, list[pulumi.Resource]]  # by role: routers, workers, the baseline's snapshot sidecar

    def __init__(
        self,
        name: str,
        layout: Layout,
        task: str,
        declare: Declare,
        after: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`after`: what every router and worker waits for (the task's seed step)."""
        super().__init__("agensh:index:Team", name, None, opts)
        self.members = {}
        for c in layout.placements:
            if c.task != task:
                continue
            made = declare(f"{name}-{c.role}-{c.index}", c, pulumi.ResourceOptions(parent=self, depends_on=after))
            self.members.setdefault(c.role, []).append(made)
        self.register_outputs(
            {
                "task": task,
                "slug": contract.task_slug(task),
                "workers": [cast(Named, w).name for w in self.members.get("worker", [])],
            }
        )
