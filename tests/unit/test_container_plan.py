"""The container plan (model/container_plan.py): the start order, its conditions and each container's rendered settings,
on one host and on a swarm, derived once for every renderer."""

from __future__ import annotations

import pytest

from model import contract, placement
from model.container_plan import MODEL_SECRET_KEY, SECRETS_DIR, ContainerPlan, PlannedContainer, Published
from model.profile import parse_profile
from model.roles import ROLES
from model.services import spec
from model.topology import Layout
from tests.unit.test_placement import swarm
from tests.unit.test_profile import TASK, raw

TASKS = [TASK, "ajeetdsouza__zoxide.67ca1bc"]


def plan_of(**over) -> ContainerPlan:
    return ContainerPlan.of(parse_profile(raw(**over)))


def by_name(plan: ContainerPlan, role: str, n: int | None = None) -> PlannedContainer:
    return next(c for c in plan.containers if c.role == role and (n is None or c.placement.index == n))


@pytest.mark.parametrize(
    "over",
    [
        {"workers": 3, "tasks": TASKS, "model_standin": True},
        {"workers": 1, "kind": "baseline"},
        {"workers": 2, "publish_ports": False},
        {"workers": 4, "engine": "swarm", "swarm": swarm(4, 2)["swarm"], "mm_max_users_per_team": 200},
    ],
)
def test_one_container_per_placement_each_waiting_only_for_earlier_ones(over):
    p = parse_profile(raw(**over))
    plan = ContainerPlan.of(p)
    assert [c.placement for c in plan.containers] == list(Layout.of(p).placements)
    seen: dict[str, PlannedContainer] = {}
    for c in plan.containers:
        for w in c.waits:  # the start order is a DAG in the plan's order, each wait's condition its target's
            target = seen[w.name]
            assert w.role == target.role
            expected = "completed" if target.spec.one_shot else "healthy" if target.spec.waited else "started"
            assert w.condition == expected
        seen[c.name] = c
    # per task, the phases hold every container once: the platform, then each task's
    phases = plan.phases(per_task=True)
    assert [c for phase in phases for c in phase] == sorted(plan.containers, key=lambda c: phases_index(p, c))
    assert plan.phases(per_task=False) == [plan.containers]


def phases_index(p, c: PlannedContainer) -> int:
    return 0 if c.placement.task is None else 1 + p.tasks.index(c.placement.task)


def test_a_team_waits_as_the_role_table_says():
    plan = plan_of(workers=3, tasks=TASKS, model_standin=True)
    waits = {c.role: [(w.role, w.condition) for w in c.waits] for c in plan.containers if not c.per_task}
    assert waits["mysql"] == [] and waits["board"] == [] and waits["model"] == []
    assert waits["gitea"] == waits["mattermost"] == [("mysql", "healthy")]
    assert waits["bootstrap"] == [("gitea", "healthy"), ("mattermost", "healthy"), ("secret-service", "healthy")]
    platform = [c for c in plan.containers if not c.per_task]
    for member in (c for c in plan.containers if c.per_task):
        # a router or worker waits for every platform service: the bootstrap until it is done
        assert [w.name for w in member.waits] == [c.name for c in platform]
        assert dict((w.role, w.condition) for w in member.waits)["bootstrap"] == "completed"
    assert [c.role for c in plan.containers if c.model_path] == ["egress-proxy", "model"]


def test_one_host_settings():
    p = parse_profile(raw(workers=2, tasks=TASKS))
    plan = ContainerPlan.of(p)
    for c in plan.containers:
        pl = c.placement
        assert c.spec == spec(p, pl) and c.labels == pl.labels and c.node is None and c.restart == "no"
        assert [(a.network, a.address) for a in c.networks] == list(pl.addresses.items())
        assert all(a.aliases == (tuple(pl.aliases(a.network) or ()) or None) for a in c.networks)
        assert c.published == (None if pl.operator_ip is None else Published(ROLES[c.role].port, p.ports[c.role]))
        assert c.file_secrets == {} and c.stop_grace_s is None
    gitea, router, worker = by_name(plan, "gitea"), by_name(plan, "router", 1), by_name(plan, "worker", 1)
    assert gitea.published is not None and gitea.published.external == p.ports["gitea"]
    assert router.published is None and worker.published is None
    # health: the platform checked every 5 s and waited for; a router every 30 s, its wake step waits for it
    assert gitea.health is not None and (gitea.health.interval, gitea.health.retries) == ("5s", 30)
    assert router.health is not None and (router.health.interval, router.health.retries) == ("30s", 3)
    assert router.health.timing() == {"interval": "30s", "timeout": "3s", "retries": 3, "start_period": "5s"}
    assert worker.health is None and not worker.runs_after_up and worker.spec.woken
    assert by_name(plan, "bootstrap").runs_after_up is False and gitea.runs_after_up


def test_swarm_settings_each_on_its_node():
    settings = swarm(4, 2)["swarm"]
    settings["nodes"][1]["data_root"] = "/srv/n2-data"
    p = parse_profile(raw(workers=4, engine="swarm", swarm=settings, mm_max_users_per_team=200))
    assert p.swarm is not None
    plan, spread = ContainerPlan.of(p), placement.plan(p)
    manager = p.swarm.manager.name
    for c in plan.containers:
        assert c.node == spread.node_of(c.role, c.placement.index)
        assert c.networks and all(a.address is None for a in c.networks)  # no fixed address on a swarm
        if c.spec.one_shot:  # the bootstrap: a container on the manager, on the internal overlay network
            assert c.labels[contract.NODE_LABEL] == manager and [a.network for a in c.networks] == ["internal"]
            continue
        assert c.labels == {**c.placement.labels, contract.NODE_LABEL: c.node}
        role = ROLES[c.role]
        publishes = c.role in p.ports
        assert [a.network for a in c.networks] == [*role.networks, *(["operator"] if publishes else [])]
        assert all(a.aliases == (None if role.per_task else (c.role,)) for a in c.networks)
        assert (c.published is not None) == publishes
        assert c.stop_grace_s == (p.export_grace_s if c.role == "worker" else None)
        holds_model_key = [k for k, ref in c.spec.secret_env.items() if ref == MODEL_SECRET_KEY]
        assert c.file_secrets == {k: f"{SECRETS_DIR}/{k.lower()}" for k in holds_model_key}
    assert list(by_name(plan, "egress-proxy").file_secrets) == [contract.MODEL_CREDENTIAL_ENV]
    # a container's data is under its node's data root
    off_manager = [c for c in plan.containers if c.node == "n2" and c.role == "worker"]
    assert off_manager and all(any(m.host_path.startswith("/srv/n2-data/") for m in c.spec.mounts) for c in off_manager)
