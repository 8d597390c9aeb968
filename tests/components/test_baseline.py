"""The baseline graph under Pulumi mocks: the worker and its egress proxy only, no published port, the snapshot
sidecar, the baseline's own steps and the shared evaluate/score steps, and the pairing output."""

from __future__ import annotations

from pathlib import Path

import pulumi

from components.experiment import Experiment
from tests.components.conftest import secrets, stack_profile

CONTAINER = "docker:index/container:Container"


def test_baseline_graph(tmp_path: Path, run_program):
    profile = stack_profile("baseline-pandoc", tmp_path, pair_with="cohort-w8")
    seen = {}

    def program():
        exp = Experiment("experiment", profile, secrets(), project_dir=tmp_path)
        seen["pair"] = exp.outputs["pair"]
        return pulumi.Output.all(exp.images.ids, exp.outputs["pair"]).apply(lambda v: seen.update(pair_value=v[1]))

    regs = run_program(program)
    containers = {r.inputs["name"]: r for r in regs.values() if r.type == CONTAINER}
    assert sorted(containers) == [
        "omcgitea-baseline-pandoc-egress-proxy",
        "omcgitea-baseline-pandoc-jgm-pandoc-5caad90-snapshot",
        "omcgitea-baseline-pandoc-jgm-pandoc-5caad90-worker-1",
    ]
    nets = sorted(
        r.inputs["ipamConfigs"][0]["subnet"] for r in regs.values() if r.type == "docker:index/network:Network"
    )
    assert nets == ["10.177.242.0/24", "10.177.243.0/24"]
    assert not any(r.inputs.get("ports") for r in containers.values())
    worker = containers["omcgitea-baseline-pandoc-jgm-pandoc-5caad90-worker-1"]
    sidecar = containers["omcgitea-baseline-pandoc-jgm-pandoc-5caad90-snapshot"]
    assert sidecar.inputs["networkMode"] == "none" and sidecar.inputs["user"] == "10000:10000"
    assert "/workspace" in [v["containerPath"] for v in worker.inputs["volumes"]]
    assert [v["hostPath"] for v in sidecar.inputs["volumes"]] == [
        v["hostPath"] for v in worker.inputs["volumes"] if v["containerPath"] == "/workspace"
    ]
    images = sorted(r.name for r in regs.values() if r.type == "docker:index/remoteImage:RemoteImage")
    assert len(images) == 4  # cleanroom, agent base, egress proxy, worker

    urn = {r.name: r.urn for r in regs.values()}
    deps = {r.name: set(r.deps) for r in regs.values()}
    slug = "experiment-jgm-pandoc-5caad90"
    assert urn["experiment-preflight-model"] in deps[f"{slug}-baseline-seed"]
    assert (
        urn[f"{slug}-baseline-seed"] in deps[f"{slug}-worker-1"]
        and urn[f"{slug}-baseline-seed"] in deps[f"{slug}-snapshot-1"]
    )
    assert urn[f"{slug}-worker-1"] in deps[f"{slug}-baseline-stop"]
    assert urn[f"{slug}-baseline-stop"] in deps[f"{slug}-evaluate"] and urn[f"{slug}-evaluate"] in deps[f"{slug}-score"]
    assert not any(
        r.name.endswith(("-kickoff", "-export", "-seed")) and "baseline" not in r.name for r in regs.values()
    )
    assert seen["pair_value"]["jgm__pandoc.5caad90"]["team"] == 0.75
