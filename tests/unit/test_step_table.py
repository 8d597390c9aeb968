"""The step table (model/steps.py) is the only place a step is named: the components declare from it, the programs
run under it and the readers look receipts up through it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from model import steps
from model.project import ROOT
from model.rundir import RunDir

SOURCES = [
    ROOT / "__main__.py",
    *(p for d in ("components", "model", "policies", "scripts") for p in sorted((ROOT / d).rglob("*.py"))),
]
# the calls whose first step-like argument names a step
TAKES_STEP = {
    "run_step",
    "step_main",
    "read_receipt",
    "result_of",
    "receipt_from_stdout",
    "receipt_path",
    "Step",
    "known",
}
NAMES = {s.name for s in steps.STEPS} | {s.suffix for s in steps.STEPS}


def test_names_are_unique_and_every_program_exists():
    keys = [(s.program, s.args) for s in steps.STEPS]
    assert len(set(keys)) == len(keys)
    # the name a step's commands and its resource carry in state
    assert len({s.suffix for s in steps.STEPS}) == len(steps.STEPS)
    # one receipt name per result model, except the team's shutdown and the baseline's stop, which share one
    by_name = {}
    for s in steps.STEPS:
        by_name.setdefault(s.name, set()).add(s.result)
    assert all(len(results) == 1 for results in by_name.values())
    for s in steps.STEPS:
        assert (ROOT / "scripts" / f"{s.program}.py").is_file(), s


def step_arguments(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals passed as a step to the calls that take one."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in TAKES_STEP:
                found += [
                    (a.lineno, a.value)
                    for a in node.args[:2]
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
    return found


def test_no_step_is_named_outside_the_table():
    problems = []
    for path in SOURCES:
        if path == ROOT / "model" / "steps.py":
            continue
        text = path.read_text()
        tree = ast.parse(text)
        problems += [f"{path.relative_to(ROOT)}:{line}: {value!r}" for line, value in step_arguments(tree)]
        # a step command spelled by hand, or a receipt looked up by its name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and any(
                    f"-m {s.module} {s.args}".strip() in node.value or f"{steps.LAUNCHER} {s.suffix}" in node.value
                    for s in steps.STEPS
                )
            ):
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: a step command in {node.value[:60]!r}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in NAMES
                and (
                    node.func.attr in {"receipt", "lock"}
                    or node.func.attr == "get"
                    and "receipt" in getattr(node.func.value, "id", getattr(node.func.value, "attr", ""))
                )
            ):
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.args[0].value!r} looked up by name")
    assert problems == []


def test_the_scan_finds_a_name_written_by_hand():
    code = 'run_step("wake", rd, None, a, body)\nresult_of(rd, "score", t, Score)\nStep(name, "seed", x, o)\n'
    assert [v for _, v in step_arguments(ast.parse(code))] == ["wake", "score", "seed"]


def test_a_step_the_table_does_not_have_is_refused(tmp_path: Path):
    stranger = dataclasses.replace(steps.WAKE, name="wake-up")
    with pytest.raises(ValueError, match="not a step"):
        steps.read_receipt(RunDir(tmp_path), stranger, "t")
    with pytest.raises(ValueError, match="not a step"):
        steps.receipt_path(RunDir(tmp_path), stranger)
