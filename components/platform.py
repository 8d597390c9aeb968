"""Platform: MySQL, Gitea, Mattermost, board, token service, egress proxy and bootstrap (or, for a baseline,
only the egress proxy)."""

from __future__ import annotations

import pulumi
import pulumi_docker as docker

from .containers import container
from .images import Images
from .networks import Networks
from .profile import Profile
from .services import spec
from .topology import placements

ORDER = ("mysql", "gitea", "mattermost", "board", "secret-service", "egress-proxy", "model", "bootstrap")
DEPENDS = {"gitea": ("mysql",), "mattermost": ("mysql",), "bootstrap": ("gitea", "mattermost", "secret-service")}


class Platform(pulumi.ComponentResource):
    services: dict[str, docker.Container]

    def __init__(self, name: str, profile: Profile, nets: Networks, images: Images,
                 secrets: dict[str, pulumi.Output[str]], after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        """`after`: what every service waits for (a component's own depends_on does not reach its children)."""
        super().__init__("agensh:index:Platform", name, None, opts)
        self.services = {}
        by_role = {c.role: c for c in placements(profile) if c.task is None}
        for role in ORDER:
            if role not in by_role:
                continue
            built = images.pulled.get(role) or images.shared.get(role if role != "model" else "egress-proxy")
            deps = [self.services[d] for d in DEPENDS.get(role, ()) if d in self.services]
            self.services[role] = container(
                f"{name}-{role}", profile, by_role[role], spec(profile, by_role[role]), nets, secrets,
                pulumi.ResourceOptions(parent=self, depends_on=[*after, *deps, *([built] if built else [])]))
        self.register_outputs({"services": {r: c.name for r, c in self.services.items()}})
