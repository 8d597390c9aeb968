"""The step graph (model/step_graph.py): every arrow names a node, the graph has no cycle and each scope only looks
back, the order each reader takes from it, and the table in docs/design.md is the graph's."""

from __future__ import annotations

import itertools

import pytest

from model import step_graph as g
from model import steps
from model.project import ROOT
from scripts.cli import graph_table

RUNS = [
    g.Run(kind, engine, evaluated, units)  # type: ignore[arg-type]
    for kind, engine, evaluated, units in itertools.product(
        ("team", "baseline"), ("docker", "swarm"), (True, False), (True, False)
    )
]


def test_every_arrow_names_a_node_and_looks_back():
    """An arrow names a node of its own scope or an earlier one; `@previous` and `@every` name a task's node."""
    rank = {s: k for k, s in enumerate(g.SCOPES)}
    assert len(g.BY_SUFFIX) == len(g.ITEMS)  # a step's suffix is no resource node's name
    for item in g.ITEMS:
        for arrow in item.after:
            names, task = g.parse(arrow)
            for name in names:
                target = g.BY_SUFFIX[name]
                assert rank[target.scope] <= rank[item.scope], (item.suffix, arrow)
                assert task == "same" or target.scope == "task", (item.suffix, arrow)
                assert task != "every" or item.scope != "task", (item.suffix, arrow)


@pytest.mark.parametrize("run", RUNS, ids=str)
def test_each_scope_has_an_order_in_every_run(run: g.Run):
    """Every node a run has is ordered after what it runs after (no cycle); nodes it lacks are not there."""
    for scope in g.SCOPES:
        order = g.order(run, scope)
        assert {i.suffix for i in order} == {i.suffix for i in g.ITEMS if i.scope == scope and run.has(i)}
        for k, item in enumerate(order):
            for ref in g.after(item, run):
                assert run.has(ref.item)
                if ref.item.scope == scope and ref.task == "same":
                    assert ref.item in order[:k], (item.suffix, ref)


def test_an_arrow_takes_the_first_alternative_the_run_has():
    swarm, one_host = g.Run(engine="swarm"), g.Run()
    assert g.after(steps.PREFLIGHT_HOST, swarm)[0] == g.Ref("nodes")
    assert g.after(steps.PREFLIGHT_HOST, one_host)[0] == g.Ref("profile-data")
    assert [r.suffix for r in g.after(steps.PREFLIGHT_HOST, g.Run(host_units=False, engine="swarm"))] == [
        "nodes",
        "images",
    ]
    assert g.after(steps.PRESERVE_TASK, g.Run(evaluated=False)) == [g.Ref("shutdown")]
    assert g.after(steps.PRESERVE_TASK, g.Run("baseline", evaluated=False)) == [g.Ref("baseline-stop")]
    assert g.after(steps.MANIFEST_FINISH, one_host) == [g.Ref("preserve", "every")]


def test_what_a_part_stack_follows_and_where_the_launch_hands_over():
    """A task's stack follows the platform's last check and the previous task's end; the record every task's
    copy: the arrows that cross stacks, less those another implies (the model check, before the platform's)."""
    for run in RUNS:
        end = steps.BASELINE_STOP if run.kind == "baseline" else steps.SHUTDOWN
        assert g.needed_before("task", run) == [g.Ref("preflight-platform"), g.Ref(end.suffix, "previous")]
        assert g.needed_before("record", run) == [g.Ref("preserve", "every")]
        assert g.needed_before("platform", run) == []
        assert g.handover(run) == end


def test_status_phases_are_the_task_steps_latest_first():
    assert [s.phase for s in g.phases(g.Run())] == [
        "scored",
        "evaluating",
        "archiving",
        "working",
        "waiting for kickoff",
        "ramp",
    ]
    assert g.phases(g.Run("baseline", evaluated=False)) == [steps.BASELINE_STOP]


def test_the_design_docs_table_is_the_graphs():
    """docs/design.md's table is generated: `.venv/bin/python -m scripts.cli steps --update docs/design.md`."""
    text = (ROOT / "docs" / "design.md").read_text()
    assert graph_table.with_table(text) == text, "docs/design.md's step graph is stale: scripts.cli steps --update"
    for item in g.ITEMS:
        assert f"| `{item.suffix}` |" in text


def test_an_arrow_names_the_same_task_the_previous_one_every_one_or_none():
    tasks = ["a", "b"]
    assert g.tasks_of(g.Ref("preflight-platform"), "b", tasks) == [None]
    assert g.tasks_of(g.Ref("seed"), "b", tasks) == ["b"]
    assert g.tasks_of(g.Ref("shutdown", "previous"), "b", tasks) == ["a"]
    assert g.tasks_of(g.Ref("shutdown", "previous"), "a", tasks) == []
    assert g.tasks_of(g.Ref("preserve", "every"), None, tasks) == ["a", "b"]
