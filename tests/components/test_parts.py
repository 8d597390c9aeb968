"""A per-task profile's stacks (model/parts.py): together they declare what the one stack declares, each its own part,
and a part's update refuses before the stacks it follows are done."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest
from pulumi.output import Unknown

from components.experiment import Experiment
from model import parts
from model.parts import Part
from tests.components.conftest import Mocks, RecordingMonitor, Reg, secrets, stack_profile

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["jgm__pandoc.5caad90", "ajeetdsouza__zoxide.67ca1bc"]


def declared(profile, part: Part, preview: bool = True) -> dict[str, Reg]:
    mocks = Mocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, preview=preview, monitor=monitor)
    pulumi.runtime.test(lambda: Experiment("experiment", profile, secrets(), ROOT, part).outputs["profile"])()
    return monitor.regs


def known(value: object) -> object:
    """`value` with each input unknown in preview (a value the engine reads back, like an exit code) as one marker:
    the SDK's Unknown compares by identity."""
    if isinstance(value, dict):
        return {k: known(v) for k, v in value.items()}
    if isinstance(value, list):
        return [known(v) for v in value]
    return "<unknown>" if isinstance(value, Unknown) else value


@pytest.fixture
def profile(tmp_path: Path):
    return stack_profile("cohort-w8", tmp_path, tasks=TASKS, workers=2, stacks="per-task")


def test_the_parts_declare_the_whole_profile_between_them(profile):
    whole = declared(profile, parts.WHOLE)
    by_part = {stack: declared(profile, part) for stack, part in parts.stacks_of(profile.profile, profile)}
    root = {"experiment", "project-stack"}  # the component and the mocks' stack, in every part
    names = [n for regs in by_part.values() for n in regs if n not in root]
    assert len(names) == len(set(names)), "a resource declared by two parts"
    assert set(names) == set(whole) - root
    for regs in by_part.values():
        for name, reg in regs.items():
            assert (reg.type, known(reg.inputs)) == (whole[name].type, known(whole[name].inputs)), name

    platform, first, second, record = by_part.values()
    kinds = {stack: {r.type for r in regs.values()} for stack, regs in by_part.items()}
    assert "docker:index/network:Network" in kinds["cohort-w8.platform"]
    for task_stack in ("cohort-w8.jgm-pandoc-5caad90", "cohort-w8.ajeetdsouza-zoxide-67ca1bc"):
        # a task's containers join the platform's networks by name and make no network or image of their own
        assert not {"docker:index/network:Network", "docker:index/remoteImage:RemoteImage"} & kinds[task_stack]
    assert not any(n.endswith("-seed") for n in platform)
    assert all("ajeetdsouza" not in n for n in first) and all("jgm-pandoc" not in n for n in second)
    assert sorted(n.rsplit("-", 1)[-1] for n in record if n not in root) == ["finish", "report", "run"]


def test_a_part_refuses_its_update_before_the_stacks_it_follows(profile):
    with pytest.raises(Exception, match=r"preflight-platform.*make up STACK="):
        declared(profile, Part("task", TASKS[0]), preview=False)
    with pytest.raises(Exception, match=rf"preserve-task of {TASKS[0]}, preserve-task of {TASKS[1]}"):
        declared(profile, Part("record"), preview=False)
