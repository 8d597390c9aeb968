"""Experiment: the top-level component of one profile stack (DESIGN.md, "The stack's graph")."""

from __future__ import annotations

from pathlib import Path

import pulumi

from . import naming
from .host_units import HostUnits
from .images import Images
from .networks import Networks
from .platform import Platform
from .profile import Profile
from .team import Team
from .topology import placements


class Experiment(pulumi.ComponentResource):
    def __init__(self, name: str, profile: Profile, secrets: dict[str, pulumi.Output[str]], project_dir: Path,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("agensh:index:Experiment", name, None, opts)
        p = profile
        child = pulumi.ResourceOptions(parent=self)
        self.host_units = None
        if p.host_units != "off":
            key = Path(p.ssh_key_path).expanduser().read_text() if p.ssh_key_path else None
            self.host_units = HostUnits(f"{name}-host", p, child, pulumi.Output.secret(key) if key else None)
        host_deps = [self.host_units] if self.host_units else []
        self.networks = Networks(f"{name}-net", p, child)
        self.images = Images(f"{name}-images", p, p.checkout_path(project_dir), child)
        self.platform = Platform(f"{name}-platform", p, self.networks, self.images, secrets,
                                 pulumi.ResourceOptions(parent=self, depends_on=host_deps))
        self.teams: list[Team] = []
        for task in p.tasks:
            previous = self.teams[-1:]  # task k+1 starts after task k (steps refine this edge)
            self.teams.append(Team(f"{name}-{naming.task_slug(task)}", p, task, self.networks, self.images, secrets,
                                   pulumi.ResourceOptions(parent=self, depends_on=[self.platform, *previous])))
        self.outputs = {
            "profile": p.profile,
            "run_id": p.run_id,
            "profile_digest": p.digest(),
            "networks": {"internal": str(p.internal_network), "egress": str(p.egress_network)},
            "addresses": {c.name: {"internal": c.internal_ip, "egress": c.egress_ip} for c in placements(p)},
            "ports": p.ports,
            "images": self.images.ids,
            "host_units": self.host_units.receipt if self.host_units else "off",
        }
        self.register_outputs(self.outputs)
