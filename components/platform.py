"""Platform: the profile's platform services in the role table's start order (a team: MySQL, Gitea, Mattermost,
board, token service, egress proxy, bootstrap; a baseline: the egress proxy)."""

from __future__ import annotations

import pulumi

from .containers import Declare
from .images import Images
from .profile import Profile
from .roles import ROLES, spec
from .topology import placements


class Platform(pulumi.ComponentResource):
    services: dict[str, pulumi.Resource]

    def __init__(self, name: str, profile: Profile, declare: Declare, images: Images, after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        """`after`: what every service waits for (a component's own depends_on does not reach its children)."""
        super().__init__("agensh:index:Platform", name, None, opts)
        self.services = {}
        for c in placements(profile):
            if ROLES[c.role].per_task:
                continue
            s = spec(profile, c)
            deps = [self.services[d] for d in ROLES[c.role].after if d in self.services]
            self.services[c.role] = declare(
                f"{name}-{c.role}", c, s,
                pulumi.ResourceOptions(parent=self, depends_on=[*after, *deps, images.by_name[s.image]]))
        self.register_outputs({"services": {r: c.name for r, c in self.services.items()}})  # type: ignore[attr-defined]
