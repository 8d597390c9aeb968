"""What the parts of an experiment share: the graph's nodes declared so far, and what each part is made from.

Each part (the platform, a task, the record) declares the nodes of its scope of the step graph (model/step_graph.py)
in the graph's order, each after the resources of the nodes the graph says it runs after, whichever part declared
them; an arrow into another stack is the launch's order instead (model/parts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from model import contract, step_graph, steps
from model.profile import Profile
from model.rundir import RunDir
from model.topology import Layout

from .step_resources import Step

Build = Callable[[str | None], pulumi.Resource | list[pulumi.Resource]]  # declares a node (of a task)


@dataclass
class Walk:
    """The nodes this stack has declared, by node and task."""

    run: step_graph.Run
    tasks: list[str]
    made: dict[tuple[str, str | None], list[pulumi.Resource]] = field(default_factory=dict)

    def add(self, node: step_graph.Item, task: str | None, resources: list[pulumi.Resource]) -> None:
        self.made[(node.suffix, task)] = resources

    def get(self, node: step_graph.Item, task: str | None = None) -> list[pulumi.Resource]:
        return self.made.get((node.suffix, task), [])

    def after(self, node: step_graph.Item, task: str | None) -> list[pulumi.Resource]:
        """What `node` (of `task`) runs after, as this stack's resources."""
        return [
            r
            for ref in step_graph.after(node, self.run)
            for t in step_graph.tasks_of(ref, task, self.tasks)
            for r in self.made.get((ref.suffix, t), [])
        ]

    def declare(self, scope: step_graph.Scope, task: str | None, build: dict[str, Build]) -> None:
        """Each node of `scope` in the graph's order, but those already made (the engine's, those a part made on its
        way to another)."""
        for item in step_graph.order(self.run, scope):
            if (item.suffix, task) not in self.made:
                made = build[item.suffix](task)
                self.add(item, task, made if isinstance(made, list) else [made])


@dataclass(frozen=True)
class PartArgs:
    """What every part of an experiment is made from: the experiment's name (every resource's name begins with it),
    the profile and its layout, the secrets, the project and the checkout its images are built from, and the walk the
    parts share."""

    name: str
    p: Profile
    layout: Layout
    secrets: dict[str, pulumi.Output[str]]
    project_dir: Path
    checkout: Path
    revision: str | None
    walk: Walk

    @property
    def run_dir(self) -> str:
        return str(RunDir.of(self.p).path)


class ExperimentPart(pulumi.ComponentResource):
    """A part of the experiment: its resources are its children. They were the experiment's own children before the
    parts were components, so each carries an alias to that parent: a stack made before keeps every resource."""

    def __init__(self, kind: str, name: str, a: PartArgs, opts: pulumi.ResourceOptions):
        super().__init__(f"agensh:index:{kind}", name, None, opts)
        self.a = a
        self._moved = [pulumi.Alias(parent=opts.parent)]

    def opts(self, *deps: Any) -> pulumi.ResourceOptions:
        """A child of this part, after `deps`."""
        return pulumi.ResourceOptions(
            parent=self, depends_on=[d for d in deps if d is not None], aliases=list(self._moved)
        )

    def step(self, step: steps.StepDef, task: str | None, inputs: Any, **kw: Any) -> Step:
        """The step's resource, named for its task, after what the graph says."""
        prefix = f"{self.a.name}-{contract.task_slug(task)}" if task else self.a.name
        return Step(prefix, step, inputs, self.opts(*self.a.walk.after(step, task)), **kw)
