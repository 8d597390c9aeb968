"""The step table: the one place each step of an experiment is named.

A step is a program of `scripts/` that a command resource runs (components/step_resources.py) with its typed inputs, and
that leaves a typed receipt in the run directory (scripts/lib/step.py). The components declare steps from this table,
the programs run under it and the readers look receipts up through it, so a step cannot be declared, run or read
under a name the table does not have (tests/unit/test_step_table.py).

What every running stack's state holds of a step is its `suffix` alone: the end of the resource's logical name, and
the step's name in the resource's commands, `bash scripts/step.sh <suffix> [--delete]` (LAUNCHER, which runs the
step's program through this table: scripts/dispatch.py). Renaming a suffix re-runs that step in every stack; a
program's module, its arguments and the interpreter are in no state, so they can change freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from . import records as r
from . import step_inputs as si
from .rundir import RunDir

R = TypeVar("R", bound=r.Record)
# The one file a step resource's commands name, relative to the project (the resource's `dir`): it stays where it is.
LAUNCHER = "scripts/step.sh"


@dataclass(frozen=True)
class StepDef:
    """One step: `name` is its receipt's name (`receipts/<name>.json`), unique in the table."""

    name: str
    program: str  # the module of scripts/ the resource runs
    inputs: type[BaseModel]
    result: type[r.Record] | None  # None: the program leaves no receipt (it prepares directories)
    args: str = ""  # the program's argument (one program serves several steps)
    resource: str = ""  # the end of the resource's logical name (default: the name)
    delete: str = ""  # the program's argument on `pulumi destroy` (none: nothing to undo)

    @property
    def suffix(self) -> str:
        """The step's name in state: its resource's logical name ends with it, its commands name it (unique)."""
        return self.resource or self.name

    @property
    def module(self) -> str:
        return f"scripts.{self.program}"

    @property
    def create_command(self) -> str:
        return f"bash {LAUNCHER} {self.suffix}"

    @property
    def delete_command(self) -> str | None:
        return f"bash {LAUNCHER} {self.suffix} --delete" if self.delete else None

    def argv(self, delete: bool = False) -> list[str]:
        """The program's arguments: its create's, or its delete's."""
        return (self.delete if delete else self.args).split()


PROFILE_DATA = StepDef("profile-data", "profile_data", si.ProfileDataInputs, None, args="create", delete="delete")
SWARM_NODES = StepDef(
    "swarm-nodes", "swarm_nodes", si.SwarmNodesInputs, None, args="create", resource="nodes", delete="delete"
)
PREFLIGHT_HOST = StepDef("preflight-host", "preflight", si.PreflightHostInputs, r.PreflightResult, args="host")
MANIFEST_START = StepDef("manifest-start", "manifest", si.ManifestInputs, r.ManifestStart, args="start")
PREFLIGHT_MODEL = StepDef("preflight-model", "preflight", si.PreflightModelInputs, r.PreflightResult, args="model")
PREFLIGHT_PLATFORM = StepDef(
    "preflight-platform", "preflight", si.PreflightPlatformInputs, r.PreflightResult, args="platform"
)
SEED = StepDef("seed", "seed", si.SeedInputs, r.SeedResult)
WAKE = StepDef("wake", "wake", si.WakeInputs, r.WakeResult)
KICKOFF = StepDef("kickoff", "kickoff", si.KickoffInputs, r.KickoffResult)
EXPORT = StepDef("export", "export", si.ExportInputs, r.ExportResult)
REMINDERS = StepDef("reminders", "reminders", si.RemindersInputs, r.RemindersResult)
NUDGES = StepDef("nudges", "nudges", si.NudgesInputs, r.NudgesResult)
SHUTDOWN = StepDef("shutdown", "shutdown", si.ShutdownInputs, r.ShutdownResult)
BASELINE_SEED = StepDef("baseline-seed", "baseline", si.BaselineSeedInputs, r.BaselineSeedResult, args="seed")
# the baseline's stop at the deadline leaves the task's shutdown receipt under its own resource
BASELINE_STOP = StepDef(
    "shutdown", "baseline", si.BaselineStopInputs, r.ShutdownResult, args="stop", resource="baseline-stop"
)
EVALUATE = StepDef("evaluate", "evaluate", si.EvaluateInputs, r.EvaluateResult)
SCORE = StepDef("score", "score", si.ScoreInputs, r.Score)
PRESERVE_TASK = StepDef(
    "preserve-task", "preserve", si.PreserveInputs, r.PreserveResult, args="task", resource="preserve"
)
MANIFEST_FINISH = StepDef("manifest-finish", "manifest", si.ManifestInputs, r.ManifestFinish, args="finish")
REPORT = StepDef("report", "run_report", si.Inputs, r.ReportResult, args="step")
# the run's last step: it copies the whole run, and its delete refuses a destroy while results would be lost
PRESERVE_RUN = StepDef("preserve-run", "preserve", si.PreserveInputs, r.PreserveResult, args="run", delete="guard")

STEPS: tuple[StepDef, ...] = (
    PROFILE_DATA,
    SWARM_NODES,
    PREFLIGHT_HOST,
    MANIFEST_START,
    PREFLIGHT_MODEL,
    PREFLIGHT_PLATFORM,
    SEED,
    WAKE,
    KICKOFF,
    EXPORT,
    REMINDERS,
    NUDGES,
    SHUTDOWN,
    BASELINE_SEED,
    BASELINE_STOP,
    EVALUATE,
    SCORE,
    PRESERVE_TASK,
    MANIFEST_FINISH,
    REPORT,
    PRESERVE_RUN,
)
# The result model of each receipt name (two steps, the team's shutdown and the baseline's stop, share one).
RESULTS: dict[str, type[r.Record]] = {s.name: s.result for s in STEPS if s.result is not None}


def by_suffix(suffix: str) -> StepDef:
    """The step a command names (KeyError for a name the table does not have)."""
    return {s.suffix: s for s in STEPS}[suffix]


def known(step: StepDef) -> StepDef:
    """The step itself, refused when it is not one of the table's."""
    if step not in STEPS:
        raise ValueError(f"{step.name}: not a step of model/steps.py")
    return step


def parse_receipt(name: str, text: str) -> r.Receipt[Any]:
    """A receipt file's text as its step's typed receipt (`name`: a receipt name found on disk)."""
    return r.receipt_model(RESULTS[name]).model_validate_json(text)


def read_receipt(rd: RunDir, step: StepDef, task_id: str | None = None) -> r.Receipt[Any] | None:
    path = rd.receipt(known(step).name, task_id)
    return parse_receipt(step.name, path.read_text()) if path.exists() else None


def result_of(rd: RunDir, step: StepDef, task_id: str | None, model: type[R]) -> R | None:
    """The result of a step that completed, or None (not run, or failed)."""
    return r.ok_result(read_receipt(rd, step, task_id), model)


def receipt_from_stdout(step: StepDef, stdout: str) -> r.Receipt[Any] | None:
    """The receipt a step printed last on stdout (None when nothing ran, e.g. in preview)."""
    lines = (stdout or "").strip().splitlines()
    return parse_receipt(step.name, lines[-1]) if lines else None


def receipt_path(rd: RunDir, step: StepDef, task_id: str | None = None) -> Path:
    return rd.receipt(known(step).name, task_id)
