"""The experiment's steps as command resources: each runs one program of `scripts/` with its typed inputs as JSON.

A step's commands name the step alone, `bash scripts/step.sh <step>` from the project (model/steps.py: LAUNCHER),
never an interpreter or a program's file: those are in every stack's state, and a change there runs the step again.

Which state decides whether a step runs again (one place for the two layers):
1. Pulumi's state decides whether the command resource is created (the program runs) at all. A step runs on the
   first `up`; again when its `triggers` change (a replacement: the new resource runs the program, then the old
   one's delete command, if it has one); again when any other input changes, its commands, `dir` or environment
   (`AGENSH_INPUT`, the secrets' values): pulumi-command's update runs the new create command and deletes nothing;
   and again when its last create failed. A gate of the launch (`once_per_run`: preflight, the first manifest)
   ignores changes of its environment and runs again only for a new run id.
2. The receipt in the run directory decides whether a program that runs does the work again: a receipt with
   status `ok` and the same inputs digest (its inputs, plus the content digest of a file another step wrote,
   where it reads one: the submission, the eval JSON, the result index) is printed again and nothing is done.
   This makes every program idempotent when Pulumi runs it again, e.g. after `pulumi up` was interrupted.
Nothing runs during preview. A failed step fails the `up`; the next `up` re-runs only the steps that did not
complete. Steps print one human line per event on stderr (the console of `up` shows those) and the receipt as
the last stdout line (captured as the resource's `stdout`, never logged).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi_command import local
from pydantic import BaseModel

from model.project import ROOT
from model.records import Receipt
from model.steps import StepDef, known, receipt_from_stdout


class Step(local.Command):
    """`bash scripts/step.sh <step>` with AGENSH_INPUT (JSON, no secrets) and secrets as their own env."""

    def __init__(
        self,
        prefix: str,
        step: StepDef,
        inputs: BaseModel,
        opts: pulumi.ResourceOptions,
        secrets: Mapping[str, pulumi.Input[str]] | None = None,
        triggers: list[Any] | None = None,
        once_per_run: str | None = None,
        late: Mapping[str, pulumi.Input[Any]] | None = None,
        env: Mapping[str, str] | None = None,
    ):
        """The resource `<prefix>-<step's resource name>` runs the step of model/steps.py.
        `late`: input fields known only once other resources exist (image ids, the host units' receipt).
        `once_per_run=<run id>`: a gate of the launch runs once per run id; later profile edits do not re-run it.
        `env`: plain variables of the program (DOCKER_HOST: the swarm manager's Docker API)."""
        self.step = known(step)
        if not isinstance(inputs, step.inputs):
            raise TypeError(f"{step.name}: inputs are {type(inputs).__name__}, the table says {step.inputs.__name__}")
        if once_per_run is not None:
            triggers = [*(triggers or []), once_per_run]
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["environment"]))
        payload: pulumi.Input[str] = (
            pulumi.Output.all(**late).apply(lambda v: inputs.model_copy(update=v).model_dump_json())
            if late
            else inputs.model_dump_json()
        )
        super().__init__(
            f"{prefix}-{step.suffix}",
            create=step.create_command,
            delete=step.delete_command,
            dir=str(ROOT),
            environment={"AGENSH_INPUT": payload, "PYTHONUNBUFFERED": "1", **(env or {}), **(secrets or {})},
            logging=local.Logging.STDERR,
            triggers=triggers,
            opts=opts,
        )

    @property
    def receipt(self) -> pulumi.Output[Receipt[Any] | None]:
        """The receipt the step printed (None in preview)."""
        return self.stdout.apply(lambda s: receipt_from_stdout(self.step, s))
