"""The swarm engine's graph under Pulumi mocks: the 120-worker example stack becomes one-replica services pinned
to their planned nodes, on overlay networks, running images by digest from the manager's registry; only the egress
proxy gets the model credential, as a swarm secret."""

from __future__ import annotations

import json
from pathlib import Path

from components.experiment import Experiment
from model import contract, placement
from model.topology import Layout
from tests.components.conftest import SECRET_VALUES, secrets, stack_profile
from tests.components.test_experiment import unsecret

SERVICE = "docker:index/service:Service"


def test_swarm_graph(tmp_path: Path, run_program):
    profile = stack_profile("cohort-w120-swarm", tmp_path, host_units="off")
    (Path(profile.agensh_checkout) / "prompts" / "kickoff.md").write_text("Task $task_id, deadline $deadline\n")
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    by_type: dict[str, list] = {}
    for r in regs.values():
        by_type.setdefault(r.type, []).append(r)

    plan = placement.plan(profile)
    services = {r.inputs["name"]: unsecret(r.inputs) for r in by_type[SERVICE]}
    expected = [c for c in Layout.of(profile).placements if c.role != "bootstrap"]
    assert sorted(services) == sorted(c.name for c in expected)  # 120 workers, 120 routers, 6 platform services
    for c in expected:
        spec = services[c.name]["taskSpec"]
        node = plan.node_of(c.role, c.index)
        assert spec["placement"]["constraints"] == [contract.node_constraint(node)]
        assert spec["restartPolicy"]["condition"] == "none"
        # a worker has no task until the wake step scales it to 1 at its ramp offset
        assert services[c.name]["mode"]["replicated"]["replicas"] == (0 if c.role == "worker" else 1)
        assert (
            spec["containerSpec"]["image"].startswith("10.40.0.11:5000/")
            and "@sha256:" in spec["containerSpec"]["image"]
        )
        if c.role == "worker":
            assert spec["containerSpec"]["user"] == contract.WORKER_USER
            assert spec["containerSpec"]["capDrops"] == ["ALL"]
            assert spec["resources"]["limits"]["memoryBytes"] == 64 * 1024**3
            assert len(spec["networksAdvanceds"]) == 1  # the internal network only, no published port
            assert not (services[c.name].get("endpointSpec") or {}).get("ports")
    # the bootstrap runs to completion on the manager, attached to the internal overlay network
    (bootstrap,) = [r for r in by_type["docker:index/container:Container"]]
    assert bootstrap.inputs["attach"] is True and bootstrap.inputs["mustRun"] is False

    nets = {r.inputs["name"]: r.inputs for r in by_type["docker:index/network:Network"]}
    assert {n["driver"] for n in nets.values()} == {"overlay"}
    assert nets["omcgitea-cohort-w120-swarm-internal"]["internal"] is True
    assert nets["omcgitea-cohort-w120-swarm-internal"]["attachable"] is True
    # the database only on the data network (and the operator one for its published port), no worker there
    assert nets["omcgitea-cohort-w120-swarm-data"]["internal"] is True
    assert nets["omcgitea-cohort-w120-swarm-data"]["attachable"] is False
    ids = {kind: f"experiment-swarm-{kind}-id" for kind in ("internal", "data", "operator")}  # the mocks' ids
    attached = {n: {a["id"] for a in s["taskSpec"]["networksAdvanceds"]} for n, s in services.items()}
    assert attached["omcgitea-cohort-w120-swarm-mysql"] == {ids["data"], ids["operator"]}
    on_data = {n for n, nets_of in attached.items() if ids["data"] in nets_of}
    assert {n.removeprefix("omcgitea-cohort-w120-swarm-").split("-")[0] for n in on_data} >= {"gitea", "mattermost"}
    assert len([n for n in on_data if "-router-" in n]) == 120 and not any("-worker-" in n for n in on_data)

    token = SECRET_VALUES["llm_upstream_token"]
    (secret,) = by_type["docker:index/secret:Secret"]
    holders = [n for n, s in services.items() if s["taskSpec"]["containerSpec"].get("secrets")]
    assert holders == ["omcgitea-cohort-w120-swarm-egress-proxy"]
    proxy_env = services[holders[0]]["taskSpec"]["containerSpec"]["env"]
    assert proxy_env[f"{contract.MODEL_CREDENTIAL_ENV}_FILE"].startswith("/run/secrets/")
    assert token not in json.dumps(services) and token not in json.dumps(unsecret(bootstrap.inputs))
    # every image a service runs was pushed to the registry; the prompts travel as configs
    assert len(by_type["docker:index/registryImage:RegistryImage"]) == len(
        {s["taskSpec"]["containerSpec"]["image"].split("@")[0] for s in services.values()}
    )
    assert [r.inputs["data"] for r in by_type["docker:index/serviceConfig:ServiceConfig"]]
    # the steps use the manager's Docker and reach the services on the manager's published ports
    steps = {r.name: unsecret(r.inputs) for r in by_type["command:local:Command"]}
    seed = steps["experiment-jgm-pandoc-5caad90-seed"]["environment"]
    assert seed["DOCKER_HOST"] == "unix:///var/run/docker.sock"
    assert json.loads(seed["AGENSH_INPUT"])["gitea_url"] == f"http://10.40.0.11:{profile.port_base}"


def test_every_node_has_its_host_units_before_the_launch(tmp_path: Path, run_program):
    """The slice and the reboot guard on the manager and, over SSH, on every other node: the host preflight (and so
    every service) waits for all of them."""
    profile = stack_profile("cohort-w120-swarm", tmp_path, host_units="local")
    (Path(profile.agensh_checkout) / "prompts" / "kickoff.md").write_text("Task $task_id, deadline $deadline\n")
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    units = [r for r in regs.values() if r.type == "agensh:index:HostUnits"]
    assert len(units) == len(profile.swarm.nodes) == 24  # the manager's own, 23 nodes over SSH
    waits_for = set(regs["experiment-preflight-host"].deps)  # a component's dependents wait for its children
    for u in units:
        children = {r.urn for r in regs.values() if r.parent == u.urn}
        assert children and children <= waits_for, u.name
