"""A per-task profile's stacks (model/parts.py): together they declare what the one stack declares, each its own part,
and a part's update refuses before the stacks it follows are done."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest
from pulumi.output import Unknown
from pulumi.runtime import rpc

from components.experiment import Experiment
from model import parts
from model.parts import Part
from model.project import ROOT
from policies import rules
from tests.components.conftest import Mocks, RecordingMonitor, Reg, secrets, stack_profile
from tests.unit.test_policies import check_stack

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
    assert record["experiment-record-part"].type == "agensh:index:RecordPart"
    steps = [n for n, r in record.items() if r.parent.endswith("::experiment-record-part")]
    assert sorted(n.rsplit("-", 1)[-1] for n in steps) == ["finish", "report", "run"]


def test_a_part_refuses_its_update_before_the_stacks_it_follows(profile):
    with pytest.raises(Exception, match=r"preflight-platform.*make up STACK="):
        declared(profile, Part("task", TASKS[0]), preview=False)
    with pytest.raises(Exception, match=rf"preserve-task of {TASKS[0]}, preserve-task of {TASKS[1]}"):
        declared(profile, Part("record"), preview=False)


def plain(value: object) -> object:
    """`value` as the policy pack is given it: each secret as its plain value."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return plain(value["value"])
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def test_the_pack_counts_the_whole_team_in_the_platform_stack(tmp_path: Path):
    """No stack of a per-task profile holds every task's workers, nor a task's routers beside MySQL; the platform's
    holds the bootstrap that registers them all, Mattermost and MySQL, so the pack checks the team limits there: a cap
    too small for 2 workers x 2 tasks + 2 administrators, and connections too few for one task's 2 routers (a profile
    past its own check, as a hand-edited stack could be)."""
    fits = stack_profile("cohort-w8", tmp_path, tasks=TASKS, workers=2, stacks="per-task", mm_max_users_per_team=7)
    too_small = fits.model_copy(update={"mm_max_users_per_team": 6, "mysql_max_connections": 107})

    def refused(profile) -> dict[str, list[str]]:
        out = {}
        for stack, part in parts.stacks_of(profile.profile, profile):
            rendered = [(r.type, plain(r.inputs)) for r in declared(profile, part).values()]
            out[stack] = check_stack(rules.team_limits, rendered)
        return out

    assert all(got == [] for got in refused(fits).values())
    got = refused(too_small)
    assert got.pop("cohort-w8.platform") == [
        "container 'omcgitea-cohort-w8-mattermost': mm_max_users_per_team 6 must exceed 2 task(s) x 2 workers "
        "+ 2 administrators (6); set it to 7 or more.",
        "container 'omcgitea-cohort-w8-mysql': mysql_max_connections 107 must cover 4 per router x 2 plus the "
        "platform's 100 (108); set it to 108 or more.",
    ]
    assert len(got) == 3 and all(m == [] for m in got.values())


@pytest.mark.parametrize("stack", ["cohort-w8", "baseline-pandoc", "cohort-w120-swarm"])
def test_the_experiment_holds_only_its_parts_and_their_children_alias_it(tmp_path: Path, stack: str):
    """The experiment's children are its parts (the platform's, each task's, the record's); each child of a part names
    the experiment as its parent of before, so a stack made before the parts were components keeps every resource
    (tests/integration/test_faults.py upgrades a real one in place and plans no change)."""
    per_task = [] if stack.endswith("-swarm") else [Part("task", TASKS[0]), Part("record")]  # a swarm: one stack
    for part in (parts.WHOLE, *per_task):
        profile = stack_profile(stack, tmp_path, tasks=TASKS[:1], stacks="one" if part == parts.WHOLE else "per-task")
        regs = declared(profile, part)
        by_urn = {r.urn: r for r in regs.values()}
        experiment = regs["experiment"].urn
        kids = sorted(r.type for r in regs.values() if r.parent == experiment)
        assert (
            kids
            == {
                parts.WHOLE: ["agensh:index:PlatformPart", "agensh:index:RecordPart", "agensh:index:TaskPart"],
                Part("task", TASKS[0]): ["agensh:index:TaskPart"],
                Part("record"): ["agensh:index:RecordPart"],
            }[part]
        )
        moved = [r for r in regs.values() if r.parent in by_urn and by_urn[r.parent].parent == experiment]
        assert moved and all(r.aliases == [experiment] for r in moved), [r.name for r in moved if not r.aliases]
        assert all(r.aliases == [] for r in regs.values() if r not in moved)  # the others inherit their parent's
