"""Every step the components declare is one of the table's (model/steps.py), under its own name and commands."""

from __future__ import annotations

from pathlib import Path

from components.experiment import Experiment
from model import steps
from model.project import ROOT
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
