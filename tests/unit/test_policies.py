"""Every policy rule, passing and failing, with validation arguments built by hand (never the pack's __main__)."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)

from policies import rules

OPTS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
LABELS = {"agensh.profile": "p", "com.docker.compose.project": "omcgitea-p", "agensh.kind": "team"}


def labels(role: str | None = None, task: str | None = None, **extra: str) -> list[dict[str, str]]:
    out = dict(LABELS, **extra)
    if role:
        out["agensh.role"] = role
    if task:
        out["agensh.task"] = task
    return [{"label": k, "value": v} for k, v in out.items()]


def worker(**over: Any) -> dict[str, Any]:
    props = {
        "name": "w1",
        "user": "10000:10000",
        "memory": 65536.0,
        "labels": labels("worker", "t"),
        "networksAdvanced": [{"name": "omcgitea-p-internal", "ipv4Address": "10.1.0.24"}],
        "volumes": [
            {"hostPath": "/srv/agensh/p/data/agents/t-1/shutdown/r", "containerPath": "/archive"},
            {"hostPath": "/opt/agensh/prompts", "containerPath": "/opt/agensh/prompts", "readOnly": True},
        ],
        "envs": [
            "MODEL=gpt-5.6-sol",
            "REASONING_EFFORT=high",
            "LLM_PROXY_TOKEN=proxy-cred-123456",
            "PBENCH_HOURS=6.0",
            "PBENCH_DEADLINE_SECONDS=21600",
        ],
    }
    props.update(over)
    return props


def container(role: str, **over: Any) -> dict[str, Any]:
    props = {"name": role, "labels": labels(role), "networksAdvanced": [], "envs": []}
    props.update(over)
    return props


def network(name: str, subnet: str) -> dict[str, Any]:
    return {"name": name, "internal": True, "labels": labels("net"), "ipamConfigs": [{"subnet": subnet}]}


def check(policy, rtype: str, props: dict[str, Any], config: dict[str, Any] | None = None) -> list[str]:
    got: list[str] = []
    args = ResourceValidationArgs(
        rtype, props, f"urn:{props.get('name')}", str(props.get("name")), OPTS, None, config or {}
    )
    policy.validate(args, lambda msg, urn=None: got.append(msg))
    return got


def check_stack(policy, resources: list[tuple[str, dict[str, Any]]], config: dict[str, Any] | None = None) -> list[str]:
    got: list[str] = []
    prs = [
        PolicyResource(t, p, f"urn:{p.get('name')}", str(p.get("name")), OPTS, None, None, [], {}) for t, p in resources
    ]
    policy.validate(StackValidationArgs(prs, config or {}), lambda msg, urn=None: got.append(msg))
    return got


C, N, IMG = rules.CONTAINER, rules.NETWORK, rules.IMAGE


def team(n_workers: int, subnet: str = "10.1.0.0/24") -> list[tuple[str, dict[str, Any]]]:
    out = [(N, network("internal", subnet))]
    out += [
        (C, worker(name=f"w{i}", networksAdvanced=[{"name": "internal", "ipv4Address": f"10.1.0.{i + 16}"}]))
        for i in range(n_workers)
    ]
    return out


def platform(workers: int, tasks: int = 1, max_users: int = 200, max_connections: int = 1000) -> list:
    """The platform's containers the team-limit rule reads: the bootstrap (its WORKERS per task, its TASKS),
    Mattermost's cap and MySQL's connections."""
    registers = [f"WORKERS={workers}", "TASKS=" + " ".join(f"t{i}" for i in range(tasks))]
    return [
        (C, container("bootstrap", envs=registers)),
        (C, container("mattermost", envs=[f"MM_TEAMSETTINGS_MAXUSERSPERTEAM={max_users}"])),
        (C, container("mysql", command=["mysqld", f"--max-connections={max_connections}"])),
    ]


def test_every_policy_is_in_the_pack_and_mandatory():
    names = [p.name for p in rules.POLICIES]
    assert len(names) == len(set(names)) == 11
    assert {p.enforcement_level for p in rules.POLICIES} == {EnforcementLevel.MANDATORY}


def test_1_subnet_capacity():
    assert check_stack(rules.subnet_capacity, team(4, "10.1.0.0/29")) == []
    got = check_stack(rules.subnet_capacity, team(6, "10.1.0.0/29"))
    assert len(got) == 1 and "cannot hold its 6 containers plus 3 reserved" in got[0]


def test_2_subnets_disjoint():
    ok = [(N, network("a", "10.1.0.0/24")), (N, network("b", "10.1.255.0/24"))]
    assert check_stack(rules.subnets_disjoint, ok + team(2)[1:]) == []
    bad = [
        (N, network("a", "10.1.0.0/16")),
        (N, network("b", "10.1.255.0/24")),
        (C, container("x", networksAdvanced=[{"name": "a", "ipv4Address": "10.2.0.5"}])),
        (C, container("y", networksAdvanced=[{"name": "b", "ipv4Address": "10.1.255.9"}])),
        (C, container("z", networksAdvanced=[{"name": "b", "ipv4Address": "10.1.255.9"}])),
    ]
    got = check_stack(rules.subnets_disjoint, bad)
    assert (
        any("overlap" in m for m in got)
        and any("outside 'a'" in m for m in got)
        and any("share address" in m for m in got)
    )


def test_3_worker_isolation():
    assert check(rules.worker_isolation, C, worker()) == []
    assert check(rules.worker_isolation, C, worker(), {"dataDir": "/srv/agensh/p/data"}) == []
    bad = worker(
        user="root",
        privileged=True,
        ports=[{"internal": 80.0, "external": 8080.0, "ip": "127.0.0.1"}],
        volumes=[{"hostPath": "/var/run/docker.sock", "containerPath": "/var/run/docker.sock"}],
        networksAdvanced=[{"name": "omcgitea-p-internal"}, {"name": "omcgitea-p-egress"}],
    )
    got = check(rules.worker_isolation, C, bad)
    assert len(got) == 5
    assert any("runs as root" in m for m in got) and any("Docker socket" in m for m in got)
    no_user = dict(worker())
    del no_user["user"]
    assert "image default" in check(rules.worker_isolation, C, no_user)[0]
    other_net = worker(networksAdvanced=[{"name": "omcgitea-other-internal"}])
    assert "internal team network 'omcgitea-p-internal' only" in check(rules.worker_isolation, C, other_net)[0]
    root_mount = worker(volumes=[{"hostPath": "/", "containerPath": "/host", "readOnly": True}])
    assert "mounts the host's /" in check(rules.worker_isolation, C, root_mount)[0]
    outside = worker(volumes=[{"hostPath": "/srv/elsewhere", "containerPath": "/x"}])
    assert "writable, outside the profile's data" in check(rules.worker_isolation, C, outside)[0]
    # with the profile's data directory known (policy config from new_stack), only that directory counts
    assert check(rules.worker_isolation, C, worker(), {"dataDir": "/elsewhere/p/data"})


def test_4_memory_ceilings():
    assert check(rules.memory_ceilings, C, worker()) == []
    assert "no memory ceiling" in check(rules.memory_ceilings, C, worker(memory=None))[0]
    assert "ceiling is 65536 MB" in check(rules.memory_ceilings, C, worker(memory=70000.0))[0]
    router = container("router", memory=16384.0)
    assert "router ceiling is 8192 MB" in check(rules.memory_ceilings, C, router)[0]
    # the profile's own ceiling (policy config from new_stack) is checked, but never above the contract's
    assert "router ceiling is 8192 MB" in check(rules.memory_ceilings, C, router, {"routerMaxMb": 16384})[0]
    small = container("router", memory=6144.0)
    assert check(rules.memory_ceilings, C, small) == []
    assert "profile's router ceiling is 4096 MB" in check(rules.memory_ceilings, C, small, {"routerMaxMb": 4096})[0]


def test_5_credentials_contained():
    proxy = container(
        "egress-proxy", envs=["LLM_UPSTREAM_TOKEN=sk-model-credential", "WORKER_PROXY_TOKEN=proxy-cred-123456"]
    )
    mysql = container("mysql", envs=["MYSQL_ROOT_PASSWORD=mysql-password-1"])
    assert check_stack(rules.credentials_contained, [(C, proxy), (C, mysql), (C, worker())]) == []
    plain_names = worker(envs=["TOKEN_SERVICE_URL=http://10.1.0.6:8080", "PROMPT_WINDOW_TOKENS=272000"])
    assert check_stack(rules.credentials_contained, [(C, proxy), (C, plain_names)]) == []
    leaky = worker(envs=["LLM_UPSTREAM_TOKEN=sk-model-credential", "DB=mysql-password-1"])
    labelled = container("board", labels=labels("board", **{"api_token": "abc"}))
    got = check_stack(rules.credentials_contained, [(C, proxy), (C, mysql), (C, leaky), (C, labelled)])
    assert any("carries the model credential LLM_UPSTREAM_TOKEN" in m for m in got)
    assert any("holds a password or token in DB" in m for m in got)
    assert any("label 'api_token'" in m for m in got)


def test_6_loopback_ports():
    ok = container("gitea", ports=[{"internal": 3000.0, "external": 24400.0, "ip": "127.0.0.1"}])
    assert check(rules.loopback_ports, C, ok) == []
    bad = container("gitea", ports=[{"internal": 3000.0, "external": 24400.0, "ip": "0.0.0.0"}])
    assert "on 0.0.0.0" in check(rules.loopback_ports, C, bad)[0]
    baseline = container(
        "egress-proxy",
        labels=labels("egress-proxy", **{"agensh.kind": "baseline"}),
        ports=[{"internal": 80.0, "external": 9000.0, "ip": "127.0.0.1"}],
    )
    assert "baseline, which publishes no host port" in check(rules.loopback_ports, C, baseline)[0]


def test_7_image_pins():
    pinned = {"name": "programbench/x_1776_y.1@sha256:" + "a" * 64}
    assert check(rules.image_pins, IMG, pinned) == []
    by_tag = {"name": "programbench/x_1776_y.1:task_cleanroom_v6"}
    assert "pin it by digest" in check(rules.image_pins, IMG, by_tag)[0]
    assert check(rules.image_pins, IMG, by_tag, {"allowUnpinnedCleanroom": True}) == []
    latest = {"name": "omcgitea-board:latest", "build": {"context": "/x", "tags": ["omcgitea-board:latest"]}}
    assert "other than latest" in check(rules.image_pins, IMG, latest)[0]
    uncached = {"name": "omcgitea-board:local", "build": {"context": "/x", "noCache": True}}
    assert "use a private tag" in check(rules.image_pins, IMG, uncached)[0]
    assert check(rules.image_pins, IMG, {"name": "omcgitea-board:p-run", "build": {"noCache": True}}) == []


def test_8_team_limits():
    assert check_stack(rules.team_limits, platform(3)) == []
    got = check_stack(rules.team_limits, platform(3, max_users=5, max_connections=100))
    assert "container 'mattermost': mm_max_users_per_team 5 must exceed 1 task(s) x 3 workers" in got[0]
    assert got[1] == (
        "container 'mysql': mysql_max_connections 100 must cover 4 per router x 3 plus the platform's 100 (112); "
        "set it to 112 or more."
    )
    # the profile's numbers from the policy config new_stack writes: 5 administrators need 9 users
    assert check_stack(rules.team_limits, platform(3, max_users=8)) == []
    got = check_stack(rules.team_limits, platform(3, max_users=8), {"administrators": 5})
    assert len(got) == 1 and "must exceed 1 task(s) x 3 workers + 5 administrators (8); set it to 9" in got[0]
    # a task's own stack (a stack per task) holds its team but neither the chat nor the database: nothing to check
    team_alone = team(300)[1:] + [(C, container("router", labels=labels("router", "t"))) for _ in range(300)]
    assert check_stack(rules.team_limits, team_alone) == []


def test_9_model_settings():
    assert check(rules.model_settings, C, worker()) == []
    other = worker(envs=["MODEL=gpt-4o", "REASONING_EFFORT=low", "PBENCH_HOURS=6.0", "PBENCH_DEADLINE_SECONDS=3600"])
    got = check(rules.model_settings, C, other)
    assert len(got) == 3 and "allowedModels" in got[0] and "disagree" in got[2]
    assert len(check(rules.model_settings, C, other, {"allowedModels": ["gpt-4o"], "allowedEfforts": ["low"]})) == 1


@pytest.mark.parametrize("rtype", [C, N, rules.VOLUME])
def test_10_labels(rtype):
    assert check(rules.labels_present, rtype, {"name": "x", "labels": labels()}) == []
    assert "lacks the label(s) agensh.profile" in check(rules.labels_present, rtype, {"name": "x", "labels": []})[0]
    foreign = [{"label": "agensh.profile", "value": "p"}, {"label": "com.docker.compose.project", "value": "other"}]
    assert "must start with 'omcgitea-'" in check(rules.labels_present, rtype, {"name": "x", "labels": foreign})[0]


def test_the_pack_finds_the_stacks_own_numbers(tmp_path, monkeypatch):
    """A plain `pulumi up -s <stack>` attaches no policy config: the pack reads the file new-stack wrote, for a part
    stack its profile's, by the stack's name and config the engine gives every pack."""
    import json

    from model import stackfiles

    monkeypatch.setattr(stackfiles, "ROOT", tmp_path)
    (tmp_path / "stacks").mkdir()
    written = {"image-pins": {"enforcementLevel": "advisory"}, "memory-ceilings": {"workerMaxMb": 4096}}
    (tmp_path / "stacks" / "cohort-w8.policy.json").write_text(json.dumps(written))
    want = {"image-pins": {"enforcementLevel": EnforcementLevel.ADVISORY}, "memory-ceilings": {"workerMaxMb": 4096}}
    assert rules.stack_policy_config({"PULUMI_STACK": "cohort-w8"}) == want
    part = {"PULUMI_STACK": "cohort-w8.platform", "PULUMI_CONFIG": json.dumps({"agensh:part_of": "cohort-w8"})}
    assert rules.stack_policy_config(part) == want
    assert rules.stack_policy_config({"PULUMI_STACK": "other"}) == {}
    assert rules.stack_policy_config({}) == {}
    hostile = {"PULUMI_STACK": "x", "PULUMI_CONFIG": json.dumps({"agensh:part_of": "../../etc/x"})}
    assert rules.stack_policy_config(hostile) == {}
