"""Team: one task's routers and workers (one router per worker); for a baseline, the worker and its snapshot
sidecar."""

from __future__ import annotations

import pulumi
import pulumi_docker as docker

from . import naming
from .containers import container
from .images import Images
from .networks import Networks
from .profile import Profile
from .services import spec
from .topology import placements


class Team(pulumi.ComponentResource):
    routers: list[docker.Container]
    workers: list[docker.Container]
    sidecars: list[docker.Container]  # the baseline's snapshot sidecar

    def __init__(self, name: str, profile: Profile, task: str, nets: Networks, images: Images,
                 secrets: dict[str, pulumi.Output[str]], after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        """`after`: what every router and worker waits for (the task's seed step)."""
        super().__init__("agensh:index:Team", name, None, opts)
        self.routers, self.workers, self.sidecars = [], [], []
        for c in placements(profile):
            if c.task != task:
                continue
            deps: list[pulumi.Resource] = [images.shared["mini-router"]] if c.role == "router" else [images.workers[task]]
            made = container(f"{name}-{c.role}-{c.index}", profile, c, spec(profile, c), nets, secrets,
                             pulumi.ResourceOptions(parent=self, depends_on=[*after, *deps]))
            {"worker": self.workers, "router": self.routers}.get(c.role, self.sidecars).append(made)
        self.register_outputs({"task": task, "slug": naming.task_slug(task),
                               "workers": [w.name for w in self.workers]})
