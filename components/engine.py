"""The engine: where a profile's containers run, as one interface with two implementations.

`OneHost` runs them as containers of this host's Docker, on the profile's networks; `OnSwarm` as services of a Docker
Swarm through its manager (components/swarm.py), its images published to the swarm's registry and every node's
directories prepared by a step. The parts ask the engine for what differs (its networks and images, how a
container is declared, what the steps need to reach it, the platform's outputs) and never which engine it is:
`engine_of` is the one place that chooses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from model.profile import Profile
from model.roles import ROLES
from model.services import spec
from model.step_inputs import NodeArchive
from model.topology import Layout

from .containers import Declare, declarer, network_names
from .host_units import HostUnits
from .images import Images
from .networks import Networks
from .step_resources import Step
from .swarm import Swarm

Opts = Callable[..., pulumi.ResourceOptions]  # a part's options: its child, after the resources given


@dataclass(frozen=True)
class EngineArgs:
    """What an engine is made from: the experiment's name, profile, layout and secrets, the checkout its images are
    built from, and the options of its resources (children of the platform's part)."""

    name: str
    p: Profile
    layout: Layout
    secrets: dict[str, pulumi.Output[str]]
    checkout: Path
    revision: str | None
    opts: Opts


class Engine(ABC):
    """What the parts need of the engine; its resources are the platform part's children, under the names they always
    had."""

    images: Images | None = None  # None: made by another stack (the platform's)
    networks: Networks | None = None
    declare: Declare
    docker_env: dict[str, str] = {}  # how a step reaches the engine's Docker API (plain variables)

    def __init__(self, p: Profile, layout: Layout) -> None:
        self.p, self.layout = p, layout

    def node_units(self, ssh_key: pulumi.Input[str] | None, opts: pulumi.ResourceOptions) -> list[HostUnits]:
        """The slice and guard of the engine's other hosts (this host's are the platform part's)."""
        return []

    def prepare(self, data: Step, opts: Opts) -> Step | None:
        """The step that readies the engine's hosts after the profile's data step (none on one host)."""
        return None

    def restartable(self) -> list[str]:
        """The long-running platform containers a step restarts when it finds one dead, by name (none where the
        engine restarts them itself)."""
        return []

    def routers(self, task: str) -> dict[str, str]:
        """Each worker of a task and its router, by name, for the steps that wait for or restart a router (none where
        the engine does)."""
        return {}

    def collect(self, task: str) -> pulumi.Output[dict[str, NodeArchive]] | None:
        """Where the shutdown collects each worker's archive from (none: the archives are on this host)."""
        return None

    @abstractmethod
    def image_ids(self) -> pulumi.Output[dict[str, str]]:
        """Each image as the containers ran it: its id, or on a swarm the registry digest each node pulled."""

    @abstractmethod
    def outputs(self) -> dict[str, Any]:
        """The engine's part of the platform stack's outputs."""


class OneHost(Engine):
    """This host's Docker: containers on the profile's networks, with fixed addresses."""

    def __init__(self, p: Profile, layout: Layout, declare: Declare) -> None:
        super().__init__(p, layout)
        self.declare = declare

    @classmethod
    def made(cls, a: EngineArgs) -> OneHost:
        """The engine with its networks and images (a profile's stack, or the platform's of a per-task profile)."""
        networks = Networks(f"{a.name}-net", a.p, a.layout, a.opts())
        images = Images(f"{a.name}-images", a.p, a.checkout, a.revision, a.opts())
        engine = cls(a.p, a.layout, declarer(a.p, network_names(networks), a.secrets, images))
        engine.networks, engine.images = networks, images
        return engine

    @classmethod
    def joined(cls, p: Profile, layout: Layout, secrets: dict[str, pulumi.Output[str]]) -> OneHost:
        """The engine of a task's stack: the networks and images its platform's stack made, by name."""
        return cls(p, layout, declarer(p, layout.network_names, secrets, None))

    def restartable(self) -> list[str]:
        p, placements = self.p, self.layout.placements
        return [c.name for c in placements if not ROLES[c.role].per_task and not spec(p, c).one_shot]

    def routers(self, task: str) -> dict[str, str]:
        routers = {c.index: c.name for c in self.layout.members(task, "router")}
        return {w.name: routers[w.index] for w in self.layout.members(task, "worker")}

    def image_ids(self) -> pulumi.Output[dict[str, str]]:
        assert self.images is not None
        return self.images.ids

    def outputs(self) -> dict[str, Any]:
        return {"addresses": {c.name: c.addresses for c in self.layout.placements}}


class OnSwarm(Engine):
    """A Docker Swarm through its manager: services placed on nodes, images from the swarm's registry."""

    def __init__(self, a: EngineArgs) -> None:
        super().__init__(a.p, a.layout)
        self.swarm = Swarm(f"{a.name}-swarm", a.p, a.layout, a.secrets, a.checkout, a.opts())
        manager = pulumi.ResourceOptions.merge(
            a.opts(), pulumi.ResourceOptions(providers={"docker": self.swarm.provider})
        )
        build_network = self.swarm.s.build_network
        self.images = images = Images(f"{a.name}-images", a.p, a.checkout, a.revision, manager, build_network)
        self.swarm.publish(images)
        self.declare = self.swarm.declare
        self.docker_env = {"DOCKER_HOST": self.swarm.s.docker_host}

    def node_units(self, ssh_key: pulumi.Input[str] | None, opts: pulumi.ResourceOptions) -> list[HostUnits]:
        return self.swarm.host_units(ssh_key, opts)

    def prepare(self, data: Step, opts: Opts) -> Step:
        return self.swarm.prepare_nodes(data, opts(data))

    def collect(self, task: str) -> pulumi.Output[dict[str, NodeArchive]]:
        return self.swarm.archives(task)

    def image_ids(self) -> pulumi.Output[dict[str, str]]:
        return pulumi.Output.all(self.swarm.images.ids, self.swarm.digests).apply(lambda both: {**both[0], **both[1]})

    def outputs(self) -> dict[str, Any]:
        return {
            "addresses": {},  # a swarm's services have names, no fixed addresses
            "nodes": {c.name: self.swarm.on(c).name for c in self.layout.placements},
            "registry_digests": self.swarm.digests,
        }


def engine_of(a: EngineArgs) -> Engine:
    """The profile's engine (its `engine` setting)."""
    return OnSwarm(a) if a.p.engine == "swarm" else OneHost.made(a)
