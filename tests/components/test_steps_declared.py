"""Every step the components declare is one of the table's (model/steps.py), under its own name and commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.experiment import Experiment
from model import contract, step_graph, steps
from model.project import ROOT
from model.roles import ROLES
from tests.components.conftest import secrets, stack_profile


def test_every_declared_step_is_the_tables(tmp_path: Path, run_program):
    """Every command resource of a team, a baseline and a swarm that runs a step names it by its own name alone."""
    declared = set()
    for stack, over in (("cohort-w8", {}), ("baseline-pandoc", {}), ("cohort-w120-swarm", {"host_units": "off"})):
        profile = stack_profile(stack, tmp_path / stack, **over)
        regs = run_program(
            lambda profile=profile: Experiment("experiment", profile, secrets(), project_dir=ROOT).images.ids
        )
        for reg in regs.values():
            create = reg.inputs.get("create", "") if reg.type == "command:local:Command" else ""
            if steps.LAUNCHER not in create:
                continue
            match = [
                s
                for s in steps.STEPS
                if create == s.create_command
                and reg.inputs.get("delete") == s.delete_command
                and reg.name.endswith(f"-{s.suffix}")
            ]
            assert len(match) == 1, (reg.name, create)
            assert reg.inputs["dir"] == str(ROOT)
            declared.add(match[0])
    assert declared == set(steps.STEPS)


HOLDERS = {f"agensh:index:{c}" for c in ("Experiment", "PlatformPart", "TaskPart", "RecordPart")}
COMPONENT_NODES = {
    "agensh:index:Platform": "services",
    "agensh:index:Team": "team",
    "agensh:index:HostUnits": "host-units",
    "agensh:index:Networks": "networks",
    "agensh:index:Images": "images",
    "agensh:index:Swarm": "images",  # on a swarm, the images published to its registry
}
# steps given image ids or digests as inputs (known once the images exist), which so wait for them too: the first
# manifest records them, a swarm's nodes pull by them, a swarm's shutdown collects archives with the worker's image
READS_IMAGES = {steps.MANIFEST_START, steps.SWARM_NODES, steps.SHUTDOWN}


@pytest.mark.parametrize(
    ("stack", "over"),
    [
        ("cohort-w8", {"tasks": ["jgm__pandoc.5caad90", "ajeetdsouza__zoxide.67ca1bc"]}),
        ("cohort-w8", {"skip_eval": True, "host_units": "off"}),
        ("baseline-pandoc", {}),
        ("cohort-w120-swarm", {}),
    ],
)
def test_each_step_waits_for_what_the_graph_says(tmp_path: Path, run_program, stack, over):
    """Each step resource depends on the resources of the nodes its table entry runs after (model/step_graph.py),
    no more and no fewer: read back from the registrations, by the node each dependency is."""
    profile = stack_profile(stack, tmp_path, **over)
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=ROOT).images.ids)
    by_urn = {r.urn: r for r in regs.values()}
    platform = {r.urn for r in regs.values() if r.type == "agensh:index:Platform"}

    def top(urn: str) -> str:
        """The resource's step, or the component below the experiment's part that holds it."""
        while by_urn[urn].parent in by_urn and by_urn[by_urn[urn].parent].type not in HOLDERS:
            urn = by_urn[urn].parent
        return urn

    platform_children = {u for u in by_urn if top(u) in platform and u not in platform}

    def nodes(deps: list[str]) -> set[str]:
        """The graph's nodes of a resource's dependencies: the SDK lists a component's children for it, so all the
        platform's services are the node `services` and some of them (those the model check waits for) `model-path`."""
        found = set()
        for urn in map(top, deps):
            reg = by_urn[urn]
            if reg.type == "command:local:Command":
                found.add(next(s.suffix for s in steps.STEPS if reg.inputs.get("create") == s.create_command))
            elif urn in platform:
                found.add("services" if platform_children <= set(deps) else "model-path")
            else:
                found.add(COMPONENT_NODES[reg.type])
        return found

    run = step_graph.Run.of(profile)
    checked = 0
    for reg in regs.values():
        if reg.type != "command:local:Command" or steps.LAUNCHER not in reg.inputs.get("create", ""):
            continue
        (suffix,) = nodes([reg.urn])
        step = step_graph.BY_SUFFIX[suffix]
        expected = {r.suffix for r in step_graph.after(step, run)}
        if reg.name.startswith(f"experiment-{contract.task_slug(profile.tasks[0])}-"):  # the first task follows none
            expected -= {r.suffix for r in step_graph.after(step, run) if r.task == "previous"}
        late = {"images"} if step in READS_IMAGES else set()
        if all(ROLES[by_urn[u].name.removeprefix("experiment-platform-")].model_path for u in platform_children):
            # a platform of the model path alone (a baseline's egress proxy): the two nodes are the same resources
            expected = {"services" if n == "model-path" else n for n in expected}
        assert nodes(reg.deps) - late == expected, reg.name
        checked += 1
    per_scope = {s: sum(isinstance(i, steps.StepDef) for i in step_graph.order(run, s)) for s in step_graph.SCOPES}
    assert checked == per_scope["platform"] + per_scope["task"] * len(profile.tasks) + per_scope["record"]
