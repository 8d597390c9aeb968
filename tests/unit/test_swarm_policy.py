"""The policy pack's swarm-placement rule on services shaped as the engine hands them over, with the node
capacities the profile writes into the policy config: the same rule as the plan (placement.fit_problem)."""

from __future__ import annotations

from typing import Any

from model import contract, placement
from model.profile import parse_profile
from model.topology import Layout
from policies import rules
from tests.unit.test_placement import swarm
from tests.unit.test_policies import check, check_stack, labels

S = rules.SERVICE


def service(name: str, role: str, node: str | None, task: str | None = None, memory_mb: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containerSpec": {"image": "x"},
        "placement": {"constraints": [contract.node_constraint(node)] if node else []},
    }
    if memory_mb:
        spec["resources"] = {"limits": {"memoryBytes": float(memory_mb * 1024 * 1024)}}
    return {"name": name, "labels": labels(role, task), "taskSpec": spec}


def rendered(p, moved: dict[str, str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The services of the plan (a node replaced for the names in `moved`)."""
    made = placement.plan(p)
    out = []
    for c in Layout.of(p).placements:
        memory = {"worker": p.worker_memory_gib, "router": p.router_memory_gib}.get(c.role, 0) * contract.GIB_MB
        node = (moved or {}).get(c.name, made.node_of(c.role, c.index))
        out.append((S, service(c.name, c.role, node, c.task, memory)))
    return out


def test_the_plan_passes_and_an_overloaded_node_is_refused():
    p = parse_profile(swarm(8, 2))  # 4 pairs per node, 5 fit each
    cfg = p.policy_config()["swarm-placement"]
    assert check_stack(rules.swarm_placement, rendered(p), cfg) == []
    on_n2 = [c for c in Layout.of(p).placements if placement.plan(p).node_of(c.role, c.index) == "n2"]
    moved = {c.name: "n1" for c in on_n2}  # every pair on the manager: 8 pairs and the platform
    got = check_stack(rules.swarm_placement, rendered(p, moved), cfg)
    assert (
        len(got) == 1
        and got[0].startswith("node 'n1': memory ceilings add up to 598016 MB, the node allows 419430 MB")
        and "(task jgm__pandoc.5caad90)" in got[0]
    ), got


def test_services_must_be_pinned_to_listed_nodes_and_the_platform_to_its_node():
    p = parse_profile(swarm(2, 2))
    cfg = p.policy_config()["swarm-placement"]
    got = check_stack(
        rules.swarm_placement,
        [
            (S, service("w", "worker", None, "t", 1024)),
            (S, service("r", "router", "n9", "t", 1024)),
            (S, service("gitea", "gitea", "n2")),
        ],
        cfg,
    )
    assert got == [
        "service 'w' has no placement constraint node.labels.agensh.node==<node>; the plan pins every "
        "service to a node.",
        "service 'r' is pinned to node 'n9', which the profile's swarm does not list.",
        "service 'gitea' runs on 'n2'; the platform's node is 'n1' (its data stays there).",
    ]
    got = check_stack(rules.swarm_placement, [(S, service("gitea", "gitea", "n1"))], {})
    assert len(got) == 1 and "gives no node capacities" in got[0]


def test_a_stack_without_services_is_not_concerned():
    assert check_stack(rules.swarm_placement, [], {}) == []


def worker_service(**over: Any) -> dict[str, Any]:
    """A worker service as the engine hands it over (its networks by id), with its archive on node n2's data root."""
    spec = {
        "containerSpec": {
            "image": "x",
            "user": contract.WORKER_USER,
            "mounts": [{"type": "bind", "source": "/srv/n2/p/data/agents/a/shutdown/r", "target": "/archive"}],
        },
        "networksAdvanceds": [{"id": "net-internal-id"}],
    }
    spec.update(over)
    return {"name": "w", "labels": labels("worker", "t"), "taskSpec": spec}


def test_worker_isolation_reads_a_worker_service_and_each_nodes_data():
    """The worker-isolation rule holds for a swarm's worker services: one network (its id: the pack cannot know the
    name before the network exists), no published port, the worker uid, writable mounts only in a node's data."""
    raw = swarm(2, 2) | {"data_root": "/srv/n1"}
    raw["swarm"]["nodes"][1]["data_root"] = "/srv/n2"
    p = parse_profile(raw)
    cfg = p.policy_config()["worker-isolation"]
    assert cfg["nodeDataDirs"] == [f"/srv/n2/{p.profile}/data"]
    ok = worker_service(
        containerSpec={
            "image": "x",
            "user": contract.WORKER_USER,
            "mounts": [
                {"type": "bind", "source": f"/srv/n2/{p.profile}/data/agents/a/shutdown/r", "target": "/archive"}
            ],
        }
    )
    assert check(rules.worker_isolation, S, ok, cfg) == []
    two_nets = worker_service(networksAdvanceds=[{"id": "a"}, {"id": "b"}])
    assert "joins 2 networks" in check(rules.worker_isolation, S, two_nets, cfg)[0]
    elsewhere = worker_service(
        containerSpec={
            "image": "x",
            "user": contract.WORKER_USER,
            "mounts": [{"type": "bind", "source": "/srv/other/data", "target": "/x"}],
        }
    )
    assert "writable, outside the profile's data" in check(rules.worker_isolation, S, elsewhere, cfg)[0]
    as_root = worker_service(containerSpec={"image": "x", "user": "root"})
    assert "runs as root" in check(rules.worker_isolation, S, as_root, cfg)[0]
    published = dict(ok, endpointSpec={"ports": [{"targetPort": 8080, "publishedPort": 9000}]})
    assert "publishes ports" in check(rules.worker_isolation, S, published, cfg)[0]
