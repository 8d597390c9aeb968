"""gate: the 20 real leaderboard tasks as the reference, candidate runs derived from copies of them.

Every expected score and mean is computed here with ProgramBench's `score_instance` and `aggregate` directly,
never through the gate's code. The fixtures are only read; the derived runs live in tmp_path.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from programbench.constants import TASKS_DIR
from programbench.submission import aggregate, score_instance
from programbench.utils.load_data import load_all_instances

from model.project import ROOT
from model.records import Host, Manifest, Revision
from model.rundir import RUN_FAILED, RunDir
from scripts.cli import gate
from scripts.cli.app import main as cli
from scripts.lib.step import now, write_atomic, write_marker
from tests.scripts.conftest import LEADERBOARD as REFERENCE
from tests.scripts.conftest import leaderboard_tasks

GITTYPE = "unhappychoice__gittype.34b72d0"  # carries test_branch_errors in the leaderboard's result
LOW = Host(cpus=2, memory_gib=8.0, load=(0.4, 0.5, 0.6))
HIGH = Host(cpus=2, memory_gib=8.0, load=(9.0, 8.0, 7.0))
Edit = Callable[[str, dict[str, Any]], None]


@pytest.fixture(scope="module")
def tasks() -> list[str]:
    return leaderboard_tasks()


@pytest.fixture(scope="module")
def instances() -> dict[str, dict]:
    return {row["instance_id"]: row for row in load_all_instances(TASKS_DIR)}


def pb_score(instances: dict[str, dict], run: Path, task: str) -> float:
    return score_instance(run / task / f"{task}.eval.json", instances[task])


def mean(scores: dict[str, float]) -> float:
    return aggregate(scores, len(scores)).mean_score


def clean(task: str, data: dict[str, Any]) -> None:
    """A clean re-run with the leaderboard's outcomes: no branch errors (else gittype would count 0)."""
    data["test_branch_errors"] = {}


def flipping(frm: set[str], to: str, in_tasks: int) -> Edit:
    """Clean, and in the first `in_tasks` tasks turn every second test whose status is in `frm` into `to`."""

    def edit(task: str, data: dict[str, Any]) -> None:
        clean(task, data)
        if task in sorted(p.name for p in REFERENCE.iterdir())[:in_tasks]:
            for t in [t for t in data["test_results"] if t["status"] in frm][::2]:
                t["status"] = to

    return edit


BETTER = flipping({"failure", "error", "not_run"}, "passed", 20)
WORSE = flipping({"passed"}, "failure", 5)


def manifest(tasks: list[str], state: str = "finished", host: Host = LOW) -> Manifest:
    """A run manifest as the manifest step writes it, with a chosen host reading (the real one varies with the load
    of this shared machine)."""
    unknown = Revision(path=str(ROOT), revision=None, dirty=None)
    return Manifest(
        written=now(),
        state=state,
        profile={"tasks": tasks},
        profile_digest="0" * 16,
        project=unknown,
        checkout=unknown,
        programbench_version="1.2.5",
        images={},
        host=host,
        requested_task_ids=tasks,
    )


def make_run(
    root: Path, tasks: list[str], edit: Edit = lambda t, d: None, skip: tuple[str, ...] = (), **settings: Any
) -> Path:
    """A run directory of this project requesting `tasks`, each eval JSON a copy of the leaderboard's, edited."""
    rd = RunDir(root)
    for t in tasks:
        if t in skip:
            continue
        data = json.loads((REFERENCE / t / f"{t}.eval.json").read_text())
        edit(t, data)
        rd.task(t).mkdir(parents=True)
        rd.eval_json(t).write_text(json.dumps(data))
    write_atomic(rd.manifest, manifest(tasks, **settings))
    return root


def gate_on(argv: list[str], host: Host = LOW) -> int:
    """`python -m scripts.cli gate` on argv, this host reading as `host`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gate, "host_resources", lambda: host)
        return cli(["gate", *argv])


def run_gate(
    capsys: pytest.CaptureFixture[str], runs: list[Path], *args: str, reference: Path = REFERENCE, host: Host = LOW
) -> tuple[int, dict[str, Any]]:
    code = gate_on([*map(str, runs), "--reference", str(reference), "--json", *args], host)
    result = json.loads(capsys.readouterr().out)
    assert json.loads(RunDir(runs[0]).gate.read_text()) == result  # the record is what was printed
    return code, result


@pytest.mark.parametrize(
    "edit,relation,verdict,code",
    [
        (BETTER, float.__gt__, "PASS", 0),
        (clean, float.__eq__, "PASS", 0),
        (WORSE, float.__lt__, "FAIL", 1),
    ],
    ids=["better", "equal", "worse"],
)
def test_paired_verdicts_match_programbench(tmp_path: Path, tasks, instances, capsys, edit, relation, verdict, code):
    run = make_run(tmp_path / "run", tasks, edit)
    cand = {t: pb_score(instances, run, t) for t in tasks}
    ref = {t: pb_score(instances, REFERENCE, t) for t in tasks}
    assert relation(mean(cand), mean(ref))  # the derivation did what its name says
    got_code, result = run_gate(capsys, [run])
    assert (got_code, result["verdict"]) == (code, verdict)
    got = [(p["task_id"], p["candidate"], p["reference"]) for p in result["pairs"]]
    assert got == [(t, cand[t], ref[t]) for t in tasks]
    vr = result["versus_reference"]
    assert (vr["task_ids"], vr["candidate_mean"], vr["other_mean"]) == (tasks, mean(cand), mean(ref))
    assert result["task_ids"] == tasks and result["reference"] == str(REFERENCE.resolve())
    assert result["programbench_version"] == "1.2.5" and result["load"]["overloaded"] is False


def test_missing_task_counts_zero_and_one_absent_from_reference_is_unpaired(tmp_path: Path, tasks, instances, capsys):
    gone, unpaired = tasks[0], tasks[1]  # cmatrix (1.0 on the leaderboard), walk
    run = make_run(tmp_path / "run", tasks, clean, skip=(gone,))
    reference = tmp_path / "reference"
    shutil.copytree(REFERENCE, reference, ignore=lambda d, names: [unpaired] if Path(d) == REFERENCE else [])
    code, result = run_gate(capsys, [run], reference=reference)
    pairs = {p["task_id"]: p for p in result["pairs"]}
    assert pairs[gone]["candidate"] == 0.0 and pairs[gone]["candidate_raw"] is None
    assert any("no eval JSON" in n for n in pairs[gone]["notes"])
    assert pairs[unpaired]["reference"] is None and pairs[unpaired]["delta"] is None
    assert any("unpaired" in n for n in pairs[unpaired]["notes"])
    paired = [t for t in tasks if t != unpaired]
    cand = {t: 0.0 if t == gone else pb_score(instances, run, t) for t in paired}
    vr = result["versus_reference"]
    assert (vr["task_ids"], vr["candidate_mean"]) == (paired, mean(cand))
    assert vr["other_mean"] == mean({t: pb_score(instances, REFERENCE, t) for t in paired})
    assert (code, result["verdict"]) == (1, "FAIL")


def test_incomplete_tasks_count_zero_with_their_reason(tmp_path: Path, tasks, instances, capsys):
    marked = tasks[5]
    run = make_run(tmp_path / "run", tasks)  # verbatim copies: gittype keeps its test_branch_errors
    write_marker(RunDir(run), marked, RUN_FAILED, "kickoff: worker never started")
    code, result = run_gate(capsys, [run])
    pairs = {p["task_id"]: p for p in result["pairs"]}
    assert pairs[GITTYPE]["candidate"] == 0.0
    assert pairs[GITTYPE]["candidate_raw"] == pairs[GITTYPE]["reference"] == pb_score(instances, REFERENCE, GITTYPE)
    assert any(n.startswith("candidate counted 0: test_branch_errors") for n in pairs[GITTYPE]["notes"])
    assert "reference test_branch_errors (counted as published)" in pairs[GITTYPE]["notes"]
    assert pairs[marked]["candidate"] == 0.0 and any("RUN_FAILED marker present" in n for n in pairs[marked]["notes"])
    cand = {t: 0.0 if t in (GITTYPE, marked) else pb_score(instances, run, t) for t in tasks}
    assert result["versus_reference"]["candidate_mean"] == mean(cand)
    assert (code, result["verdict"]) == (1, "FAIL")


def test_second_baseline_can_fail_a_candidate_that_beats_the_reference(tmp_path: Path, tasks, instances, capsys):
    run = make_run(tmp_path / "run", tasks, BETTER)
    shared = tasks[2:7]
    baseline = tmp_path / "baseline"  # published layout holding five tasks, every test passed
    for t in shared:
        data = json.loads((REFERENCE / t / f"{t}.eval.json").read_text())
        for test in data["test_results"]:
            test["status"] = "passed"
        (baseline / t).mkdir(parents=True)
        (baseline / t / f"{t}.eval.json").write_text(json.dumps(data))
    cand = {t: pb_score(instances, run, t) for t in shared}
    base = {t: pb_score(instances, baseline, t) for t in shared}
    assert mean(cand) < mean(base)
    code, result = run_gate(capsys, [run], "--second-baseline", str(baseline))
    assert result["versus_reference"]["passed"] is True
    vb = result["versus_baseline"]
    assert (vb["task_ids"], vb["candidate_mean"], vb["other_mean"]) == (shared, mean(cand), mean(base))
    assert vb["passed"] is False
    assert all("not in the second baseline" in p["notes"] for p in result["pairs"] if p["task_id"] not in shared)
    assert (code, result["verdict"]) == (1, "FAIL")


def test_a_run_directory_as_reference_is_read_by_the_project_rules(tmp_path: Path, tasks, instances, capsys):
    run = make_run(tmp_path / "run", tasks, clean)
    reference = make_run(tmp_path / "reference", tasks[10:])  # verbatim: its gittype is incomplete, counts 0
    code, result = run_gate(capsys, [run], reference=reference)
    pairs = {p["task_id"]: p for p in result["pairs"]}
    assert pairs[GITTYPE]["reference"] == 0.0
    assert any(n.startswith("reference counted 0: test_branch_errors") for n in pairs[GITTYPE]["notes"])
    assert all(pairs[t]["reference"] is None for t in tasks[:10])  # not requested there: unpaired
    ref = {t: 0.0 if t == GITTYPE else pb_score(instances, reference, t) for t in tasks[10:]}
    vr = result["versus_reference"]
    assert (vr["task_ids"], vr["other_mean"]) == (tasks[10:], mean(ref))
    assert vr["candidate_mean"] == mean({t: pb_score(instances, run, t) for t in tasks[10:]}) > vr["other_mean"]
    assert (code, result["verdict"]) == (0, "PASS")


@pytest.mark.parametrize(
    "edit,host,recorded,verdict,code",
    [
        (WORSE, HIGH, None, "PAUSED", 3),  # loaded now
        (WORSE, LOW, HIGH, "PAUSED", 3),  # loaded while the run ran
        (BETTER, HIGH, HIGH, "PASS", 0),  # a pass stays a pass
    ],
    ids=["loaded-now", "loaded-at-run-start", "pass-under-load"],
)
def test_overloaded_host_pauses_instead_of_failing(tmp_path: Path, tasks, capsys, edit, host, recorded, verdict, code):
    run = make_run(tmp_path / "run", tasks, edit, host=recorded or LOW)
    got_code, result = run_gate(capsys, [run], host=host)
    assert (got_code, result["verdict"]) == (code, verdict)
    load = result["load"]
    assert load["overloaded"] is True and load["max_load_per_cpu"] == gate.DEFAULT_MAX_LOAD_PER_CPU
    readings = [(r["source"], r["load"], r["per_cpu_5min"]) for r in load["readings"]]
    expected = [
        ("gate host now", list(host.load), host.load[1] / 2),
        (f"{RunDir(run.resolve()).manifest} (run start)", list((recorded or LOW).load), (recorded or LOW).load[1] / 2),
    ]
    assert readings == expected
    assert any("overloaded" in r for r in result["reasons"]) == (verdict == "PAUSED")


def test_candidate_split_over_two_runs_gates_like_one(tmp_path: Path, tasks, capsys):
    one = make_run(tmp_path / "one", tasks, BETTER)
    first = make_run(tmp_path / "first", tasks[:10], BETTER)
    second = make_run(tmp_path / "second", tasks[10:], BETTER, state="running")
    _, whole = run_gate(capsys, [one])
    code, split = run_gate(capsys, [first, second])
    assert code == 0 and split["pairs"] == whole["pairs"] and split["versus_reference"] == whole["versus_reference"]
    assert not RunDir(second).gate.exists()
    assert any("is not finished (state running)" in r for r in split["reasons"])
    assert gate_on([str(first), str(second), "--reference", str(REFERENCE)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["task", "candidate", "reference", "delta", "note"]
    assert [line.split()[0] for line in table[1:21]] == tasks
    assert table[-3] == "verdict: PASS"


def bad_reference(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    run = make_run(tmp_path / "run", tasks)
    return [str(run), "--reference", str(tmp_path / "nowhere")], "nowhere: neither a directory nor a stack"


def published_candidate(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    return [str(REFERENCE), "--reference", str(REFERENCE)], "no run_manifest.json"


def no_requested_tasks(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    run = make_run(tmp_path / "run", tasks)
    write_atomic(RunDir(run).manifest, manifest([]))
    return [str(run), "--reference", str(REFERENCE)], "run_manifest.json: requests no task"


def not_a_manifest(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    run = make_run(tmp_path / "run", tasks)
    RunDir(run).manifest.write_text(json.dumps({"requested_task_ids": tasks, "state": "finished"}))
    return [str(run), "--reference", str(REFERENCE)], "run_manifest.json: not a run manifest"


def unknown_task(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    run = make_run(tmp_path / "run", tasks)
    write_atomic(RunDir(run).manifest, manifest(["nobody__nothing.0000000"]))
    return [str(run), "--reference", str(REFERENCE)], "not ProgramBench tasks: nobody__nothing.0000000"


def corrupt_eval(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    run = make_run(tmp_path / "run", tasks)
    (run / tasks[3] / f"{tasks[3]}.eval.json").write_text("{ truncated")
    return [str(run), "--reference", str(REFERENCE)], f"{tasks[3]}: cannot score"


def requested_twice(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    a, b = make_run(tmp_path / "a", tasks[:3]), make_run(tmp_path / "b", tasks[2:4])
    return [
        str(a),
        str(b),
        "--reference",
        str(REFERENCE),
    ], f"requested more than once (one attempt per task): {tasks[2]}"


def zero_load_limit(tmp_path: Path, tasks: list[str]) -> tuple[list[str], str]:
    return [
        str(make_run(tmp_path / "run", tasks)),
        "--reference",
        str(REFERENCE),
        "--max-load-per-cpu",
        "0",
    ], "--max-load-per-cpu 0.0: must be above 0"


@pytest.mark.parametrize(
    "setup",
    [
        bad_reference,
        published_candidate,
        no_requested_tasks,
        not_a_manifest,
        unknown_task,
        corrupt_eval,
        requested_twice,
        zero_load_limit,
    ],
)
def test_bad_input_exits_2_naming_it_and_writes_nothing(tmp_path: Path, tasks, capsys, setup):
    argv, named = setup(tmp_path, tasks)
    assert gate_on(argv) == 2
    out = capsys.readouterr()
    assert named in out.err and out.out == ""
    assert not list(tmp_path.rglob("gate.json")) and not (REFERENCE / "gate.json").exists()


def test_a_stack_names_its_run_and_the_verdict_is_recorded_with_it(tmp_path: Path, tasks, capsys, monkeypatch):
    """A stack name stands for its run directory; the verdict goes into the run's manifest, and the run's verified
    copy is brought up to date so destroy still finds every file copied."""
    from model import stackfiles
    from model.rundir import CopyDir, ProfileDir
    from scripts.lib import copies

    monkeypatch.setattr(stackfiles, "ROOT", tmp_path)
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.cand.yaml").write_text(
        json.dumps(
            {
                "config": {
                    "agensh:profile": "cand",
                    "agensh:run_id": "20261129t000000z",
                    "agensh:tasks": tasks,
                    "agensh:llm_upstream": "http://m.example",
                    "agensh:agensh_checkout": "/x",
                    "agensh:data_root": str(tmp_path / "data"),
                    "agensh:traj_root": str(tmp_path / "traj"),
                }
            }
        )
    )
    rd = RunDir(tmp_path / "data" / "cand" / "20261129t000000z")
    make_run(rd.path, tasks, clean)
    copy = CopyDir(tmp_path / "traj" / "cand.20261129t000000z")
    write_atomic(rd.manifest, manifest(tasks).model_copy(update={"copy_dir": str(copy.path)}))
    copies.mirror(rd, {}, copy, None)
    code = gate_on(["cand", "--reference", str(REFERENCE)])
    assert code == 0 and "PASS" in capsys.readouterr().out
    recorded = Manifest.model_validate_json(rd.manifest.read_text()).gate
    assert recorded is not None and recorded.verdict == "PASS" and recorded.task_ids == sorted(tasks)
    assert copies.problems(rd, ProfileDir(rd.path.parent).run_archives(rd.path.name), copy) == []
