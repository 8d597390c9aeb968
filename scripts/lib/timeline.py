"""A task's timeline: `records.Event`s taken from its step receipts, drawn as an inline SVG plot (matplotlib).

An event is a point (`at`) or a span (`at` to `end`) of a kind, in epoch seconds. `KINDS` says how each kind is
drawn; a new kind is one line there, and an unknown kind still shows in the `other` lane. Events come from two
places: derived from the steps' own results (`SOURCES`, one function per result model: ramp start, kickoff,
deadline, reminders, export, archive grace, evaluation), and listed by any step whose result has an `events` field
(the wake and idle-nudge steps), so such a step needs no code here to appear on the timeline.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import matplotlib
from matplotlib import dates as mdates
from matplotlib.figure import Figure
from matplotlib.markers import MarkerStyle

from model.records import (
    LATE_S,
    BaselineSeedResult,
    EvaluateResult,
    Event,
    ExportResult,
    KickoffResult,
    Receipt,
    Record,
    RemindersResult,
    ShutdownResult,
)
from scripts.lib.step import epoch

ResultT = TypeVar("ResultT", bound=Record)


@dataclass(frozen=True)
class Kind:
    title: str  # in the legend
    lane: str  # the row it is drawn in
    color: str
    marker: str = "o"
    filled: bool = True
    annotate: bool = True  # write the event's label beside it (off for kinds with many events, e.g. wakes)
    rule: bool = False  # also a vertical line across every lane


LANES = ("ramp", "team", "submission", "evaluation", "other")
KINDS: dict[str, Kind] = {
    "ramp_start": Kind("ramp start", "ramp", "#636363", "|", rule=True),
    "wake_due": Kind("wake due", "ramp", "#6baed6", "o", filled=False, annotate=False),
    "wake": Kind("wake", "ramp", "#2171b5", "o", annotate=False),
    "work_start": Kind("work start", "ramp", "#636363", "|", rule=True),
    "kickoff": Kind("kickoff", "team", "#238b45", "D"),
    "reminder": Kind("reminder", "team", "#fd8d3c", "v"),
    "reminder_skipped": Kind("reminder skipped", "team", "#fd8d3c", "v", filled=False),
    "nudge": Kind("idle nudge", "team", "#d94801", "^", annotate=False),
    "restart": Kind("worker started again", "ramp", "#cb181d", "o"),
    "deadline": Kind("deadline", "submission", "#cb181d", "|", rule=True),
    "export": Kind("export", "submission", "#6a51a3", "s"),
    "archive_grace": Kind("archive grace", "submission", "#a6761d"),
    "evaluation": Kind("evaluation", "evaluation", "#1b9e77"),
    "step_failed": Kind("step failed", "other", "#a50f15", "X"),
    "data_root_low": Kind("data root low", "other", "#a50f15", "P", rule=True),
    "data_root_full": Kind("data root full", "other", "#a50f15", "X", rule=True),
}


def kind_of(name: str) -> Kind:
    """The kind's drawing; a kind not in KINDS still shows, in the `other` lane."""
    return KINDS.get(name) or Kind(name.replace("_", " "), "other", "#737373")


def _result(r: Receipt[Any], model: type[ResultT]) -> ResultT:
    """The receipt's result, of the model `SOURCES` picked its function by."""
    assert isinstance(r.result, model), (r.step, type(r.result))
    return r.result


def _kickoff(r: Receipt[Any], deadline: float | None) -> list[Event]:
    k = _result(r, KickoffResult)
    return [
        Event(kind="ramp_start", at=k.ramp_start_epoch, label="ramp start"),
        Event(kind="kickoff", at=epoch(k.kickoff_at), label="kickoff"),
        Event(kind="deadline", at=k.deadline_epoch, label="deadline"),
    ]


def _baseline_seed(r: Receipt[Any], deadline: float | None) -> list[Event]:
    b = _result(r, BaselineSeedResult)
    return [
        Event(kind="work_start", at=b.started_epoch, label="work start"),
        Event(kind="deadline", at=b.deadline_epoch, label="deadline"),
    ]


def _reminders(r: Receipt[Any], deadline: float | None) -> list[Event]:
    rem = _result(r, RemindersResult)
    due = epoch(rem.deadline)  # each reminder is posted `minutes` before the deadline (skipped: was due then)
    return [Event(kind="reminder", at=due - 60 * m, label=f"{m} min left") for m in rem.posted] + [
        Event(kind="reminder_skipped", at=due - 60 * m, label=f"{m} min (skipped)") for m in rem.skipped
    ]


def _export(r: Receipt[Any], deadline: float | None) -> list[Event]:
    e = _result(r, ExportResult)
    return [Event(kind="export", at=epoch(e.exported_at), label="export (recovered)" if e.recovered_from else "export")]


def _shutdown(r: Receipt[Any], deadline: float | None) -> list[Event]:
    s = _result(r, ShutdownResult)
    start, end = epoch(r.started), epoch(r.finished)
    start = max(start, deadline) if deadline is not None else start  # a baseline's stop step waits for the deadline
    label = "archive grace" + ("" if s.archives_complete else " (archives incomplete)")
    return [Event(kind="archive_grace", at=start, end=max(start, end), label=label)]


def _evaluate(r: Receipt[Any], deadline: float | None) -> list[Event]:
    e = _result(r, EvaluateResult)
    return [Event(kind="evaluation", at=epoch(r.started), end=epoch(r.finished), label=f"evaluation {e.seconds:.0f} s")]


# The events each step result implies, by the result's model.
SOURCES: dict[type[Record], Callable[[Receipt[Any], float | None], list[Event]]] = {
    KickoffResult: _kickoff,
    BaselineSeedResult: _baseline_seed,
    RemindersResult: _reminders,
    ExportResult: _export,
    ShutdownResult: _shutdown,
    EvaluateResult: _evaluate,
}


def deadline_of(receipts: dict[str, Receipt[Any]]) -> float | None:
    for r in receipts.values():
        if isinstance(r.result, (KickoffResult, BaselineSeedResult)):
            return r.result.deadline_epoch
    return None


def task_events(receipts: dict[str, Receipt[Any]], wake_offsets: list[float]) -> list[Event]:
    """Every event of a task from its receipts (by step name); `wake_offsets` (seconds after the ramp start, from
    the profile) add the wakes due, so a late or missing wake shows against its due time."""
    deadline = deadline_of(receipts)
    out: list[Event] = []
    for step, r in sorted(receipts.items()):
        if r.result is not None and (derive := SOURCES.get(type(r.result))) is not None:
            out += derive(r, deadline)
        out += getattr(r.result, "events", None) or []
        if r.status == "failed":
            out.append(Event(kind="step_failed", at=epoch(r.finished), label=f"{step} failed"))
    start = next((e.at for e in out if e.kind == "ramp_start"), None)
    if start is not None:
        out += [Event(kind="wake_due", at=start + s, label=f"worker {n + 1}") for n, s in enumerate(wake_offsets)]
    return sorted(out, key=lambda e: (e.at, e.kind))


def utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _draw(ax: Any, kind: Kind, group: list[Event], y: float) -> None:
    """One kind's events in its lane: spans as bars, points as markers (a late one ringed in red)."""
    spans = [e for e in group if e.end is not None]
    points = [e for e in group if e.end is None]
    if spans:
        ax.broken_barh(
            [
                (mdates.date2num(utc(e.at)), mdates.date2num(utc(e.end)) - mdates.date2num(utc(e.at)))
                for e in spans
                if e.end is not None
            ],
            (y - 0.3, 0.6),
            color=kind.color,
            label=kind.title,
        )
    if points:
        colors = (
            {"facecolors": kind.color if kind.filled else "none", "edgecolors": kind.color}
            if MarkerStyle(kind.marker).is_filled()
            else {"color": kind.color}
        )
        ax.scatter(
            [utc(e.at) for e in points],
            [y] * len(points),
            marker=kind.marker,
            s=36,
            zorder=3,
            label=kind.title,
            **colors,
        )
        late = [e for e in points if (e.late_s or 0) > LATE_S]
        if late:
            ax.scatter(
                [utc(e.at) for e in late],
                [y] * len(late),
                marker="o",
                s=90,
                zorder=2,
                facecolors="none",
                edgecolors="#cb181d",
                label=f"{kind.title} late",
            )
    if kind.rule:
        for e in group:
            ax.axvline(utc(e.at), color=kind.color, linewidth=0.8, linestyle="--", zorder=1)


def _annotate(ax: Any, events: list[Event], row: dict[str, int], top: float) -> None:
    """Labels beside the events that get one (alternately above and below); a rule's at the top."""
    shown = [e for e in events if kind_of(e.kind).annotate or (e.late_s or 0) > LATE_S]
    for n, e in enumerate(shown):
        kind = kind_of(e.kind)
        text = e.label + (f" (late {e.late_s:.0f} s)" if (e.late_s or 0) > LATE_S else "")
        if kind.rule:
            ax.annotate(
                text, (utc(e.at), top), xytext=(3, -9), textcoords="offset points", fontsize=7, color=kind.color
            )
        else:
            ax.annotate(
                text,
                (utc(e.at), row[kind.lane]),
                xytext=(3, 7 if n % 2 == 0 else -13),
                textcoords="offset points",
                fontsize=7,
                color="#252525",
            )


def plot_svg(events: list[Event], salt: str) -> str:
    """The events as an SVG element (text kept as text, so labels are searchable; ids salted per plot so several
    plots can share one page). Matplotlib escapes the labels it writes."""
    lanes = [lane for lane in LANES if any(kind_of(e.kind).lane == lane for e in events)]
    row = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    top = len(lanes) + 0.1
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "text.parse_math": False,
            "svg.hashsalt": salt,
            "font.size": 8,
            "font.family": "sans-serif",
        }
    ):
        width, height = 11.0, 1.2 + 0.5 * len(lanes)  # inches; fixed margins (a tight bounding box draws twice)
        fig = Figure(figsize=(width, height))
        fig.subplots_adjust(left=0.9 / width, right=1 - 1.5 / width, bottom=0.55 / height, top=1 - 0.15 / height)
        ax = fig.subplots()
        for name in dict.fromkeys(e.kind for e in events):
            kind = kind_of(name)
            _draw(ax, kind, [e for e in events if e.kind == name], row[kind.lane])
        _annotate(ax, events, row, top)
        ax.set_yticks(list(row.values()), list(row))
        ax.set_ylim(-0.7, top)
        locator = mdates.AutoDateLocator(tz=UTC)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))
        ax.set_xlabel("UTC")
        ax.grid(axis="x", color="#eeeeee")
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=7, frameon=False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]
