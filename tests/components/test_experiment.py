"""The team graph under Pulumi mocks, for the cohort-w8 and cohort-w32 stacks."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from components.experiment import Experiment
from model import steps
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
    if isinstance(value, dict):
        return {k: unsecret(v) for k, v in value.items()}
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
    assert len(by_type[NETWORK]) == 4
    assert len(by_type[IMAGE]) == 1 + 3 + 6 + 1  # cleanroom, third-party, shared images, one worker image
    # profile data, host units, 3 preflights, manifest start/finish, the report, the run's copy; seed, wake, kickoff,
    # export, reminders, nudges, shutdown, evaluate, score and the task's copy for the one task
    assert len(by_type["command:local:Command"]) == 9 + 10

    nets = {r.inputs["name"]: r for r in by_type[NETWORK]}
    internal, egress = nets[f"omcgitea-{stack}-internal"], nets[f"omcgitea-{stack}-egress"]
    assert internal.inputs["internal"] is True
    assert internal.inputs["ipamConfigs"][0]["subnet"] == f"10.{octet}.0.0/24"
    assert egress.inputs["ipamConfigs"][0]["subnet"] == f"10.{octet}.255.0/24"
    data = nets[f"omcgitea-{stack}-data"]
    assert data.inputs["internal"] is True and data.inputs["ipamConfigs"][0]["subnet"] == f"10.{octet}.128.0/24"
    on_data = sorted(
        labels_of(r)["agensh.role"]
        for r in containers.values()
        if f"omcgitea-{stack}-data" in [a["name"] for a in r.inputs["networksAdvanced"]]
    )
    assert on_data == sorted(["gitea", "mattermost", "mysql", *["router"] * workers])  # the database and its users
    mysql_nets = [a["name"] for a in containers[f"omcgitea-{stack}-mysql"].inputs["networksAdvanced"]]
    assert f"omcgitea-{stack}-internal" not in mysql_nets  # workers cannot reach the database
    holders = [n for n, r in containers.items() if SECRET_VALUES["mysql_root_password"] in repr(r.inputs.get("envs"))]
    assert sorted(holders) == sorted(f"omcgitea-{stack}-{s}" for s in ("gitea", "mysql"))  # no router, no Mattermost
    mattermost = containers[f"omcgitea-{stack}-mattermost"]
    assert is_secret(mattermost.inputs["envs"])  # the DSN holds a password
    mm_env = {k: v for k, v in env_of(mattermost).items() if k.startswith("MM_SQLSETTINGS_")}
    dsn = f"mattermost:{SECRET_VALUES['mysql_mattermost_password']}@tcp(10.{octet}.128.2:3306)/mattermost"
    assert mm_env == {
        "MM_SQLSETTINGS_DRIVERNAME": "mysql",
        "MM_SQLSETTINGS_DATASOURCE": f"{dsn}?charset=utf8mb4,utf8&writeTimeout=30s",
    }
    operator = nets[f"omcgitea-{stack}-operator"]
    assert operator.inputs["ipamConfigs"][0]["subnet"] == f"10.{octet}.254.0/24" and not operator.inputs.get("internal")
    on_operator = sorted(
        n
        for n, r in containers.items()
        if f"omcgitea-{stack}-operator" in [a["name"] for a in r.inputs["networksAdvanced"]]
    )
    assert on_operator == sorted(
        f"omcgitea-{stack}-{s}" for s in ("board", "gitea", "mattermost", "mysql", "secret-service")
    )
    assert all(containers[n].inputs["ports"] for n in on_operator)  # exactly the services that publish ports

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
    assert sorted(n["name"] for n in proxy.inputs["networksAdvanced"]) == [
        f"omcgitea-{stack}-egress",
        f"omcgitea-{stack}-internal",
    ]
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
    # the model check waits for the egress proxy only; every other platform service waits for the model check, so a
    # wrong model id stops the launch before them; the seed waits for all of them (depends_on the platform component)
    proxy_urn = urn["experiment-platform-egress-proxy"]
    assert len(platform_children) == 7
    assert set(regs["experiment-preflight-model"].deps) & platform_children == {proxy_urn}
    assert all(
        urn["experiment-preflight-model"] in r.deps
        for r in containers.values()
        if r.parent == platform_urn and r.urn != proxy_urn
    )
    # ... and for the platform's preflight, which follows all of them (the bootstrap's exit code: test_one_shot.py)
    seed = regs["experiment-jgm-pandoc-5caad90-seed"]
    checks = {urn["experiment-preflight-model"], urn["experiment-preflight-platform"]}
    assert platform_children | checks <= set(seed.deps)
    assert platform_children <= set(regs["experiment-preflight-platform"].deps)
    assert all(urn["experiment-jgm-pandoc-5caad90-seed"] in w.deps for w in workers_ + routers)
    # the seed's cleanroom copy is named per profile and task and labelled: a killed seed's is found and removed
    copy = json.loads(unsecret(seed.inputs["environment"])["AGENSH_INPUT"])["cleanroom"]
    assert copy["image"] == "programbench/jgm_1776_pandoc.5caad90:task_cleanroom_v6"
    assert copy["container"] == f"omcgitea-{profile.profile}-jgm-pandoc-5caad90-cleanroom-copy"
    assert copy["labels"] == profile.labels("cleanroom-copy", "jgm__pandoc.5caad90")
    worker_image = next(r for r in by_type[IMAGE] if labels_of_build(r).get("agensh.role") == "worker-image")
    assert all(worker_image.urn in w.deps for w in workers_)
    assert (
        worker_image.inputs["build"]["buildArgs"]["TASK_IMAGE"]
        == "programbench/jgm_1776_pandoc.5caad90:task_cleanroom_v6"
    )
    assert urn["experiment-host-install"] in regs["experiment-platform-mysql"].deps


def labels_of_build(reg) -> dict[str, str]:
    return reg.inputs.get("build", {}).get("label", {})


def test_step_edges_and_evaluation_overlap(tmp_path: Path, run_program):
    profile = stack_profile("cohort-w8", tmp_path, tasks=["jgm__pandoc.5caad90", "testorg__calculator.abc1234"])
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    urn = {r.name: r.urn for r in regs.values()}
    deps = {r.name: set(r.deps) for r in regs.values()}
    a, b = "experiment-jgm-pandoc-5caad90", "experiment-testorg-calculator-abc1234"

    def after(later: str, earlier: str) -> bool:
        return urn[earlier] in deps[later]

    assert after("experiment-manifest-start", "experiment-preflight-host")
    assert after("experiment-preflight-host", "experiment-images-worker-jgm-pandoc-5caad90")
    assert after("experiment-preflight-host", "experiment-net-internal")
    assert after("experiment-platform-mysql", "experiment-manifest-start")  # the manifest precedes every service
    assert after("experiment-preflight-model", "experiment-platform-egress-proxy")
    assert after(f"{a}-seed", "experiment-preflight-model")
    assert after(f"{a}-worker-1", f"{a}-seed") and after(f"{a}-router-8", f"{a}-seed")
    # the wake step starts the workers (created stopped) at their ramp offsets; the kickoff follows it
    assert after(f"{a}-wake", f"{a}-worker-8") and after(f"{a}-kickoff", f"{a}-wake")
    workers = [regs[f"{a}-worker-{n}"] for n in range(1, 9)]
    assert all(w.inputs["start"] is False and w.inputs["mustRun"] is False for w in workers)
    assert regs[f"{a}-router-1"].inputs.get("start", True) is True
    wake = json.loads(unsecret(regs[f"{a}-wake"].inputs["environment"])["AGENSH_INPUT"])
    assert list(wake["workers"].values()) == [30.0 * n for n in range(8)]
    assert list(wake["workers"]) == [w.inputs["name"] for w in workers]
    # a router is not waited for at creation and is checked every 30 s (128 checked every 5 s filled two cores): the
    # wake step asks each worker's router itself before starting the worker; a platform service is still waited for
    routers = [regs[f"{a}-router-{n}"] for n in range(1, 9)]
    assert all("wait" not in r.inputs and r.inputs["healthcheck"]["interval"] == "30s" for r in routers)
    assert list(wake["ready"]) == list(wake["workers"])
    assert wake["routers"] == {w.inputs["name"]: r.inputs["name"] for w, r in zip(workers, routers)}
    assert [urlsplit(u).hostname for u in wake["ready"].values()] == [
        r.inputs["networksAdvanced"][0]["ipv4Address"] for r in routers
    ]
    gitea = regs["experiment-platform-gitea"].inputs
    assert gitea["wait"] is True and gitea["healthcheck"]["interval"] == "5s"
    # the watchdog starts a dead router again before its worker (a Docker daemon restart stops both)
    watch = json.loads(unsecret(regs[f"{a}-nudges"].inputs["environment"])["AGENSH_INPUT"])
    assert watch["routers"] == {w.inputs["name"]: r.inputs["name"] for w, r in zip(workers, routers)}
    for first, then in (
        ("kickoff", "export"),
        ("export", "shutdown"),
        ("shutdown", "evaluate"),
        ("evaluate", "score"),
        ("kickoff", "reminders"),
        ("reminders", "shutdown"),
        ("kickoff", "nudges"),
        ("nudges", "shutdown"),
    ):
        assert after(f"{a}-{then}", f"{a}-{first}")
    # task b starts after task a's shutdown, not after its evaluation: evaluation overlaps the next task
    assert after(f"{b}-seed", f"{a}-shutdown")
    assert not after(f"{b}-seed", f"{a}-evaluate") and not after(f"{b}-seed", f"{a}-score")
    # each task's results are copied out once scored; the manifest finishes after every copy, the run's copy is last
    assert after(f"{a}-preserve", f"{a}-score") and after(f"{b}-preserve", f"{b}-score")
    assert after("experiment-manifest-finish", f"{a}-preserve") and after("experiment-manifest-finish", f"{b}-preserve")
    assert after("experiment-report", "experiment-manifest-finish") and after(
        "experiment-preserve-run", "experiment-report"
    )
    # the run's copy is the last step: every resource is something it waits for, so a destroy deletes it first and its
    # delete (the check that every result has its verified copy) runs before anything else is deleted
    by_urn = {r.urn: r for r in regs.values()}
    reached, todo = set(), [urn["experiment-preserve-run"]]
    while todo:
        r = by_urn[todo.pop()]
        for d in [*r.deps, *([r.parent] if r.parent in by_urn else [])]:
            if d not in reached:
                reached.add(d)
                todo.append(d)
    for r in regs.values():  # a component is reached through its children
        if r.urn != urn["experiment-preserve-run"] and r.type not in ("agensh:index:Experiment",) and r.parent:
            assert r.urn in reached or any(c.parent == r.urn and c.urn in reached for c in regs.values()), r.name
    assert regs["experiment-preserve-run"].inputs["delete"] == steps.PRESERVE_RUN.delete_command  # the guard
    copy = json.loads(unsecret(regs[f"{a}-preserve"].inputs["environment"])["AGENSH_INPUT"])
    assert copy["copy_dir"].endswith(f"/{profile.profile}.{profile.run_id}") and len(copy["archive_dirs"]) == 8
    # secrets travel as their own environment entries, never in AGENSH_INPUT
    assert is_secret(regs[f"{a}-seed"].inputs["environment"])  # an environment holding a secret stays secret
    seed = unsecret(regs[f"{a}-seed"].inputs["environment"])
    assert seed["AGENSH_GITEA_PASSWORD"] == SECRET_VALUES["gitea_admin_password"]
    for r in regs.values():
        step_input = str(unsecret(r.inputs.get("environment", {})).get("AGENSH_INPUT"))
        assert not any(v in step_input for v in SECRET_VALUES.values()), r.name


def test_bare_topology_without_steps(tmp_path: Path, run_program):
    profile = stack_profile("cohort-w8", tmp_path, run_steps=False)
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    commands = sorted(r.name for r in regs.values() if r.type == "command:local:Command")
    assert commands == ["experiment-host-install", "experiment-profile-data"]
    workers = [r for r in regs.values() if r.type == CONTAINER and labels_of(r)["agensh.role"] == "worker"]
    mysql = regs["experiment-platform-mysql"]
    assert len(workers) == 8 and all(mysql.urn in w.deps for w in workers)
