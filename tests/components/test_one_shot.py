"""A one-shot container (the bootstrap) is checked before any task: the engine counts it created whatever its exit
code, so the platform's preflight (`preflight-platform`) gets the code the engine read back, and every seed waits for
that step (scripts/preflight.py fails it on a non-zero code)."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi

from components.experiment import Experiment
from model.project import ROOT
from tests.components.conftest import Mocks, RecordingMonitor, Reg, secrets, stack_profile

CONTAINER = "docker:index/container:Container"


class ExitingMocks(Mocks):
    """The engine's answers, with the exit code the provider reads back from each one-shot container."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        rid, out = super().new_resource(args)
        if args.typ == CONTAINER and args.inputs.get("attach"):
            out["exitCode"] = 3
        return rid, out


def updated(tmp_path: Path) -> dict[str, Reg]:
    p = stack_profile("cohort-w8", tmp_path, workers=2, tasks=["jgm__pandoc.5caad90", "ajeetdsouza__zoxide.67ca1bc"])
    mocks = ExitingMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, preview=False, monitor=monitor)
    pulumi.runtime.test(lambda: Experiment("experiment", p, secrets(), ROOT).outputs["profile"])()
    return monitor.regs


def test_the_bootstraps_exit_code_reaches_the_platforms_preflight_before_any_task(tmp_path: Path):
    regs = updated(tmp_path)
    (bootstrap,) = [r for r in regs.values() if r.type == CONTAINER and r.inputs.get("attach")]
    assert "exitCode" not in bootstrap.inputs  # an output only: the inputs are those of the SDK's Container
    check = regs["experiment-preflight-platform"]
    assert bootstrap.urn in check.deps
    inputs = json.loads(check.inputs["environment"]["AGENSH_INPUT"])
    assert inputs["one_shots"] == {bootstrap.inputs["name"]: {"urn": bootstrap.urn, "exit_code": 3}}
    seeds = [r for n, r in regs.items() if n.endswith("-seed")]
    assert len(seeds) == 2 and all(check.urn in s.deps for s in seeds)
