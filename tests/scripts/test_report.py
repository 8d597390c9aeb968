"""report: rendered from real evaluator output and a demo-shaped run, checked in headless Chromium.

The runs are written through the steps' own records (the manifest and score steps run for real; the other receipts
are built as `run_step` writes them, since those steps need Docker and the services). The scores the page must
show are computed here with ProgramBench's own helpers (`score_instance`, `test_results_map`), independently of
the report. Chromium runs with every name unresolvable and a dead proxy, so nothing leaves the machine; its
network log shows whether the page itself asked for anything.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import programbench
import pytest
from programbench import submission
from programbench.utils.load_data import load_all_instances

from model import steps
from model.profile import Profile
from model.project import ROOT
from model.records import (
    BaselineSeedResult,
    EvaluateResult,
    Event,
    ExportResult,
    GateResult,
    Host,
    KickoffResult,
    Receipt,
    Record,
    RemindersResult,
    ShutdownResult,
    read_record,
)
from model.rundir import EXPORT_FAILED, RunDir
from model.step_inputs import ManifestInputs
from scripts import manifest, score
from scripts.cli import gate
from scripts.cli.app import main as cli
from scripts.lib import timeline
from scripts.lib.step import iso, write_atomic, write_marker
from tests.conftest import require
from tests.scripts.conftest import LEADERBOARD as FIXTURES
from tests.scripts.conftest import leaderboard_tasks

BUNDLED = Path(programbench.__file__).parent / "data" / "test_runs"
DEMO_TASK = "testorg__calculator.abc1234"
T0 = 1_795_000_000.0  # 2026-11-18, the first ramp start of the runs built here
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
]
TIMELINE_LABELS = ("ramp start", "wake due", "kickoff", "reminder", "deadline", "export", "archive grace", "evaluation")


# --- the page, as a tree (the stdlib parser; Chromium's DOM is HTML, not XML) ------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find(self, tag: str | None = None, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag) and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def field(self, name: str) -> str:
        return self.find(data_field=name)[0].text().strip()


class Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    tree = Tree()
    tree.feed(html)
    return tree.root


# --- Chromium ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium() -> str:
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    require(Path(exe).exists(), "Debian's chromium (apt-get install chromium)")
    return exe


@pytest.fixture(scope="session")
def artifacts() -> Path:
    out = Path(os.environ.get("AGENSH_TEST_ARTIFACTS", ROOT / ".test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def run_chromium(exe: str, page: Path, tmp: Path, *mode: str) -> str:
    """One headless Chromium with a fresh profile; its process group is killed if it outlives the timeout."""
    profile = tmp / f"chromium-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *mode, page.as_uri()],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}"
    return out


@dataclass
class Page:
    dom: Node
    requests: list[str]  # what the page itself asked the network for


def browse(exe: str, page: Path, tmp: Path, screenshot: Path) -> Page:
    """The rendered DOM, the page's own network requests (not the browser's), and a screenshot."""
    net_log = tmp / f"net-{uuid.uuid4().hex[:8]}.json"
    dom = run_chromium(exe, page, tmp, f"--log-net-log={net_log}", "--dump-dom")
    run_chromium(exe, page, tmp, f"--screenshot={screenshot}", "--window-size=1400,3000")
    log = json.loads(net_log.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    requests = [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start_job
        and e.get("params", {}).get("url")
        and e["params"].get("initiator") != "not an origin"
        and not e["params"]["url"].startswith(("file:", "data:"))
    ]
    assert screenshot.stat().st_size > 10_000
    return Page(parse(dom), requests)


def external_references(html: str) -> list[str]:
    """Attribute or CSS references that would make a browser fetch something from elsewhere."""
    return re.findall(
        r"""(?:src|href|action|poster|srcset)\s*=\s*["']?\s*(?:https?:)?//[^"'\s>]*|url\(\s*["']?(?:https?:)?//|@import""",
        html,
        flags=re.IGNORECASE,
    )


# --- run directories built here, through the steps' own records -------------------------------------------------


def receipt(
    run: Path,
    task: str | None,
    step: str,
    started: float,
    finished: float,
    result: Record | None,
    status: str = "ok",
    error: str | None = None,
) -> None:
    """A step's receipt as `run_step` writes it (the steps themselves need Docker and the services)."""
    rd = RunDir(run)
    write_atomic(
        rd.receipt(step, task),
        Receipt[type(result) if result is not None else Record](  # type: ignore[misc]
            step=step,
            task_id=task,
            inputs_digest="0123456789abcdef",
            started=iso(started),
            finished=iso(finished),
            status=status,
            result=result,
            error=error,
        ),
    )


def team_task_receipts(run: Path, task: str, p: Profile, t0: float, eval_s: float) -> float:
    """A team task's receipts as the steps write them (ramp start t0); returns when its shutdown finished."""
    b = p.task_budget
    deadline = t0 + b.budget_s
    receipt(
        run,
        task,
        "kickoff",
        t0,
        t0 + b.kickoff_s,
        KickoffResult(
            ramp_start=iso(t0),
            ramp_start_epoch=t0,
            kickoff_at=iso(t0 + b.kickoff_s),
            deadline=iso(deadline),
            deadline_epoch=deadline,
            post_id="p1",
        ),
    )
    receipt(
        run,
        task,
        "reminders",
        t0 + b.kickoff_s,
        deadline - 60 * min(p.reminder_minutes),
        RemindersResult(posted=sorted(p.reminder_minutes, reverse=True), skipped=[], deadline=iso(deadline)),
    )
    receipt(
        run,
        task,
        "export",
        t0 + b.kickoff_s,
        deadline + 9,
        ExportResult(
            submission=str(RunDir(run).submission(task)), commit="4f1c2d9e0b7a", files=37, exported_at=iso(deadline + 8)
        ),
    )
    shutdown_end = deadline + 9 + p.export_grace_s / 3
    receipt(
        run,
        task,
        "shutdown",
        deadline + 9,
        shutdown_end,
        ShutdownResult(archives={f"{p.profile}-{task}-w{n}": "ok" for n in range(p.workers)}, archives_complete=True),
    )
    receipt(
        run,
        task,
        "evaluate",
        shutdown_end,
        shutdown_end + eval_s,
        EvaluateResult(
            eval_json=str(RunDir(run).eval_json(task)),
            exit_code=0,
            error_code=None,
            test_branch_errors=[],
            docker_cpus=2,
            seconds=eval_s,
        ),
    )
    return shutdown_end


def profile_of(name: str, tasks: list[str], **settings) -> Profile:
    return Profile(
        profile=name,
        run_id="20261118t000000z",
        tasks=tasks,
        llm_upstream="https://gateway.example",
        agensh_checkout=str(ROOT),
        allow_dirty=True,
        **settings,
    )


def start_manifest(run: Path, p: Profile) -> ManifestInputs:
    """The manifest step's start, for real (revisions of this checkout, this host)."""
    a = ManifestInputs(
        run_dir=str(run),
        project_dir=str(ROOT),
        checkout=str(ROOT),
        profile=p.model_dump(mode="json"),
        profile_digest=p.digest(),
        copy_dir=str(run.parent / "copy"),
        images={
            p.image("board"): "sha256:" + "b0a4d" * 12 + "1234",
            p.worker_image(p.tasks[0]): "sha256:" + "7e11c" * 12 + "5678",
        },
    )
    manifest.start(a)
    return a


def score_step(run: Path, task: str) -> None:
    assert score.main([], {"AGENSH_INPUT": json.dumps({"run_dir": str(run), "task_id": task, "attempt": 1})}) == 0


def copy_eval(source: Path, run: Path, task: str) -> None:
    RunDir(run).task(task).mkdir(parents=True)
    shutil.copy(source / task / f"{task}.eval.json", RunDir(run).eval_json(task))


def leaderboard_run(tmp_path: Path) -> tuple[Path, Profile]:
    """The 20 real evaluator results as one run of an 8-worker team, one task after another; the score step ran for
    three tasks (the report judges the others)."""
    tasks = sorted(d.name for d in FIXTURES.iterdir() if d.is_dir())
    assert len(tasks) == 20
    run = tmp_path / "cohort-w8" / "20261118t000000z"
    p = profile_of("cohort-w8", tasks, workers=8, hours=6.0)
    start_manifest(run, p)
    t0 = T0
    for task in tasks:
        copy_eval(FIXTURES, run, task)
        t0 = team_task_receipts(run, task, p, t0, eval_s=1500)
    for task in tasks[:3]:
        score_step(run, task)
    return run, p


def demo_run(tmp_path: Path, name: str = "demo", kind: str = "team", eval_result: str = "correct") -> Path:
    """A demo-shaped run: the calculator task, a two-worker team on a three-minute budget, ProgramBench's bundled
    evaluator output, the manifest and score steps run for real."""
    run = tmp_path / name / "20261118t000000z"
    settings = dict(
        workers=2, hours=0.05, wake_stagger_s=5, bringup_settle_s=5, export_grace_s=30, reminder_minutes=[1]
    )
    if kind == "baseline":
        settings = dict(
            kind="baseline",
            workers=1,
            hours=0.05,
            export_grace_s=30,
            internal_subnet="10.177.242.0/24",
            egress_subnet="10.177.243.0/24",
        )
    p = profile_of(name, [DEMO_TASK], **settings)
    args = start_manifest(run, p)
    copy_eval(BUNDLED / eval_result, run, DEMO_TASK)
    if kind == "baseline":
        deadline = T0 + p.task_budget.budget_s
        receipt(
            run,
            DEMO_TASK,
            "baseline-seed",
            T0 - 5,
            T0,
            BaselineSeedResult(
                workspace="/data/workspace",
                commit="9a8b7c",
                started_epoch=T0,
                deadline_epoch=deadline,
                deadline=iso(deadline),
            ),
        )
        receipt(
            run,
            DEMO_TASK,
            "shutdown",
            T0 + 1,
            deadline + 12,
            ShutdownResult(archives={f"{name}-worker": "ok"}, archives_complete=True, snapshots=1),
        )
        receipt(
            run,
            DEMO_TASK,
            "evaluate",
            deadline + 12,
            deadline + 70,
            EvaluateResult(
                eval_json=str(RunDir(run).eval_json(DEMO_TASK)),
                exit_code=0,
                error_code=None,
                test_branch_errors=[],
                docker_cpus=2,
                seconds=58.0,
            ),
        )
    else:
        team_task_receipts(run, DEMO_TASK, p, T0, eval_s=58)
    score_step(run, DEMO_TASK)
    manifest.finish(args)
    return run


class WakeStandIn(Record):
    """A stand-in for the result of the lead's coming wake step: a result that lists events."""

    events: list[Event]


@pytest.fixture
def wake_step(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Registers the stand-in wake result as a step's result model and writes its receipt."""
    monkeypatch.setitem(steps.RESULTS, "wake", WakeStandIn)

    def write(run: Path, *events: Event) -> None:
        receipt(run, DEMO_TASK, "wake", T0, T0 + 17, WakeStandIn(events=list(events)))

    return write


@lru_cache(maxsize=1)
def instances() -> dict[str, dict]:
    return {i["instance_id"]: i for i in load_all_instances()}


def expected(run: Path, task: str) -> tuple[float, int, int]:
    """ProgramBench's raw score and counted passed/total for a task, from its own helpers."""
    instance = instances()[task]
    eval_json = run / task / f"{task}.eval.json"
    tests = submission.test_results_map(eval_json, instance)
    return submission.score_instance(eval_json, instance), sum(tests.values()), len(tests)


def card(page: Node, task: str, run_index: int = 0) -> Node:
    found = page.find("article", data_task=task, data_run=str(run_index))
    assert len(found) == 1, f"no card for {task}"
    return found[0]


def assert_timeline(c: Node, labels: tuple[str, ...] = TIMELINE_LABELS) -> None:
    figure = c.find("figure")
    assert len(figure) == 1 and figure[0].find("svg"), "no timeline SVG"
    texts = " ".join(t.text() for t in figure[0].find("text"))
    for label in labels:
        assert label in texts, f"timeline lacks {label!r}"


def assert_provenance(page: Node, run: Path) -> None:
    m = json.loads(RunDir(run).manifest.read_text())
    prov = page.find("section", **{"class": "provenance"})[0]
    assert prov.field("project-revision").startswith(m["project"]["revision"])
    assert prov.field("Agensh-checkout-revision").startswith(m["checkout"]["revision"])
    assert prov.field("programbench-version") == m["programbench_version"] == programbench.__version__
    assert prov.field("profile-digest") == m["profile_digest"]
    assert {n.text() for n in prov.find(data_field="image-id")} == set(m["images"].values())
    assert prov.field("host").startswith(f"{m['host']['cpus']} CPUs")
    assert "wake_stagger_s" in prov.text()  # the settings


# --- tests -------------------------------------------------------------------------------------------------------


def test_leaderboard_run_in_chromium(tmp_path: Path, chromium: str, artifacts: Path, monkeypatch: pytest.MonkeyPatch):
    leaderboard_tasks()
    run, p = leaderboard_run(tmp_path)
    monkeypatch.setattr(gate, "host_resources", lambda: Host(cpus=2, memory_gib=8.0, load=(0, 0, 0)))  # idle
    code = cli(["gate", str(run), "--reference", str(FIXTURES)])
    gated = read_record(RunDir(run).gate, GateResult)
    assert gated is not None and code == gate.EXIT_CODES[gated.verdict]
    assert cli(["report", str(run)]) == 0
    html = RunDir(run).report.read_text()
    assert external_references(html) == []
    page = browse(chromium, RunDir(run).report, tmp_path, artifacts / "report-leaderboard.png")
    assert page.requests == []
    for task in p.tasks:
        raw, passed, total = expected(run, task)
        c = card(page.dom, task)
        complete = not json.loads(RunDir(run).eval_json(task).read_text())["test_branch_errors"]
        assert c.field("raw-score") == f"{raw:.4f}"
        assert c.field("score") == (f"{raw:.4f}" if complete else "—"), task
        assert (c.field("passed"), c.field("total")) == (str(passed), str(total))
        assert c.field("status") == ("scored" if complete else "incomplete")
        if not complete:  # the one result the evaluator could not read for a branch
            assert "results_read_failed" in c.field("problems") + c.text()
        assert_timeline(c)
        row = page.dom.find("td", data_task=task, data_run="0")[0]
        assert row.field("score") == c.field("score")
    assert_provenance(page.dom, run)
    assert "computed by the report" in page.dom.text()  # no finished manifest: the headline is the report's
    assert page.dom.field("gate").startswith(f"{gated.verdict} ")  # the gate's verdict, from gate.json
    assert not any(RunDir(run).score(t).exists() for t in p.tasks[3:])  # the report only reads the run


def test_demo_run_in_chromium(tmp_path: Path, chromium: str, artifacts: Path, wake_step):
    run = demo_run(tmp_path)
    # any result's `events` reach the timeline: worker 2 woke 12 s late
    wake_step(
        run,
        Event(kind="wake", at=T0, label="worker 1", late_s=0.2),
        Event(kind="wake", at=T0 + 17, label="worker 2", late_s=12.0),
    )
    assert cli(["report", str(run)]) == 0
    page = browse(chromium, RunDir(run).report, tmp_path, artifacts / "report-demo.png")
    assert page.requests == []
    raw, passed, total = expected(run, DEMO_TASK)
    c = card(page.dom, DEMO_TASK)
    assert c.field("score") == f"{raw:.4f}" == "0.5000" and c.field("status") == "scored"
    assert (c.field("passed"), c.field("total")) == (str(passed), str(total)) == ("3", "6")
    assert_timeline(c, (*TIMELINE_LABELS, "1 min left", "wake", "worker 2 (late 12 s)"))
    headline = json.loads(RunDir(run).manifest.read_text())["headline_requested"]
    assert page.dom.field("mean-score") == f"{headline['mean_score']:.4f}"
    assert "from run_manifest.json" in page.dom.text()
    assert page.dom.field("gate") == "—"  # not gated
    assert_provenance(page.dom, run)


def test_task_without_eval_json_is_not_evaluated(tmp_path: Path):
    run = demo_run(tmp_path)
    other = "abishekvashok__cmatrix.5c082c6"
    receipt(
        run,
        other,
        "kickoff",
        T0 + 900,
        T0 + 920,
        KickoffResult(
            ramp_start=iso(T0 + 900),
            ramp_start_epoch=T0 + 900,
            kickoff_at=iso(T0 + 920),
            deadline=iso(T0 + 1080),
            deadline_epoch=T0 + 1080,
            post_id="p2",
        ),
    )
    receipt(run, other, "export", T0 + 920, T0 + 1090, None, status="failed", error="Gitea unreachable")
    write_marker(RunDir(run), other, EXPORT_FAILED, "export: Gitea unreachable")
    assert cli(["report", str(run)]) == 0
    c = card(parse(RunDir(run).report.read_text()), other)
    assert c.field("status") == "not evaluated" and c.field("score") == "—"
    problems = c.field("problems")
    assert "no eval JSON: the task was not evaluated" in problems and "Gitea unreachable" in problems
    assert "export failed" in " ".join(t.text() for t in c.find("text"))  # the failed step on the timeline


def test_untrusted_text_is_escaped(tmp_path: Path, chromium: str, wake_step):
    run = demo_run(tmp_path)
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    eval_json = RunDir(run).eval_json(DEMO_TASK)
    data = json.loads(eval_json.read_text())
    data["test_results"][0].update(name=f"tests.test_calculator.test_addition{evil}", status="failure")
    eval_json.write_text(json.dumps(data))
    RunDir(run).score(DEMO_TASK).unlink()  # the report judges the changed result itself
    receipt(
        run,
        DEMO_TASK,
        "export",
        T0,
        T0 + 190,
        ExportResult(submission="s", commit=evil, files=1, exported_at=iso(T0 + 189)),
    )
    receipt(run, DEMO_TASK, "reminders", T0, T0 + 190, None, status="failed", error=evil)
    wake_step(run, Event(kind="wake", at=T0 + 5, label=evil, late_s=30))
    assert cli(["report", str(run)]) == 0
    html = RunDir(run).report.read_text()
    assert "<script" not in html.lower()
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # the test name, two receipts, the timeline
    page = browse(chromium, RunDir(run).report, tmp_path, tmp_path / "escaped.png")
    elements = list(page.dom.iter())
    assert not [n for n in elements if n.tag in ("script", "img", "iframe", "object")]
    assert not [n for n in elements if any(a.startswith("on") for a in n.attrs)]
    assert page.requests == []
    assert evil in page.dom.text()  # shown as text


def test_team_beside_baseline_and_runs_side_by_side(tmp_path: Path):
    team = demo_run(tmp_path, "demo")
    baseline = demo_run(tmp_path, "demo-baseline", kind="baseline", eval_result="incorrect")
    out = tmp_path / "compare.html"
    assert cli(["report", str(team), str(baseline), "-o", str(out)]) == 0
    page = parse(out.read_text())
    team_raw, _, _ = expected(team, DEMO_TASK)
    base_raw, _, _ = expected(baseline, DEMO_TASK)
    pair = page.find("tr", data_task=DEMO_TASK)[0]
    assert pair.field("team-score") == f"{team_raw:.4f}" and pair.field("baseline-score") == f"{base_raw:.4f}"
    assert pair.field("difference") == f"{team_raw - base_raw:+.4f}"
    cells = {c.attrs["data-run"]: c.field("score") for c in page.find("td", data_task=DEMO_TASK)}
    assert cells == {"0": f"{team_raw:.4f}", "1": f"{base_raw:.4f}"}
    assert len(page.find(data_field="mean-score")) == 2  # each run's headline
    assert_timeline(card(page, DEMO_TASK, 1), ("work start", "deadline", "archive grace", "evaluation"))


def test_several_runs_need_an_output_and_bad_files_are_named(tmp_path: Path, capsys: pytest.CaptureFixture):
    run = demo_run(tmp_path)
    assert cli(["report", str(run), str(run)]) == 2
    assert "a report across several runs needs -o OUT.html" in capsys.readouterr().err
    bad = RunDir(run).receipt("export", DEMO_TASK)
    bad.write_text('{"step": "export", "started": "yesterday"}')
    assert cli(["report", str(run)]) == 2
    assert str(bad) in capsys.readouterr().err
    assert cli(["report", str(tmp_path / "nowhere")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_new_event_kinds_need_no_code_to_show(tmp_path: Path):
    """Events a result lists reach the plot: a kind in timeline.KINDS with its own legend entry, an unknown kind
    in the `other` lane under its own name."""

    class NudgesStandIn(Record):  # a stand-in for the coming idle-nudge step's result
        events: list[Event]

    receipts = {
        "idle-nudges": Receipt[NudgesStandIn](
            step="idle-nudges",
            task_id=DEMO_TASK,
            inputs_digest="0",
            started=iso(T0),
            finished=iso(T0 + 700),
            status="ok",
            result=NudgesStandIn(
                events=[
                    Event(kind="nudge", at=T0 + 600, label="worker 3"),
                    Event(kind="disk_alarm", at=T0 + 700, label="disk 95 %"),
                ]
            ),
        )
    }
    events = timeline.task_events(receipts, wake_offsets=[])
    svg = parse(timeline.plot_svg(events, salt="t"))
    texts = [t.text() for t in svg.find("text")]
    assert {"idle nudge", "disk alarm", "other", "disk 95 %"} <= set(texts)


def test_receipt_of_an_unknown_step_is_listed_not_read(tmp_path: Path):
    run = demo_run(tmp_path)
    RunDir(run).receipt("from-a-newer-checkout", DEMO_TASK).write_text("{}")
    assert cli(["report", str(run)]) == 0
    c = card(parse(RunDir(run).report.read_text()), DEMO_TASK)
    assert "does not know (not read): from-a-newer-checkout" in " ".join(c.text().split())
