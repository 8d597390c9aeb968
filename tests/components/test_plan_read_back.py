"""Every container the program declares, on one host or on a swarm, reads back (as the policy pack reads it:
model/container_plan.py's `Declared`) as the container plan says: the renderers translate the plan, and the pack's
reading of either engine's resource is its inverse."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.experiment import Experiment
from model.container_plan import ContainerPlan, Declared, PlannedContainer, declared_container, declared_service
from model.project import SCRIPTS
from policies import rules
from tests.components.conftest import secrets, stack_profile
from tests.components.test_parts import plain

CASES = {
    "one host": ("cohort-w8", {"host_units": "off", "workers": 2, "tasks": ["jgm__pandoc.5caad90"]}),
    "baseline": ("baseline-pandoc", {"host_units": "off"}),
    "swarm": ("cohort-w120-swarm", {"host_units": "off", "workers": 6, "model_standin": True}),
}


def expected_env(c: PlannedContainer) -> set[str]:
    """The variables a container gets: its settings, its secrets, and a swarm's model credential as a file."""
    s = c.spec
    return {*s.env, *(k for k in s.secret_env if k not in c.file_secrets), *(f"{k}_FILE" for k in c.file_secrets)}


def from_manager(p, host_path: str) -> bool:
    return any(Path(host_path).is_relative_to(root) for root in (p.checkout_dir, SCRIPTS))


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_declared_container_reads_back_as_planned(case: str, tmp_path: Path, run_program):
    stack, over = CASES[case]
    p = stack_profile(stack, tmp_path, **over)
    plan = ContainerPlan.of(p)
    regs = run_program(lambda: Experiment("experiment", p, secrets(), project_dir=tmp_path).images.ids)
    read: dict[str, tuple[str, Declared]] = {}
    for r in regs.values():
        if r.type == rules.CONTAINER:
            d = declared_container(plain(r.inputs))
        elif r.type == rules.SERVICE:
            d = declared_service(plain(r.inputs))
        else:
            continue
        read[str(d.name)] = (r.type, d)
    assert sorted(read) == sorted(c.name for c in plan.containers)
    swarm = p.engine == "swarm"
    for c in plan.containers:
        rtype, d = read[c.name]
        s = c.spec
        assert rtype == (rules.SERVICE if swarm and not s.one_shot else rules.CONTAINER), c.name
        assert (d.role, d.labels, d.user) == (c.role, c.labels, s.user), c.name
        assert set(d.env) == expected_env(c), c.name
        assert d.env.items() >= s.env.items(), c.name  # the plain settings as they are
        assert d.memory_mb == s.memory_mb, c.name
        assert d.command == (s.command or ()), c.name
        published = [(pt.internal, pt.external) for pt in d.ports]
        assert published == ([(c.published.internal, c.published.external)] if c.published else []), c.name
        if rtype == rules.SERVICE:  # the files only the manager has travel as configs, not mounts
            assert d.mounts == tuple(m for m in s.mounts if not from_manager(p, m.host_path)), c.name
            assert d.node == c.node and all(pt.mode == "host" for pt in d.ports), c.name
            assert bool(d.secrets) == bool(c.file_secrets), c.name
            assert [n.aliases for n in d.networks] == [a.aliases for a in c.networks], c.name
        else:
            assert d.mounts == s.mounts, c.name
            assert all(pt.ip == "127.0.0.1" for pt in d.ports), c.name
            # by network name on one host (the stack's own networks' names), the one-shot's on a swarm too
            kinds = {name: kind for kind, name in plan.layout.network_names.items()}
            assert [(kinds.get(str(n.network)), n.address, n.aliases) for n in d.networks] == [
                (a.network, a.address, a.aliases) for a in c.networks
            ], c.name
