"""RecordPart: the nodes of scope `record` (model/step_graph.py): the manifest's finish, the report and the run's
preservation, and the provenance record they make (the stack's `provenance` output)."""

from __future__ import annotations

from typing import Any, cast

import pulumi

from model import records, steps
from model import step_inputs as si
from model.profile import Profile
from model.rundir import RunDir

from .step_resources import Step
from .walk import Build, ExperimentPart, PartArgs


class RecordPart(ExperimentPart):
    record: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, a: PartArgs, opts: pulumi.ResourceOptions):
        super().__init__("RecordPart", name, a, opts)
        a.walk.declare("record", None, self._builders())
        self.record = self._record()
        self.register_outputs({})

    def _builders(self) -> dict[str, Build]:
        a, p = self.a, self.a.p
        per_attempt = {"triggers": [p.eval_attempt]}
        return {
            steps.MANIFEST_FINISH.suffix: lambda _: self.step(
                steps.MANIFEST_FINISH, None, si.manifest(p, a.project_dir, a.checkout), **per_attempt
            ),
            steps.REPORT.suffix: lambda _: self.step(steps.REPORT, None, si.Inputs(run_dir=a.run_dir), **per_attempt),
            # The run's last step, so the first a destroy deletes: its delete refuses while results would be lost.
            steps.PRESERVE_RUN.suffix: lambda _: self.step(
                steps.PRESERVE_RUN,
                None,
                si.PreserveInputs(
                    run_dir=a.run_dir,
                    task_id=None,
                    copy_dir=si.copy_dir(p),
                    archive_dirs={agent: d for t in p.tasks for agent, d in si.archive_dirs(p, a.layout, t).items()},
                    guard=si.profile_data(p),
                ),
                **per_attempt,
            ),
        }

    def _record(self) -> pulumi.Output[dict[str, Any]]:
        """The record of the run: in one stack from the steps' receipts; in the record's stack of a per-task profile,
        the manifest's and the scores' receipts from the run directory (their stacks ran before this one)."""
        p, rd, walk = self.a.p, RunDir.of(self.a.p), self.a.walk
        manifest = walk.get(steps.MANIFEST_START)
        earlier = pulumi.Output.from_input(
            [
                cast(Step, manifest[0]).receipt,
                *(cast(Step, s).receipt for t in p.tasks for s in walk.get(steps.SCORE, t)),
            ]
            if manifest
            else [
                steps.read_receipt(rd, steps.MANIFEST_START),
                *(() if p.skip_eval else (steps.read_receipt(rd, steps.SCORE, t) for t in p.tasks)),
            ]
        )
        (finish,) = walk.get(steps.MANIFEST_FINISH)
        # the gate runs after `up` (scripts/cli/gate.py); the next `up` shows its verdict here
        return pulumi.Output.all(earlier, cast(Step, finish).receipt).apply(
            lambda r: records.provenance(
                p.profile,
                p.run_id,
                p.digest(),
                r[0][0],
                list(r[0][1:]),
                r[1],
                records.read_record(rd.gate, records.GateResult),
            ).model_dump(mode="json")
        )


def pair(p: Profile, record: pulumi.Input[dict[str, Any]]) -> pulumi.Output[dict[str, Any]]:
    """This baseline's score beside the team stack's score for the same task (when both exist)."""
    team = pulumi.StackReference(f"organization/{pulumi.get_project()}/{p.pair_with}")
    return pulumi.Output.all(mine=record, theirs=team.get_output("provenance")).apply(
        lambda r: {
            task: {
                "baseline": (r["mine"] or {}).get("scores", {}).get(task, {}).get("score"),
                "team": ((r["theirs"] or {}).get("scores") or {}).get(task, {}).get("score"),
                "team_stack": p.pair_with,
            }
            for task in p.tasks
        }
    )
