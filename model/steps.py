"""The step table: the one place each step of an experiment is named.

A step is a program of `scripts/` that a command resource runs (components/step_resources.py) with its typed inputs, and
that leaves a typed receipt in the run directory (scripts/lib/step.py). The components declare steps from this table,
the programs run under it and the readers look receipts up through it, so a step cannot be declared, run or read
under a name the table does not have (tests/unit/test_step_table.py).

What every running stack's state holds of a step is its `suffix` alone: the end of the resource's logical name, and
the step's name in the resource's commands, `bash scripts/step.sh <suffix> [--delete]` (LAUNCHER, which runs the
step's program through this table: scripts/dispatch.py imports its module and calls its `main(argv)` with
`argv(delete)`). Renaming a suffix re-runs that step in every stack; a program's module, its arguments and the
interpreter are in no state, so they can change freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from . import records as r
from . import step_inputs as si
from .rundir import RunDir

R = TypeVar("R", bound=r.Record)
# Which stack of a per-task profile declares a node (model/parts.py); one stack declares all three.
Scope = Literal["platform", "task", "record"]
# When a node is in a run at all (model/step_graph.py: Run): always, or only on that engine, kind, setting.
When = Literal["always", "swarm", "one-host", "host-units", "team", "baseline", "evaluated"]
# The one file a step resource's commands name, relative to the project (the resource's `dir`): it stays where it is.
LAUNCHER = "scripts/step.sh"


@dataclass(frozen=True)
class StepDef:
    """One step: `name` is its receipt's name (`receipts/<name>.json`), unique in the table."""

    name: str
    program: str  # the module of scripts/ whose `main(argv)` the step calls
    inputs: type[BaseModel]
    result: type[r.Record] | None  # None: the program leaves no receipt (it prepares directories)
    args: str = ""  # the program's argument, its `main`'s argv (one program serves several steps)
    resource: str = ""  # the end of the resource's logical name (default: the name)
    delete: str = ""  # the program's argument on `pulumi destroy` (none: nothing to undo)
    scope: Scope = "task"
    # What it runs after, by suffix (model/step_graph.py reads these): `a|b` the first of them the run has,
    # `@previous` that node of the previous task, `@every` of every task.
    after: tuple[str, ...] = ()
    when: When = "always"
    phase: str = ""  # a task's phase in `make status` once this step is done (scripts/cli/status.py)
    does: str = ""  # what it does, for the table in docs/design.md (scripts/cli/graph_table.py)

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


PROFILE_DATA = StepDef(
    "profile-data",
    "profile_data",
    si.ProfileDataInputs,
    None,
    args="create",
    delete="delete",
    scope="platform",
    does="makes `<data root>/<profile>` with a marker; its delete (`profile_data delete`) removes it only when nothing "
    "is lost",
)
SWARM_NODES = StepDef(
    "swarm-nodes",
    "swarm_nodes",
    si.SwarmNodesInputs,
    None,
    args="create",
    resource="nodes",
    delete="delete",
    scope="platform",
    after=("profile-data",),
    when="swarm",
    does="each node's profile directory and bind sources, the images pulled from the registry by digest",
)
PREFLIGHT_HOST = StepDef(
    "preflight-host",
    "preflight",
    si.PreflightHostInputs,
    r.PreflightResult,
    args="host",
    scope="platform",
    after=("nodes|profile-data", "networks", "images", "host-units"),
    does="Docker; slice and guard in place (unless host units are off); the checkout against its contract "
    "([checkout.md](checkout.md)); images present; the worker entrypoint baked and the reference binary root-owned "
    "mode 0111 (temporary check containers without network); each worker image's `copilot --version` is the pin; "
    "router and board images built from the current checkout revision; no leftover output or containers; subnets "
    "free of host routes and other Docker networks; operator ports free; the team limits as rendered; each task's "
    "test blobs where the evaluation reads them (`programbench blob sync` first without `eval_blob_dir`) and room "
    "for them on the data root ([operations.md](operations.md#test-blobs))",
)
MANIFEST_START = StepDef(
    "manifest-start",
    "manifest",
    si.ManifestInputs,
    r.ManifestStart,
    args="start",
    scope="platform",
    after=("preflight-host",),
    does="writes `run_manifest.json` before any task; refuses a dirty Agensh checkout unless `allow_dirty`",
)
PREFLIGHT_MODEL = StepDef(
    "preflight-model",
    "preflight",
    si.PreflightModelInputs,
    r.PreflightResult,
    args="model",
    scope="platform",
    after=("model-path",),
    does="the gateway's model list and one live request, through the proxy "
    "([operations.md](operations.md#the-model-id-check))",
)
PREFLIGHT_PLATFORM = StepDef(
    "preflight-platform",
    "preflight",
    si.PreflightPlatformInputs,
    r.PreflightResult,
    args="platform",
    scope="platform",
    after=("services",),
    does="each one-shot service (the bootstrap) exited 0: the engine waits for its end but counts it created whatever "
    "its code ([operations.md](operations.md#a-failed-bootstrap))",
)
# A task's first step waits for the whole platform and for the previous task's shutdown only, so the evaluation of
# task k overlaps task k+1.
_TASK_BEGINS = ("preflight-model", "services", "preflight-platform", "shutdown|baseline-stop@previous")
SEED = StepDef(
    "seed",
    "seed",
    si.SeedInputs,
    r.SeedResult,
    after=_TASK_BEGINS,
    when="team",
    phase="ramp",
    does="the task's Gitea repository and its starting workspace from the cleanroom image (never the reference binary)",
)
WAKE = StepDef(
    "wake",
    "wake",
    si.WakeInputs,
    r.WakeResult,
    after=("team",),
    when="team",
    phase="waiting for kickoff",
    does="the ramp: worker k is started at its offset once its router answers, each wake recorded with how late it "
    "was (`ramp.json`)",
)
KICKOFF = StepDef(
    "kickoff",
    "kickoff",
    si.KickoffInputs,
    r.KickoffResult,
    after=("wake",),
    when="team",
    phase="working",
    does="after the ramp, settle and wait: checks every session's CLI version, posts the kickoff, records the deadline",
)
EXPORT = StepDef(
    "export",
    "export",
    si.ExportInputs,
    r.ExportResult,
    delete="disarm",
    after=("kickoff",),
    when="team",
    phase="archiving",
    does="arms the deadline keeper (a process of its own that at the deadline locks `main` and records its HEAD in "
    "`freeze.json`, with or without the launcher; its delete stops it); at the deadline: that frozen HEAD as "
    "`submission.tar.gz` (or recovered, `EXPORT_FAILED`), never a later commit "
    "([operations.md](operations.md#resume-after-an-interruption))",
)
REMINDERS = StepDef(
    "reminders",
    "reminders",
    si.RemindersInputs,
    r.RemindersResult,
    after=("kickoff",),
    when="team",
    does="`reminder_minutes` before the deadline; passed ones skipped",
)
NUDGES = StepDef(
    "nudges",
    "nudges",
    si.NudgesInputs,
    r.NudgesResult,
    after=("kickoff",),
    when="team",
    does="the idle watchdog ([operations.md](operations.md#launch))",
)
SHUTDOWN = StepDef(
    "shutdown",
    "shutdown",
    si.ShutdownInputs,
    r.ShutdownResult,
    after=("export", "reminders", "nudges"),
    when="team",
    phase="evaluating",
    does="workers get the archive grace to seal their archives, which are verified; routers stop",
)
BASELINE_SEED = StepDef(
    "baseline-seed",
    "baseline",
    si.BaselineSeedInputs,
    r.BaselineSeedResult,
    args="seed",
    after=_TASK_BEGINS,
    when="baseline",
    does="the workspace as a Git repository on the host, `provenance.json`, `status.json`",
)
# the baseline's stop at the deadline leaves the task's shutdown receipt under its own resource
BASELINE_STOP = StepDef(
    "shutdown",
    "baseline",
    si.BaselineStopInputs,
    r.ShutdownResult,
    args="stop",
    resource="baseline-stop",
    after=("team",),
    when="baseline",
    phase="evaluating",
    does="at the deadline: archive, `cc.log`, commit the rest, export",
)
EVALUATE = StepDef(
    "evaluate",
    "evaluate",
    si.EvaluateInputs,
    r.EvaluateResult,
    after=("shutdown|baseline-stop",),
    when="evaluated",
    does="the official `programbench eval` (not with `skip_eval`)",
)
SCORE = StepDef(
    "score",
    "score",
    si.ScoreInputs,
    r.Score,
    after=("evaluate",),
    when="evaluated",
    phase="scored",
    does="`score.json` from ProgramBench's own helpers, or null with the problems",
)
PRESERVE_TASK = StepDef(
    "preserve-task",
    "preserve",
    si.PreserveInputs,
    r.PreserveResult,
    args="task",
    resource="preserve",
    after=("score|shutdown|baseline-stop",),
    does="copies the task's results and archives to `traj_root` and verifies them file by file",
)
MANIFEST_FINISH = StepDef(
    "manifest-finish",
    "manifest",
    si.ManifestInputs,
    r.ManifestFinish,
    args="finish",
    scope="record",
    after=("preserve@every",),
    does="the counts, the headline, the copies' verification",
)
REPORT = StepDef(
    "report",
    "run_report",
    si.Inputs,
    r.ReportResult,
    args="step",
    scope="record",
    after=("manifest-finish",),
    does="`report.html`",
)
# the run's last step: it copies the whole run, and its delete refuses a destroy while results would be lost
PRESERVE_RUN = StepDef(
    "preserve-run",
    "preserve",
    si.PreserveInputs,
    r.PreserveResult,
    args="run",
    delete="guard",
    scope="record",
    after=("report",),
    does="the whole run copied and verified once more; its delete (`preserve guard`) is destroy's first act and "
    "refuses while a result lacks its verified copy",
)

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
