"""Every step the components declare is one of the table's (model/steps.py), under its own name and program."""

from __future__ import annotations

from pathlib import Path

from components.experiment import Experiment
from model import steps
from model.project import ROOT
from tests.components.conftest import secrets, stack_profile


def test_every_declared_step_is_the_tables(tmp_path: Path, run_program):
    """Every command resource of a team, a baseline and a swarm runs a program of the table under its own name."""
    declared = set()
    for stack, over in (("cohort-w8", {}), ("baseline-pandoc", {}), ("cohort-w120-swarm", {"host_units": "off"})):
        profile = stack_profile(stack, tmp_path / stack, **over)
        regs = run_program(
            lambda profile=profile: Experiment("experiment", profile, secrets(), project_dir=ROOT).images.ids
        )
        for reg in regs.values():
            create = reg.inputs.get("create", "") if reg.type == "command:local:Command" else ""
            if " -m scripts." not in create:
                continue
            module_args = create.split(" -m ", 1)[1]
            match = [
                s
                for s in steps.STEPS
                if f"{s.module} {s.args}".strip() == module_args and reg.name.endswith(f"-{s.suffix}")
            ]
            assert len(match) == 1, (reg.name, create)
            declared.add(match[0])
    assert declared == set(steps.STEPS)
