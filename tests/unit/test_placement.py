"""The swarm plan: how many hosts a team needs, where each container goes, and the profile's refusal of a plan
that does not fit (model/placement.py)."""

from __future__ import annotations

import pytest

from model import contract, placement
from model.profile import ProfileError, parse_profile
from model.topology import Layout
from tests.unit.test_profile import raw

# A host of a given size: 512 GiB and 64 CPUs; the profile's ceilings: workers 64 GiB, routers 8 GiB.
BIG = {"memory_gib": 512, "cpus": 64}


def swarm(workers: int, nodes: int, **over) -> dict:
    settings = {
        "docker_host": "unix:///run/manager.sock",
        "registry": "10.31.1.11:5000",
        "nodes": [
            {
                "name": f"n{i}",
                "address": f"10.31.1.{10 + i}",
                "role": "manager" if i == 1 else "worker",
                "ssh_host": None if i == 1 else f"10.31.1.{10 + i}",
                **BIG,
            }
            for i in range(1, nodes + 1)
        ],
    }
    settings.update(over)
    return raw(workers=workers, engine="swarm", swarm=settings, mm_max_users_per_team=max(200, workers + 3))


@pytest.mark.parametrize("workers, hosts", [(8, 2), (32, 7), (120, 24)])
def test_hosts_needed_for_8_32_120_workers(workers: int, hosts: int):
    """512 GiB x 80% = 409.6 GiB per host takes 5 pairs of 72 GiB ceilings (CPUs: 5 x 1.25 of 64); the manager
    also holds the platform's 8 GiB (still 5 pairs). 8 workers: 2 hosts; 32: 1 + ceil(27 / 5) = 7; 120: 24."""
    p = parse_profile(swarm(workers, hosts))
    made = placement.plan(p)
    assert made.fits and placement.hosts_needed(p) == hosts
    assert [n.limit for n in made.nodes] == [5] * hosts
    assert sorted(w for n in made.nodes for w in n.members) == list(range(1, workers + 1))
    assert max(len(n.members) for n in made.nodes) - min(len(n.members) for n in made.nodes) <= 1  # spread evenly
    for n in made.nodes:
        assert placement.fit_problem(n.node.name, n.capacity, n.load(p, p.swarm)) is None


def test_a_node_too_small_for_a_pair_takes_none_and_the_others_hold_the_team():
    settings = swarm(8, 3)
    settings["swarm"]["nodes"][1].update(memory_gib=1, cpus=1)  # n2, the first worker node: the size hosts count in
    p = parse_profile(settings)
    made = placement.plan(p)
    assert made.fits and [len(n.members) for n in made.nodes] == [4, 0, 4]
    assert placement.hosts_needed(p) is None and "takes no router+worker pair" in placement.needs(p)


def test_too_few_hosts_are_refused_with_the_number_needed():
    with pytest.raises(ProfileError) as err:
        parse_profile(swarm(120, 4))
    ((key, msg),) = err.value.problems
    assert key == "swarm.nodes"
    assert "120 router+worker pairs do not fit" in msg and "n1 5, n2 5, n3 5, n4 5 (20)" in msg
    assert "needs 24 hosts" in msg


def test_every_container_has_a_node_routers_beside_their_workers_platform_on_the_manager():
    p = parse_profile(swarm(8, 2))
    made = placement.plan(p)
    where = {c.name: made.node_of(c.role, c.index) for c in Layout.of(p).placements}
    assert len(where) == len(Layout.of(p).placements)
    for c in Layout.of(p).placements:
        if c.role in ("router", "worker"):
            twin = contract.member_name(p.profile, c.task, "worker" if c.role == "router" else "router", c.index)
            assert where[c.name] == where[twin]
        else:
            assert where[c.name] == "n1"
    assert sorted(where.values()).count("n2") == 8  # 4 pairs on the worker node, 4 beside the platform


def test_cpu_and_per_node_ceilings_limit_a_node():
    small_cpu = parse_profile(swarm(8, 2, worker_cpus=8.0))  # 64 CPUs / (8 + 0.25) = 7; minus the platform's 2: 7
    assert [n.limit for n in placement.plan(small_cpu).nodes] == [5, 5]  # memory still binds first
    p = parse_profile(swarm(8, 3, worker_cpus=20.0))
    assert [n.limit for n in placement.plan(p).nodes] == [3, 3, 3]  # (64 - 2) / 20.25 = 3 and 64 / 20.25 = 3
    p = parse_profile(swarm(8, 4, max_members_per_node=2))
    assert [n.limit for n in placement.plan(p).nodes] == [2, 2, 2, 2]
    assert placement.fit_problem("n1", placement.Capacity(1000, 4.0, 2), placement.Load(1200, 5.0, 3)) == (
        "node 'n1': memory ceilings add up to 1200 MB, the node allows 1000 MB; 5 CPUs counted, the node has 4; "
        "3 router+worker pairs, the profile allows 2 per node"
    )


def test_platform_on_a_labelled_node():
    settings = swarm(8, 3)
    settings["swarm"]["nodes"][2]["labels"] = {"agensh.platform": "yes"}
    settings["swarm"]["platform_on"] = "agensh.platform=yes"
    p = parse_profile(settings)
    made = placement.plan(p)
    assert [n.platform for n in made.nodes] == [False, False, True]
    assert made.node_of("gitea", None) == "n3"


def test_swarm_settings_are_checked():
    def keys(**over) -> list[tuple[str, str]]:
        with pytest.raises(ProfileError) as err:
            parse_profile(over.pop("profile_raw", None) or swarm(8, 2, **over))
        return err.value.problems

    settings = swarm(8, 2)
    settings["swarm"]["nodes"][1]["role"] = "manager"
    settings["swarm"]["nodes"][1]["name"] = "n1"
    got = keys(profile_raw=settings)
    assert ("swarm.nodes", "exactly one node is the manager, not 2 (n1, n1)") in got
    assert ("swarm.nodes", "node names repeat: ['n1']") in got
    assert keys(platform_on="gpu") == [("swarm.platform_on", "'gpu': `manager` or a node label `key=value`")]
    assert keys(platform_on="a=b") == [("swarm.platform_on", "no node carries the label a=b")]
    settings = swarm(8, 2)
    settings["swarm"]["nodes"][1]["ssh_host"] = None
    assert keys(profile_raw=settings) == [
        ("swarm.nodes", "node 'n2' needs ssh_host for its host units (or host_units: off)")
    ]
    assert ("swarm", "engine: swarm needs the swarm settings (docker_host, registry, nodes)") in keys(
        profile_raw=raw(engine="swarm")
    )
    no_engine = swarm(8, 2)
    no_engine.pop("engine")
    assert keys(profile_raw=no_engine) == [("swarm", "set engine: swarm to use the swarm settings")]


def test_docker_engine_is_the_default_and_unchanged():
    p = parse_profile(raw())
    assert p.engine == "docker" and p.swarm is None
    assert "swarm-placement" not in p.policy_config()


def test_policy_config_carries_the_node_capacities():
    p = parse_profile(swarm(8, 2))
    cfg = p.policy_config()["swarm-placement"]
    assert cfg["nodes"]["n1"] == {"memoryMb": 419430, "cpus": 64, "maxMembers": None}  # 512 GiB x 80%
    assert cfg["platformNode"] == "n1" and cfg["platformMemoryMb"] == 8 * 1024


@pytest.mark.parametrize(
    "workers, memory_gib, cpus, overcommit, hosts",
    [
        (8, 512, 64, 1, 2),
        (32, 512, 64, 1, 7),
        (120, 512, 64, 1, 24),
        (8, 256, 32, 1, 4),
        (32, 256, 32, 1, 16),
        (120, 256, 32, 1, 60),
        (8, 512, 64, 2, 1),
        (32, 512, 64, 2, 3),
        (120, 512, 64, 2, 11),
    ],
)
def test_the_readme_figures(workers: int, memory_gib: int, cpus: int, overcommit: float, hosts: int):
    """docs/swarm.md: hosts needed on hosts of a given size (whatever nodes are listed)."""
    from model.profile import Profile

    settings = swarm(workers, 1, memory_overcommit=overcommit)
    settings["swarm"]["nodes"][0].update(memory_gib=memory_gib, cpus=cpus)
    assert placement.hosts_needed(Profile.model_validate(settings)) == hosts
