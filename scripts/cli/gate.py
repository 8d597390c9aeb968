"""gate: the calibration gate (docs/requirements.md R48), candidate runs scored paired per task against a reference.

`python -m scripts.cli gate RUN_DIR... --reference DIR [--second-baseline DIR]` prints the paired table and the
verdict and writes `gate.json` (`GateResult` of model/records.py) into the first run directory. The rules
(seed, "Full-run gate"; those marked * are this project's where the seed is silent):
- The gate's tasks are the ones the candidate runs requested (`requested_task_ids` of their manifests); a task
  requested by two candidate runs is refused* (choosing the better attempt would flatter the candidate).
- Every score is ProgramBench's own: `score_instance` per task, `aggregate` for the means (so means carry its
  headline precision, 4 decimals, and are compared at it).
- A run directory of this project is read with the completeness rule of scripts/lib/scoring.py (`assess`): a requested
  task with no eval JSON, an evaluator `error_code`, `test_branch_errors`, a RUN_FAILED / EXPORT_FAILED marker
  or incomplete shutdown archives counts 0, as ProgramBench counts an untried task 0, and says why. A task the
  run did not request is absent from it.
- A directory in the leaderboard's published layout (`<task>/<task>.eval.json`, no `run_manifest.json`) counts
  each eval JSON as the leaderboard scored it, also one carrying `error_code` or `test_branch_errors` (noted);
  a task without one is absent.
- Pairs are matched by task id. A gate task absent from the reference cannot be paired: it is listed and left
  out of both means*. PASS needs the candidate's mean >= the reference's mean on the paired tasks and, with a
  second baseline, >= the baseline's mean on the tasks both have* ("not worse on the shared subset").
- Otherwise FAIL, or PAUSED when the host was overloaded: a load reading's 5-minute average per CPU above
  `--max-load-per-cpu`* (default 1.5). The readings, attached to the result: this host now, and each candidate
  manifest's `host` record (taken at run start). A PASS stays a PASS under load.
- Exit codes: 0 PASS, 1 FAIL, 3 PAUSED, 2 bad input (the message names it; nothing is written).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Literal

import typer
from programbench.submission import aggregate, score_instance

from model.profile import ProfileError
from model.records import Comparison, GatePair, GateResult, Host, LoadCheck, LoadReading, Manifest, read_record
from model.rundir import CopyDir, RunDir
from model.stackfiles import load_profile
from scripts.cli import options
from scripts.lib import copies
from scripts.lib.host import host_resources
from scripts.lib.scoring import assess, instances
from scripts.lib.step import now, write_atomic

DEFAULT_MAX_LOAD_PER_CPU = 1.5
EXIT_CODES = {"PASS": 0, "FAIL": 1, "PAUSED": 3}
BAD_INPUT = 2
NOTE_WIDTH = 110

cli = options.typer_app()


class BadInput(Exception):
    """An input the gate cannot use; the message names it."""


@dataclass(frozen=True)
class SideScore:
    """A task's score on one side of the gate."""

    counted: float  # what enters the mean
    raw: float | None  # ProgramBench's score of the eval JSON, when there is one it can score
    notes: list[str] = field(default_factory=list)


def reading(source: str, host: Host) -> LoadReading | None:
    """A load reading of a host record; None when the host did not say how many CPUs it has."""
    if not host.cpus:
        return None
    return LoadReading(source=source, cpus=host.cpus, load=host.load, per_cpu_5min=round(host.load[1] / host.cpus, 2))


@dataclass(frozen=True)
class RunSource:
    """One side of the gate: this project's run directory (with its manifest) or a published layout (`manifest`
    None). A stack becomes one through its `run_dir` output."""

    path: Path
    manifest: Manifest | None = None

    @property
    def requested(self) -> list[str] | None:
        return self.manifest.requested_task_ids if self.manifest else None

    def score(self, task_id: str) -> SideScore | None:
        """The task's score on this side, or None when this side does not have the task."""
        if self.manifest is None:
            eval_json = RunDir(self.path).eval_json(task_id)
            if not eval_json.is_file():
                return None
            try:
                data = json.loads(eval_json.read_text())
                raw = score_instance(eval_json, instances()[task_id])
            except (OSError, ValueError) as err:  # ValidationError and JSONDecodeError are ValueErrors
                raise BadInput(f"{eval_json}: not an evaluator result ({err})") from err
            notes = [f"{key} (counted as published)" for key in ("error_code", "test_branch_errors") if data.get(key)]
            return SideScore(counted=raw, raw=raw, notes=notes)
        if task_id not in self.manifest.requested_task_ids:
            return None
        try:
            record = assess(RunDir(self.path), task_id)
        except (OSError, ValueError) as err:
            raise BadInput(f"{self.path / task_id}: cannot score ({type(err).__name__}: {err})") from err
        if record.complete and record.score is not None:
            return SideScore(counted=record.score, raw=record.raw_score)
        return SideScore(counted=0.0, raw=record.raw_score, notes=[f"counted 0: {'; '.join(record.problems)}"])


def resolve(arg: str, role: str) -> RunSource:
    """The run source an argument names: a run directory of this project, or a published layout.

    The one place an argument becomes a source: a directory, or a stack name (its run directory)."""
    path = Path(arg)
    if not path.is_dir():
        try:  # a stack of this project: its run directory, from the stack file's plain settings
            path = RunDir.of(load_profile(arg)).path
        except (FileNotFoundError, ProfileError):
            raise BadInput(f"{role} {arg}: neither a directory nor a stack of this project") from None
        if not path.is_dir():
            raise BadInput(f"{role} {arg}: the stack's run directory {path} does not exist (not launched yet)")
    rd = RunDir(path.resolve())
    try:
        manifest = read_record(rd.manifest, Manifest)
    except (OSError, ValueError) as err:
        raise BadInput(f"{role} {rd.manifest}: not a run manifest ({err})") from err
    if manifest is None:
        if not any(rd.eval_json(d.name).is_file() for d in path.iterdir() if d.is_dir()):
            raise BadInput(
                f"{role} {arg}: neither a run directory (no run_manifest.json) nor a published layout "
                "(no <task>/<task>.eval.json)"
            )
        return RunSource(rd.path)
    if not manifest.requested_task_ids:
        raise BadInput(f"{role} {rd.manifest}: requests no task")
    unknown = [t for t in manifest.requested_task_ids if t not in instances()]
    if unknown:
        raise BadInput(f"{role} {rd.manifest}: not ProgramBench tasks: {', '.join(unknown)}")
    return RunSource(rd.path, manifest)


def compare(pairs: list[GatePair], side: Literal["reference", "baseline"], against: Path) -> Comparison:
    """Both means over the tasks this side has, by ProgramBench's `aggregate` (its headline precision, compared
    at it)."""
    shared = [p for p in pairs if getattr(p, side) is not None]
    if not shared:
        raise BadInput(f"{side} {against}: has none of the candidate runs' tasks")
    mine = aggregate({p.task_id: p.candidate for p in shared}, len(shared)).mean_score
    other = aggregate({p.task_id: getattr(p, side) for p in shared}, len(shared)).mean_score
    return Comparison(
        against=str(against),
        task_ids=[p.task_id for p in shared],
        candidate_mean=mine,
        other_mean=other,
        passed=mine >= other,
    )


def gate(
    candidates: list[RunSource],
    reference: RunSource,
    baseline: RunSource | None,
    host_now: Host,
    max_load_per_cpu: float = DEFAULT_MAX_LOAD_PER_CPU,
) -> GateResult:
    """The gate's typed result (nothing is written); `host_now` is a `host_resources()` reading of this host."""
    for c in candidates:
        if c.manifest is None:
            raise BadInput(f"candidate {c.path}: not a run directory of this project (no run_manifest.json)")
    owner = {t: c for c in candidates for t in c.requested or ()}
    task_ids = [t for c in candidates for t in c.requested or ()]
    twice = sorted({t for t in task_ids if task_ids.count(t) > 1})
    if twice:
        raise BadInput(f"candidates: requested more than once (one attempt per task): {', '.join(twice)}")
    pairs = []
    for t in task_ids:
        cand = owner[t].score(t)
        assert cand is not None  # a candidate has every task it requested
        ref = reference.score(t)
        base = baseline.score(t) if baseline else None
        notes = [f"candidate {n}" for n in cand.notes]
        notes += (
            [f"reference {n}" for n in ref.notes] if ref else ["not in the reference: unpaired, left out of both means"]
        )
        if baseline:
            notes += [f"baseline {n}" for n in base.notes] if base else ["not in the second baseline"]
        pairs.append(
            GatePair(
                task_id=t,
                candidate=cand.counted,
                candidate_raw=cand.raw,
                reference=ref.counted if ref else None,
                baseline=base.counted if base else None,
                delta=cand.counted - ref.counted if ref else None,
                notes=notes,
            )
        )
    comparisons = [compare(pairs, "reference", reference.path)]
    if baseline:
        comparisons.append(compare(pairs, "baseline", baseline.path))
    readings = [
        r
        for r in [reading("gate host now", host_now)]
        + [reading(f"{RunDir(c.path).manifest} (run start)", c.manifest.host) for c in candidates if c.manifest]
        if r
    ]
    load = LoadCheck(
        max_load_per_cpu=max_load_per_cpu,
        readings=readings,
        overloaded=any(r.per_cpu_5min > max_load_per_cpu for r in readings),
    )
    reasons = [
        f"candidate mean {c.candidate_mean:.4f} {'>=' if c.passed else '<'} {c.other_mean:.4f} of {c.against} "
        f"on {len(c.task_ids)} tasks"
        for c in comparisons
    ]
    reasons += [
        f"candidate run {c.path} is not finished (state {c.manifest.state}): its unscored tasks count 0"
        for c in candidates
        if c.manifest and c.manifest.state != "finished"
    ]
    verdict: Literal["PASS", "FAIL", "PAUSED"] = "PASS"
    if not all(c.passed for c in comparisons):
        verdict = "PAUSED" if load.overloaded else "FAIL"
    if verdict == "PAUSED":
        reasons.append(
            f"host overloaded (5-minute load per CPU above {max_load_per_cpu}): re-run the gate when contention clears"
        )
    return GateResult(
        verdict=verdict,
        reasons=reasons,
        written=now(),
        candidates=[str(c.path) for c in candidates],
        reference=str(reference.path),
        second_baseline=str(baseline.path) if baseline else None,
        task_ids=task_ids,
        pairs=pairs,
        versus_reference=comparisons[0],
        versus_baseline=comparisons[1] if baseline else None,
        load=load,
        programbench_version=version("programbench"),
    )


def render(result: GateResult) -> str:
    """The paired table, the means, the load readings and the verdict, for a person."""

    def num(v: float | None, sign: str = "") -> str:
        return "-" if v is None else f"{v:{sign}.4f}"

    with_base = result.versus_baseline is not None
    head = ["task", "candidate", "reference", *(["baseline"] if with_base else []), "delta", "note"]
    rows = [
        [
            p.task_id,
            num(p.candidate),
            num(p.reference),
            *([num(p.baseline)] if with_base else []),
            num(p.delta, "+"),
            "; ".join(p.notes),
        ]
        for p in result.pairs
    ]
    rows = [[*r[:-1], r[-1] if len(r[-1]) <= NOTE_WIDTH else r[-1][: NOTE_WIDTH - 1] + "…"] for r in rows]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in [head, *rows]]
    comparisons = [("reference", result.versus_reference), ("second baseline", result.versus_baseline)]
    for name, c in comparisons:
        if c:
            lines.append(
                f"{name}: {len(c.task_ids)} of {len(result.task_ids)} tasks, candidate mean "
                f"{c.candidate_mean:.4f} {'>=' if c.passed else '<'} {c.other_mean:.4f} ({c.against})"
            )
    lines.append(
        f"host load (5-minute average per CPU, limit {result.load.max_load_per_cpu}): "
        + "; ".join(
            f"{r.source} {r.per_cpu_5min} ({'/'.join(f'{x:.2f}' for x in r.load)} on {r.cpus} CPUs)"
            for r in result.load.readings
        )
    )
    lines.append(f"verdict: {result.verdict}" + "".join(f"\n  {r}" for r in result.reasons))
    return "\n".join(lines)


def record(rd: RunDir, result: GateResult) -> None:
    """gate.json in the run directory, the verdict in its manifest, and the run's copy brought up to date (so the
    results stay verified for destroy)."""
    write_atomic(rd.gate, result)
    manifest = read_record(rd.manifest, Manifest)
    if manifest is None:  # a reference used as a candidate has no manifest: gate.json alone
        return
    write_atomic(rd.manifest, manifest.model_copy(update={"gate": result}))
    if manifest.copy_dir:
        t = copies.refresh(rd, CopyDir(Path(manifest.copy_dir)), [rd.gate, rd.manifest])
        if t.problems:
            print(
                f"gate: the run's copy in {manifest.copy_dir} is not verified: {'; '.join(t.problems[:3])}",
                file=sys.stderr,
            )


@cli.command()
def command(
    runs: Annotated[
        list[str], typer.Argument(metavar="RUN_DIR", help="candidate run directories of this project, or their stacks")
    ],
    reference: Annotated[
        str, typer.Option(metavar="DIR", help="published layout (<task>/<task>.eval.json) or a run directory")
    ],
    second_baseline: Annotated[
        str | None,
        typer.Option(
            metavar="DIR", help="another reference the candidate must not be worse than on the tasks both have"
        ),
    ] = None,
    max_load_per_cpu: Annotated[
        float, typer.Option(help="5-minute load average per CPU above which a failing gate is PAUSED")
    ] = DEFAULT_MAX_LOAD_PER_CPU,
    as_json: options.Json = False,
) -> int:
    """Prints the paired table and the verdict and writes gate.json into the first run directory. Exits 0 PASS, 1
    FAIL, 3 PAUSED (the host was overloaded), 2 bad input (named; nothing is written)."""
    try:
        if not max_load_per_cpu > 0:
            raise BadInput(f"--max-load-per-cpu {max_load_per_cpu}: must be above 0")
        candidates = [resolve(run, "candidate") for run in runs]
        reference_run = resolve(reference, "reference")
        baseline = resolve(second_baseline, "second baseline") if second_baseline else None
        result = gate(candidates, reference_run, baseline, host_resources(), max_load_per_cpu)
    except BadInput as err:
        print(f"gate: {err}", file=sys.stderr)
        return BAD_INPUT
    record(RunDir(candidates[0].path), result)
    print(result.model_dump_json(indent=2) if as_json else render(result))
    return EXIT_CODES[result.verdict]
