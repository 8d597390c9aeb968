"""Experiment: the top-level component of one profile stack, composed of the parts it declares (model/parts.py): the
platform's, each task's and the record's (components/platform_part.py, task_part.py, record_part.py). Each part
declares its scope's nodes of the step graph (model/step_graph.py; the table in docs/design.md, "The step graph")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pulumi

from model import contract, records, step_graph, steps
from model.checkout import revision
from model.parts import WHOLE, Part
from model.profile import Profile
from model.rundir import RunDir
from model.step_inputs import copy_dir
from model.topology import Layout

from .engine import OneHost
from .platform_part import PlatformPart
from .record_part import RecordPart, pair
from .task_part import TaskArgs, TaskPart
from .walk import PartArgs, Walk


class Experiment(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        profile: Profile,
        secrets: dict[str, pulumi.Output[str]],
        project_dir: Path,
        part: Part = WHOLE,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`part`: what this stack declares of the profile (model/parts.py); the whole of it unless the profile runs
        per task."""
        super().__init__("agensh:index:Experiment", name, None, opts)
        p = profile
        checkout = p.checkout_path(project_dir)
        a = PartArgs(
            name,
            p,
            Layout.of(p),
            secrets,
            project_dir,
            checkout,
            revision(checkout),
            Walk(step_graph.Run.of(p), p.tasks),
        )
        if not part.platform and p.run_steps and not pulumi.runtime.is_dry_run():
            require_before(p, part, a.walk.run)
        child = pulumi.ResourceOptions(parent=self)
        platform = PlatformPart(f"{name}-platform-part", a, child) if part.platform else None
        # where the containers run (components/engine.py); a task's stack joins what the platform's stack made
        engine = platform.engine if platform else OneHost.joined(p, a.layout, secrets)
        for t in p.tasks:
            if part.declares(t):
                TaskPart(f"{name}-{contract.task_slug(t)}-part", TaskArgs(a, engine, t), child)
        made = RecordPart(f"{name}-record-part", a, child) if part.record and p.run_steps else None
        record: pulumi.Input[dict[str, Any]] = made.record if made else {"steps": "off"}
        self.images = engine.images  # the images as this stack knows them (None in a task's stack)
        self.outputs = {
            "profile": p.profile,
            "run_id": p.run_id,
            "run_dir": a.run_dir,
            "profile_digest": p.digest(),
            **({"task": part.task} if part.task else {}),
            **(platform.outputs() if platform else {}),
            **(
                {
                    "report": str(RunDir.of(p).report) if p.run_steps else None,
                    "copy": copy_dir(p) if p.run_steps else None,
                    "provenance": record,
                    **({"pair": pair(p, record)} if p.pair_with and p.kind == "baseline" else {}),
                }
                if part.record
                else {}
            ),
        }
        self.register_outputs(self.outputs)


def require_before(p: Profile, part: Part, run: step_graph.Run) -> None:
    """A part stack's update refuses before the stacks it follows are done (scripts/cli/launch.py runs them in order):
    it reads the receipts of the steps the graph says it follows (model/step_graph.py: needed_before) in the run
    directory."""
    rd = RunDir.of(p)
    needed = [
        (cast(steps.StepDef, ref.item), t)
        for ref in step_graph.needed_before("task" if part.kind == "task" else "record", run)
        for t in step_graph.tasks_of(ref, part.task, p.tasks)
    ]
    missing = [
        f"{step.name}{f' of {task}' if task else ''}"
        for step, task in needed
        if records.ok_result(steps.read_receipt(rd, step, task), steps.RESULTS[step.name]) is None
    ]
    if missing:
        raise pulumi.RunError(
            f"this stack follows others of profile {p.profile} that are not done ({', '.join(missing)} has no "
            f"receipt in {rd.path}); launch the profile with `make up STACK=<its stack>` (scripts/cli/launch.py)"
        )
