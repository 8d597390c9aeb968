"""PlatformPart: the nodes of scope `platform` (model/step_graph.py): the profile's data, the host units, the engine
(its networks and images, a swarm's nodes readied), the host's and the model's preflight, the first manifest, the
platform services and their preflight. Without steps (`run_steps: false`), only the resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from model import step_graph, steps
from model import step_inputs as si

from .engine import Engine, EngineArgs, engine_of
from .host_units import HostUnits
from .platform import Platform
from .step_resources import Step
from .walk import Build, ExperimentPart, PartArgs


class PlatformPart(ExperimentPart):
    engine: Engine
    host_units: HostUnits | None = None
    platform: Platform

    def __init__(self, name: str, a: PartArgs, opts: pulumi.ResourceOptions):
        super().__init__("PlatformPart", name, a, opts)
        p, walk = a.p, a.walk
        self.engine = engine_of(EngineArgs(a.name, p, a.layout, a.secrets, a.checkout, a.revision, self.opts))
        data = Step(a.name, steps.PROFILE_DATA, si.profile_data(p), self.opts())
        units: list[pulumi.Resource] = []  # the slice and guard every container waits for: this host's, each node's
        if p.host_units != "off":
            key = Path(p.ssh_key_path).expanduser().read_text() if p.ssh_key_path else None
            ssh_key = pulumi.Output.secret(key) if key else None
            self.host_units = HostUnits(f"{a.name}-host", p, self.opts(), ssh_key)
            units = [self.host_units, *self.engine.node_units(ssh_key, self.opts())]
        nodes = self.engine.prepare(data, self.opts)
        walk.add(steps.PROFILE_DATA, None, [data])
        walk.add(step_graph.HOST_UNITS, None, units)
        for node, made in ((step_graph.NETWORKS, self.engine.networks), (step_graph.IMAGES, self.engine.images)):
            if made is not None:
                walk.add(node, None, [made])
        if nodes is not None:
            walk.add(steps.SWARM_NODES, None, [nodes])
        if p.run_steps:
            walk.declare("platform", None, self._builders())
        else:  # the bare topology: the services after the host units and the engine's hosts readied
            self.platform = Platform(
                f"{a.name}-platform", a.layout, self.engine.declare, [nodes or data, *units], self.opts()
            )
            walk.add(step_graph.SERVICES, None, [self.platform])
        self.register_outputs({})

    def outputs(self) -> dict[str, Any]:
        """The platform's part of the stack's outputs."""
        assert self.engine.images is not None
        return {
            "networks": {k: str(n) for k, n in self.a.layout.networks.items()},
            **self.engine.outputs(),
            "ports": self.a.p.ports,
            "images": self.engine.images.ids,
            "host_units": self.host_units.receipt if self.host_units else "off",
        }

    def _builders(self) -> dict[str, Build]:
        a, p = self.a, self.a.p
        return {
            steps.PREFLIGHT_HOST.suffix: lambda _: self.step(
                steps.PREFLIGHT_HOST,
                None,
                si.preflight_host(p, a.layout, a.checkout, a.revision),
                once_per_run=p.run_id,
                late={"host_units_receipt": self.host_units.receipt} if self.host_units else None,
                env=self.engine.docker_env,
            ),
            steps.MANIFEST_START.suffix: lambda _: self.step(
                steps.MANIFEST_START,
                None,
                si.manifest(p, a.project_dir, a.checkout),
                once_per_run=p.run_id,
                late={"images": self.engine.image_ids()},
            ),
            step_graph.MODEL_PATH.suffix: lambda _: self._services(),
            steps.PREFLIGHT_PLATFORM.suffix: lambda _: self.step(
                steps.PREFLIGHT_PLATFORM,
                None,
                si.PreflightPlatformInputs(run_dir=a.run_dir),
                late={"one_shots": self.platform.one_shots()},
            ),
        }

    def _services(self) -> list[pulumi.Resource]:
        """The platform services, the model check declared between the model path and the rest (it is the gate)."""
        a, walk = self.a, self.a.walk

        def gate(model_path: list[pulumi.Resource]) -> Step:
            walk.add(step_graph.MODEL_PATH, None, model_path)
            return self.step(
                steps.PREFLIGHT_MODEL,
                None,
                si.preflight_model(a.p),
                secrets={"AGENSH_PROXY_TOKEN": a.secrets["worker_proxy_token"]},
                once_per_run=a.p.run_id,
            )

        self.platform = Platform(
            f"{a.name}-platform",
            a.layout,
            self.engine.declare,
            walk.after(step_graph.MODEL_PATH, None),
            self.opts(),
            gate=gate,
        )
        assert self.platform.gate is not None
        walk.add(steps.PREFLIGHT_MODEL, None, [self.platform.gate])
        walk.add(step_graph.SERVICES, None, [self.platform])
        return walk.get(step_graph.MODEL_PATH)
