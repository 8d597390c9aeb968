"""Typed records of a run: one pydantic model per step receipt, the run manifest, the score, the index row, and the
provenance assembled from them. Steps write these, later steps and the stack outputs read them: no string keys.

A receipt is `Receipt` (what ran, when, with which inputs, ok or failed) around the step's own `result`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- step results --------------------------------------------------------------------------------------------
LATE_S = 1.0  # an event this much after its due time counts as late (the wake's progress, the report's timeline)


class Event(Record):
    """Something that happened at a time (a worker woken, a nudge posted): a result may list them for the timeline
    of `status` and the report. `end` makes it a span; `late_s` says how late against its plan."""

    kind: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    at: float  # epoch seconds
    end: float | None = None
    label: str = ""
    late_s: float | None = None


class Check(Record):
    ok: bool
    detail: str
    warning: bool = False  # passed with a caveat the detail explains (e.g. the gateway offers no model list)


class PreflightResult(Record):
    checks: dict[str, Check]


class Revision(Record):
    path: str
    revision: str | None
    dirty: bool | None


class Host(Record):
    cpus: int | None
    memory_gib: float
    load: tuple[float, float, float]


class Launch(Record):
    """`launch.json`: what a scheduled launch records as it begins, in its systemd service (scripts/lib/launcher.py)."""

    stack: str
    unit: str
    host: str
    scheduled: str  # the timer's time (the profile's start_at when it was installed)
    started: str  # when the service began the launch (UTC)


class Manifest(Record):
    """`run_manifest.json`: written before the first task (docs/requirements.md R43), finished with the counts."""

    written: str
    state: Literal["running", "finished"]
    profile: dict[str, Any]
    profile_digest: str
    project: Revision
    checkout: Revision
    checkout_contract: int | None = None  # the checkout contract's version the run read its checkout by
    programbench_version: str
    images: dict[str, str]
    host: Host
    requested_task_ids: list[str]
    finished: str | None = None
    completed: int | None = None
    failed: int | None = None
    failed_task_ids: list[str] = Field(default_factory=list)
    copilot_versions: dict[str, str] = Field(default_factory=dict)  # worker -> the CLI version its session reported
    scores: dict[str, float] = Field(default_factory=dict)
    headline_requested: dict[str, Any] | None = None
    headline_benchmark: dict[str, Any] | None = None
    copy_dir: str | None = None  # the run's verified copy outside the profile's data
    preserved: dict[str, bool] = Field(default_factory=dict)  # task -> its copy verified
    scheduled_start: str | None = None  # the profile's start_at
    actual_start: str | None = None  # when the launch began: the scheduled service's record, else `written`
    launched_by: str | None = None  # the systemd unit of a scheduled launch; None when launched by hand
    gate: GateResult | None = None  # the calibration gate, once `scripts.cli gate` judged this run


class ManifestStart(Record):
    manifest: Manifest


class ManifestFinish(Record):
    completed: int
    failed: int
    scores: dict[str, float]
    copilot_versions: dict[str, str] = {}  # worker -> the Copilot CLI its session ran (its own agentInfo.version)


class BranchProtection(Record):
    """`main`'s protection rule as Gitea reports it (the bootstrap's: direct pushes refused, zero approvals)."""

    enable_push: bool
    enable_push_whitelist: bool
    push_whitelist_usernames: list[str] = Field(default_factory=list)
    required_approvals: int
    enable_status_check: bool


class SeedResult(Record):
    repo: str
    commit: str
    seeded: Literal["now", "already"]
    files: list[str] = Field(default_factory=list)
    main_protection: BranchProtection | None = None  # None: main is not protected (the seed warns)


class Wake(Record):
    worker: str
    due_epoch: float
    at_epoch: float
    late_s: float
    already_awake: bool = False  # found running (a resumed ramp)


class Ramp(Record):
    """The wake step's checkpoint (`ramp.json`): when the task's ramp started and when each worker was woken, so a
    resumed `up` keeps the ramp's clock and `status` can count the workers woken so far."""

    ramp_start: float  # epoch seconds
    woken: dict[str, float] = Field(default_factory=dict)  # worker -> epoch seconds


class WakeResult(Record):
    """The ramp as it happened: each worker started at its offset (docs/requirements.md R29), with how late."""

    ramp_start_epoch: float
    wakes: list[Wake]
    events: list[Event]


class KickoffResult(Record):
    ramp_start: str
    ramp_start_epoch: float
    kickoff_at: str
    deadline: str
    deadline_epoch: float
    post_id: str
    sessions: dict[str, str] = {}  # agent id -> the Copilot CLI version its session reported, checked against the pin


class RemindersResult(Record):
    posted: list[int]
    skipped: list[int]
    deadline: str


class Nudge(Record):
    worker: str
    agent: str
    at_epoch: float
    idle_s: float


class Restart(Record):
    """A worker (or a platform service: `agent` is then its name) found stopped before the deadline and started again
    by the idle watchdog."""

    worker: str
    agent: str
    at_epoch: float


class NudgesResult(Record):
    """The idle watchdog's nudges of one task (docs/requirements.md R30), and the workers it started again."""

    nudges: list[Nudge]
    events: list[Event]
    restarts: list[Restart] = Field(default_factory=list)


FREEZE_ON_TIME_S = 60.0  # a freeze this soon after the deadline holds the deadline's HEAD (Gitea's calls take seconds)


class Freeze(Record):
    """`freeze.json`: `main`'s HEAD when it was frozen (made immovable for all but the administrator), by the deadline
    keeper at the deadline, or by the export when no keeper had (the launcher and the keeper both dead: `late_s`
    says how much work after the deadline may be in it)."""

    head: str
    by: Literal["keeper", "export"]
    deadline: str
    frozen_at: str
    late_s: float  # frozen this long after the deadline

    @property
    def on_time(self) -> bool:
        return self.late_s <= FREEZE_ON_TIME_S


class ExportResult(Record):
    submission: str
    commit: str
    files: int
    exported_at: str
    recovered_from: str | None = None
    freeze: Freeze | None = None  # what fixed `commit`; None: never frozen (Gitea unreachable), main as preserved


class Session(Record):
    """One agent's Copilot CLI session as its activity log tells it (the ACP driver's `activity` lines)."""

    copilot_version: str | None = None  # the CLI's own `agentInfo.version`
    prompts: int = 0
    turns: int = 0  # completed prompts (`end_turn` or another stop reason)
    tool_calls: int = 0
    watchdog: int = 0  # silent requests cancelled (or the CLI restarted) and prompted again
    errors: int = 0  # prompts the CLI answered with an error (retried)
    first_at: str | None = None
    last_at: str | None = None


class ShutdownResult(Record):
    """A team's shutdown, or a baseline's stop (which also exports)."""

    archives: dict[str, Literal["ok", "missing", "corrupt"]]
    archives_complete: bool
    sessions: dict[str, Session] = {}  # worker (as in `archives`) -> its session, read from its log
    submission: str | None = None
    commit: str | None = None
    snapshots: int | None = None


class EvaluateResult(Record):
    eval_json: str
    exit_code: int
    error_code: str | None
    test_branch_errors: list[str]
    docker_cpus: int
    seconds: float


class Score(Record):
    """`score.json`: the score only when nothing stands against it, else null with the problems."""

    task_id: str
    score: float | None
    raw_score: float | None
    complete: bool
    problems: list[str]
    eval_json: str
    export_recovered_from: str | None = None


class PreserveResult(Record):
    """A verified copy of a task's (or the whole run's) results outside the profile's data."""

    copy_dir: str
    files: int
    bytes: int
    verified: bool
    skipped: list[str] = Field(default_factory=list)  # links and special files agents left: never followed


class ReportResult(Record):
    page: str  # report.html


class BaselineSeedResult(Record):
    workspace: str
    commit: str
    started_epoch: float
    deadline_epoch: float
    deadline: str


R = TypeVar("R", bound=Record)


def read_record(path: Path, model: type[R]) -> R | None:
    """A record file (manifest, score, gate result), or None when it is not there."""
    return model.model_validate_json(path.read_text()) if path.exists() else None


class Receipt(BaseModel, Generic[R]):
    """What a step did: written to `receipts/<step>.json` and printed as the step's last stdout line."""

    model_config = ConfigDict(extra="forbid")

    step: str
    task_id: str | None
    inputs_digest: str
    started: str
    finished: str
    status: Literal["ok", "failed"]
    result: R | None = None
    error: str | None = None
    marker: str | None = None  # the failure marker the step left (or kept, for a recovered export)
    details: dict[str, Any] = Field(default_factory=dict)


def receipt_model(result: type[R]) -> type[Receipt[R]]:
    """`Receipt[result]` for a result model known only at run time (pydantic builds the class once and caches it).
    mypy reads a subscript as a type expression, where a runtime value has no place, so it is indexed through Any."""
    generic: Any = Receipt
    return generic[result]


def ok_result(receipt: Receipt[Any] | None, model: type[R]) -> R | None:
    """A receipt's result when its step completed, or None (not run, or failed)."""
    if receipt is None or receipt.status != "ok" or receipt.result is None:
        return None
    assert isinstance(receipt.result, model), (receipt.step, type(receipt.result))
    return receipt.result


# --- the result index -----------------------------------------------------------------------------------------
class IndexRow(Record):
    """One line of `result_index.jsonl` (docs/requirements.md R44): readers keep the last row per task."""

    at: str
    task_id: str
    status: Literal["scored", "incomplete"]
    score: float | None
    problems: list[str] = Field(default_factory=list)


def read_index(path: Path) -> dict[str, IndexRow]:
    """Rows by task id, last row wins; a torn last line (crash mid-write) is ignored."""
    out: dict[str, IndexRow] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            row = IndexRow.model_validate_json(line)
        except ValueError:
            continue
        out[row.task_id] = row
    return out


# --- the calibration gate (scripts/cli/gate.py writes gate.json) -----------------------------------------------
class LoadReading(Record):
    source: str
    cpus: int
    load: tuple[float, float, float]  # 1, 5 and 15-minute averages
    per_cpu_5min: float


class LoadCheck(Record):
    max_load_per_cpu: float
    readings: list[LoadReading]
    overloaded: bool


class GatePair(Record):
    """One gate task: the candidate's score beside the reference's (None: the reference lacks it, so unpaired)."""

    task_id: str
    candidate: float  # what enters the mean
    candidate_raw: float | None  # ProgramBench's score of the eval JSON, when there is one it can score
    reference: float | None
    baseline: float | None = None  # None: no second baseline, or the task is not in it
    delta: float | None  # candidate - reference
    notes: list[str]


class Comparison(Record):
    """Both paired means (ProgramBench's `aggregate`) over the tasks the other side has."""

    against: str
    task_ids: list[str]
    candidate_mean: float
    other_mean: float
    passed: bool  # candidate_mean >= other_mean


class GateResult(Record):
    """`gate.json` (docs/requirements.md R48): the verdict, its reasons, the task list and the pairs."""

    verdict: Literal["PASS", "FAIL", "PAUSED"]
    reasons: list[str]
    written: str
    candidates: list[str]
    reference: str
    second_baseline: str | None
    task_ids: list[str]
    pairs: list[GatePair]
    versus_reference: Comparison
    versus_baseline: Comparison | None
    load: LoadCheck
    programbench_version: str


Manifest.model_rebuild()


# --- provenance ------------------------------------------------------------------------------------------------
class TaskScore(Record):
    score: float | None
    complete: bool
    problems: list[str]


class Provenance(Record):
    """The stack's `provenance` output: the manifest as written first, each task's score, the final counts."""

    profile: str
    run_id: str
    profile_digest: str
    manifest: Manifest | None
    scores: dict[str, TaskScore]
    result: ManifestFinish | None
    gate: GateResult | None = None  # the calibration gate's verdict on this run, when it was judged


def provenance(
    profile: str,
    run_id: str,
    digest: str,
    manifest: Receipt[Any] | None,
    scores: list[Receipt[Any] | None],
    finish: Receipt[Any] | None,
    gate: GateResult | None = None,
) -> Provenance:
    return Provenance(
        profile=profile,
        run_id=run_id,
        profile_digest=digest,
        manifest=manifest.result.manifest if manifest and manifest.result else None,
        scores={
            s.result.task_id: TaskScore(score=s.result.score, complete=s.result.complete, problems=s.result.problems)
            for s in scores
            if s and s.result
        },
        result=finish.result if finish else None,
        gate=gate,
    )


def dumps(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), sort_keys=True)
