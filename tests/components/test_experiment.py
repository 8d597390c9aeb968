"""The team graph under Pulumi mocks, for the cohort-w8 and cohort-w32 stacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.experiment import Experiment
from tests.components.conftest import SECRET_VALUES, secrets, stack_profile

CONTAINER = "docker:index/container:Container"
NETWORK = "docker:index/network:Network"
IMAGE = "docker:index/remoteImage:RemoteImage"


SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def unsecret(value):
    """Mocks hand secret inputs over wrapped in Pulumi's secret signature; unwrap, remembering none of it."""
    if isinstance(value, dict) and SECRET_SIG in value.values():
        return unsecret(value["value"])
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


def is_secret(value) -> bool:
    return isinstance(value, dict) and SECRET_SIG in value.values()


def env_of(reg) -> dict[str, str]:
    return dict(e.split("=", 1) for e in unsecret(reg.inputs.get("envs", [])))


def labels_of(reg) -> dict[str, str]:
    return {item["label"]: item["value"] for item in reg.inputs.get("labels", [])}


@pytest.mark.parametrize("stack,workers,octet,port", [("cohort-w8", 8, 249, 24400), ("cohort-w32", 32, 250, 24800)])
def test_team_graph(stack, workers, octet, port, tmp_path: Path, run_program):
    profile = stack_profile(stack, tmp_path)
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    by_type: dict[str, list] = {}
    for r in regs.values():
        by_type.setdefault(r.type, []).append(r)

    containers = {r.inputs["name"]: r for r in by_type[CONTAINER]}
    assert len(containers) == 7 + 2 * workers
    assert len(by_type[NETWORK]) == 2
    assert len(by_type[IMAGE]) == 1 + 6 + 1  # cleanroom, shared images, one worker image
    assert len(by_type["command:local:Command"]) == 1  # host units

    nets = {r.inputs["name"]: r for r in by_type[NETWORK]}
    internal, egress = nets[f"omcgitea-{stack}-internal"], nets[f"omcgitea-{stack}-egress"]
    assert internal.inputs["internal"] is True
    assert internal.inputs["ipamConfigs"][0]["subnet"] == f"10.{octet}.0.0/24"
    assert egress.inputs["ipamConfigs"][0]["subnet"] == f"10.{octet}.255.0/24"

    workers_ = [r for r in containers.values() if labels_of(r)["agensh.role"] == "worker"]
    routers = [r for r in containers.values() if labels_of(r)["agensh.role"] == "router"]
    assert len(workers_) == len(routers) == workers
    for w in workers_:
        assert w.inputs["memory"] == 64 * 1024 and w.inputs["user"] == "10000:10000"
        assert [n["name"] for n in w.inputs["networksAdvanced"]] == [f"omcgitea-{stack}-internal"]
        assert w.inputs["networksAdvanced"][0]["ipv4Address"].startswith(f"10.{octet}.0.")
        assert not w.inputs.get("ports") and w.inputs["mustRun"] is False
        blob = repr(w.inputs.get("envs")) + repr(w.inputs.get("labels"))
        for key, value in SECRET_VALUES.items():
            assert (value in blob) == (key == "worker_proxy_token"), key
    assert all(r.inputs["memory"] == 8 * 1024 for r in routers)

    proxy = containers[f"omcgitea-{stack}-egress-proxy"]
    assert sorted(n["name"] for n in proxy.inputs["networksAdvanced"]) == sorted(nets)
    assert env_of(proxy)["LLM_UPSTREAM_TOKEN"] == SECRET_VALUES["llm_upstream_token"]
    assert is_secret(proxy.inputs["envs"])  # secrets stay secret in state
    holders = [n for n, r in containers.items() if SECRET_VALUES["llm_upstream_token"] in repr(r.inputs.get("envs"))]
    assert holders == [f"omcgitea-{stack}-egress-proxy"]

    addresses = [n["ipv4Address"] for r in containers.values() for n in r.inputs["networksAdvanced"]]
    assert len(addresses) == len(set(addresses))
    published = [p for r in containers.values() for p in r.inputs.get("ports", [])]
    assert {p["external"] for p in published} == {port + i for i in range(5)}
    assert all(p["ip"] == "127.0.0.1" for p in published)
    assert env_of(containers[f"omcgitea-{stack}-mattermost"])["MM_TEAMSETTINGS_MAXUSERSPERTEAM"] == "200"
    assert "--max-connections=1000" in containers[f"omcgitea-{stack}-mysql"].inputs["command"]

    # parents and dependencies
    urn = {r.name: r.urn for r in regs.values()}
    platform_urn = urn["experiment-platform"]
    assert containers[f"omcgitea-{stack}-mysql"].parent == platform_urn
    team = next(r for r in regs.values() if r.type == "agensh:index:Team")
    assert all(w.parent == team.urn for w in workers_)
    platform_children = {r.urn for r in containers.values() if r.parent == platform_urn}
    assert len(platform_children) == 7 and platform_children <= set(team.deps)  # depends_on a component = its children
    worker_image = next(r for r in by_type[IMAGE] if labels_of_build(r).get("agensh.role") == "worker-image")
    assert all(worker_image.urn in w.deps for w in workers_)
    assert worker_image.inputs["build"]["buildArgs"]["TASK_IMAGE"] == "programbench/jgm_1776_pandoc.5caad90:task_cleanroom_v6"
    assert urn["experiment-host-install"] in regs["experiment-platform"].deps


def labels_of_build(reg) -> dict[str, str]:
    return reg.inputs.get("build", {}).get("labels", {})
