"""The report page: `report.html`, one self-contained page (no external fetch) of a run, or of several runs side by
side.

One run: written to `RUN_DIR/report.html` unless told otherwise; several runs need an output path. Everything is
read through the typed records (model/records.py) at the places `RunDir` names. The page shows per task the score
(`score.json`, or `assess` of scripts/lib/scoring.py when the score step has not run), pass counts per test branch,
what made a score incomplete, a timeline from the receipts (scripts/lib/timeline.py) and every step's receipt; a
team beside its baseline for the same task when both runs are given; each run's headline, calibration gate verdict
and provenance. Everything read from the run is untrusted: the template escapes it all, and the plots their labels.
The report step (scripts/run_report.py) and the operator's command (`python -m scripts.cli report`) both render with
`report()`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup
from programbench.eval.eval import EvaluationResult, TestBranchError
from programbench.submission import aggregate
from programbench.utils.load_data import get_active_branches, get_ignored_tests
from pydantic import ValidationError

from model import steps
from model.profile import Profile
from model.records import Event, GateResult, Manifest, Receipt, Score, Session, ShutdownResult, read_record
from model.rundir import MARKERS, RunDir
from scripts.lib.scoring import assess, instances
from scripts.lib.step import StepFailed, epoch
from scripts.lib.timeline import plot_svg, task_events

SHOWN_TESTS = 40  # non-passing tests listed per branch
STATUSES = ("passed", "failure", "error", "skipped", "not_run", "system_error")
T = TypeVar("T")


class ReportError(Exception):
    """A run file that cannot be read; the message names it."""


def read(path: Path, parse: Callable[[Path], T]) -> T:
    """`parse(path)`, a refusal naming the file when it is not what the run should have written."""
    try:
        return parse(path)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(file)'}: {e['msg']}" for e in err.errors()[:5])
        raise ReportError(f"{path}: {problems}") from None
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: {err}") from None


def receipt_file(step: str, path: Path) -> Receipt[Any]:
    return steps.parse_receipt(step, path.read_text())


def receipts(rd: RunDir, task_id: str | None) -> tuple[dict[str, Receipt[Any]], list[str]]:
    """The receipts of the task (or the run) by step, and the steps this checkout has no result model for (listed,
    not read: a run made by a newer checkout)."""
    names = rd.receipt_steps(task_id)
    known = {s: read(rd.receipt(s, task_id), partial(receipt_file, s)) for s in names if s in steps.RESULTS}
    return known, [s for s in names if s not in steps.RESULTS]


def markers(rd: RunDir, task_id: str | None) -> dict[str, str]:
    """The failure markers the task (or the run) holds, with the reason each gives."""
    paths = {m: rd.marker(task_id, m) for m in MARKERS}
    return {m: p.read_text(errors="replace").strip() for m, p in paths.items() if p.is_file()}


@dataclass
class Branch:
    """One active test branch's results after ProgramBench's own filtering (ignored tests removed)."""

    name: str
    counts: dict[str, int]
    not_passing: list[tuple[str, str]]
    errors: list[TestBranchError]

    @property
    def passed(self) -> int:
        return self.counts.get("passed", 0)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Task:
    task_id: str
    record: Score
    score_from: str
    evaluated: bool
    receipts: dict[str, Receipt[Any]]
    unknown_steps: list[str]
    markers: dict[str, str]
    branches: list[Branch] = field(default_factory=list)
    ignored_branches: list[str] = field(default_factory=list)
    eval_error: str | None = None
    warnings: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    timeline: Markup | None = None
    anchor: str = ""

    @property
    def status(self) -> str:
        return "scored" if self.record.complete else "incomplete" if self.evaluated else "not evaluated"

    @property
    def passed(self) -> int:
        return sum(b.passed for b in self.branches)

    @property
    def total(self) -> int:
        return sum(b.total for b in self.branches)

    @property
    def incomplete_archives(self) -> dict[str, str]:
        shutdown = self.receipts.get(steps.SHUTDOWN.name)
        if shutdown is None or not isinstance(shutdown.result, ShutdownResult):
            return {}
        return {k: v for k, v in shutdown.result.archives.items() if v != "ok"}

    @property
    def sessions(self) -> dict[str, Session]:
        """Each worker's Copilot CLI session (turns, tool calls, watchdog recoveries) from its activity log."""
        shutdown = self.receipts.get(steps.SHUTDOWN.name)
        return shutdown.result.sessions if shutdown and isinstance(shutdown.result, ShutdownResult) else {}


@dataclass
class Run:
    index: int
    path: Path
    manifest: Manifest
    gate: GateResult | None
    receipts: dict[str, Receipt[Any]]
    unknown_steps: list[str]
    markers: dict[str, str]
    tasks: list[Task]
    headline: dict[str, Any] | None
    headline_benchmark: dict[str, Any] | None
    headline_note: str

    @property
    def profile(self) -> dict[str, Any]:
        return self.manifest.profile

    @property
    def kind(self) -> str:
        return self.profile.get("kind", "team")

    @property
    def name(self) -> str:
        return f"{self.profile.get('profile', self.path.parent.name)} {self.profile.get('run_id', self.path.name)}"

    def task(self, task_id: str) -> Task | None:
        return next((t for t in self.tasks if t.task_id == task_id), None)


def branches_of(result: EvaluationResult, instance: dict[str, Any]) -> tuple[list[Branch], list[str]]:
    """Per active branch, the tests `score_instance` counts (the same filtering as ProgramBench's
    `test_results_map`, one result per full name); and the branches ProgramBench ignores."""
    active = get_active_branches(instance)
    kept = result.for_branches(active).without_ignored(get_ignored_tests(instance))
    tests = {t.full_name: t for t in kept.test_results}
    out = []
    for name in dict.fromkeys([*kept.test_branches, *(t.branch for t in tests.values())]):
        mine = [t for t in tests.values() if t.branch == name]
        counts = {s: n for s in STATUSES if (n := sum(t.status == s for t in mine))}
        out.append(
            Branch(
                name,
                counts,
                [(t.name, t.status) for t in mine if not t.is_resolved],
                kept.test_branch_errors.get(name, []),
            )
        )
    return out, sorted(set(result.test_branches) - set(active))


def judged(rd: RunDir, task_id: str) -> tuple[Score, str]:
    """The task's score record: the score step's, else judged here by the same rule (nothing is written)."""
    record = read(rd.score(task_id), lambda p: read_record(p, Score))
    if record is not None:
        return record, "score.json"
    try:
        return read(rd.eval_json(task_id), lambda _: assess(rd, task_id)), "judged by the report (no score.json yet)"
    except StepFailed as err:  # not a task of this ProgramBench
        return Score(
            task_id=task_id,
            score=None,
            raw_score=None,
            complete=False,
            problems=[str(err)],
            eval_json=str(rd.eval_json(task_id)),
        ), "not scored"


def load_task(rd: RunDir, task_id: str, wake_offsets: list[float]) -> Task:
    known, unknown = receipts(rd, task_id)  # first: the score reads some of them, and a bad one is named here
    data = (
        read(rd.eval_json(task_id), lambda p: EvaluationResult.model_validate_json(p.read_bytes()))
        if rd.eval_json(task_id).exists()
        else None
    )
    record, score_from = judged(rd, task_id)
    task = Task(task_id, record, score_from, data is not None, known, unknown, markers(rd, task_id))
    if data is not None:
        if task_id in instances():
            task.branches, task.ignored_branches = branches_of(data, instances()[task_id])
        if data.error_code:
            task.eval_error = data.error_code + (f": {data.error_details}" if data.error_details else "")
        task.warnings = data.warnings
    task.events = task_events(task.receipts, wake_offsets)
    return task


def wakes_due(profile: dict[str, Any]) -> list[float]:
    """When each worker was due to wake (seconds after the ramp start), from the run's profile; none when the
    profile is a baseline's or no longer validates with this checkout."""
    if profile.get("kind", "team") != "team":
        return []
    try:
        return list(Profile.model_validate(profile).task_budget.worker_offsets)
    except ValidationError:
        return []


def headlines(manifest: Manifest, tasks: list[Task]) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """The manifest's headline once the run finished; before that, ProgramBench's `aggregate` over the complete
    scores here, against the requested tasks."""
    if manifest.headline_requested:
        return manifest.headline_requested, manifest.headline_benchmark, "from run_manifest.json"
    scores = {t.task_id: t.record.score for t in tasks if t.record.score is not None}
    if not scores:
        return None, None, "no complete score yet"
    return (
        aggregate(scores, len(manifest.requested_task_ids or tasks)).as_dict(),
        None,
        "computed by the report from the complete scores (the manifest has no headline yet)",
    )


def load_run(index: int, path: Path) -> Run:
    rd = RunDir(path)
    if not rd.manifest.is_file():
        raise ReportError(f"{path}: not a run directory (no {rd.manifest.name})")
    manifest = read(rd.manifest, lambda p: Manifest.model_validate_json(p.read_text()))
    offsets = wakes_due(manifest.profile)
    tasks = [load_task(rd, t, offsets) for t in dict.fromkeys([*manifest.requested_task_ids, *rd.task_ids()])]
    for n, t in enumerate(tasks):
        t.anchor = f"run{index}-task{n}"
        if t.events:
            t.timeline = Markup(plot_svg(t.events, salt=t.anchor))
    gate = read(rd.gate, lambda p: read_record(p, GateResult))
    known, unknown = receipts(rd, None)
    held = markers(rd, None)
    headline, benchmark, note = headlines(manifest, tasks)
    return Run(index, path, manifest, gate, known, unknown, held, tasks, headline, benchmark, note)


def pairs(runs: list[Run]) -> list[dict[str, Any]]:
    """Each team run beside each baseline run, for every task both ran."""
    out = []
    for base in (r for r in runs if r.kind == "baseline"):
        for team in (r for r in runs if r.kind != "baseline"):
            for bt in base.tasks:
                tt = team.task(bt.task_id)
                if tt is None:
                    continue
                b, t = bt.record.score, tt.record.score
                out.append(
                    {
                        "task_id": bt.task_id,
                        "team": team,
                        "baseline": base,
                        "team_task": tt,
                        "baseline_task": bt,
                        "difference": t - b if t is not None and b is not None else None,
                    }
                )
    return out


def fmt_score(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return ""
    h, rest = divmod(round(value), 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def fmt_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def took(r: Receipt[Any]) -> str:
    return fmt_seconds(epoch(r.finished) - epoch(r.started))


def receipt_details(r: Receipt[Any]) -> str:
    """A receipt's result (its events are on the timeline), failure marker and details, shortened for the table."""
    fields = r.result.model_dump(mode="json", exclude={"events"}) if r.result is not None else {}
    fields |= {"marker": r.marker, **r.details}
    text = ", ".join(f"{k}={fmt_value(v)}" for k, v in sorted(fields.items()) if v not in (None, [], {}))
    return text if len(text) <= 300 else text[:297] + "..."


def render(runs: list[Run]) -> str:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(score=fmt_score, took=took, value=fmt_value, details=receipt_details)
    all_tasks = list(dict.fromkeys(t.task_id for r in runs for t in r.tasks))
    return env.get_template("report.html.j2").render(
        runs=runs, tasks=all_tasks, pairs=pairs(runs), shown_tests=SHOWN_TESTS
    )


def write(path: Path, text: str) -> None:
    """The page at once (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def report(run_dirs: list[Path], out: Path | None = None) -> Path:
    """Render the runs' page: to `out`, or for one run to its `report.html`. The entry point of a report step and of
    the report command."""
    if len(run_dirs) > 1 and out is None:
        raise ReportError("a report across several runs needs an output path")
    runs = [load_run(i, p.resolve()) for i, p in enumerate(run_dirs)]
    out = out or RunDir(run_dirs[0]).report
    write(out, render(runs))
    return out
