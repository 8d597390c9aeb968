"""The contract is the one place of its facts: changing a limit there moves profile validation, the policy pack
and the preflight together, and no literal of it is written again elsewhere."""

from __future__ import annotations

import re

import pytest

from model import contract
from model.profile import ProfileError, parse_profile
from model.project import ROOT
from policies import rules
from scripts.lib.checks import check_limits
from tests.unit.test_policies import C, check, check_stack, platform, worker
from tests.unit.test_profile import raw

# Literals only model/contract.py may spell (the shell scripts installed on hosts carry their own copies).
LITERALS = [
    "agensh.profile",
    "agensh.role",
    "agensh.node",
    "agensh.task",
    "agensh.kind",
    "agensh.run-id",
    "agensh.checkout-revision",
    "com.docker.compose.project",
    "10000",
    "task_cleanroom",
    "_1776_",
    "gpt-5.6-sol",
    "/opt/pbench/executable",
    "pbench-admin",
    "town-square",
    "LLM_UPSTREAM_TOKEN",
    "LLM_PROXY_TOKEN",
    '"omcgitea',
    "'omcgitea",
    "65536",
    "8192",
]


def test_no_literal_of_the_contract_is_written_twice():
    found = []
    for folder in ("components", "model", "policies", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "model" / "contract.py":
                continue
            text = path.read_text()
            found += [f"{path.relative_to(ROOT)}: {lit}" for lit in LITERALS if lit in text]
    assert found == []
    contract_text = (ROOT / "model" / "contract.py").read_text()
    assert [lit for lit in LITERALS if lit not in contract_text] == ["'omcgitea", "65536", "8192"]  # derived there


LIMITS = {
    "workers": 200,
    "tasks": 1,
    "routers": 200,
    "administrators": 2,
    "mm_max_users": 400,
    "mysql_max_connections": 1000,
    "platform_connections": 100,
}


class Rendered:
    limits = LIMITS


def test_image_repository_keeps_a_registry_port():
    assert contract.image_repository("localhost:5000/agensh/router:v1") == "localhost:5000/agensh/router"
    assert contract.image_repository("localhost:5000/agensh/router") == "localhost:5000/agensh/router"
    assert contract.image_repository("omcgitea-board:<none>") == "omcgitea-board"


def test_one_limit_changed_in_the_contract_moves_every_check(monkeypatch: pytest.MonkeyPatch):
    profile = raw(workers=200, mm_max_users_per_team=400)
    parse_profile(profile)  # 4 x 200 + 100 = 900 <= 1000
    assert check_stack(rules.team_limits, platform(200, max_users=400)) == []
    assert check_limits(Rendered()).startswith("team limits hold")  # type: ignore[arg-type]

    monkeypatch.setattr(contract, "CONNECTIONS_PER_ROUTER", 5)  # 5 x 200 + 100 = 1100 > 1000
    with pytest.raises(ProfileError, match="must cover 5 per router x 200"):
        parse_profile(profile)
    assert any(
        "must cover 5 per router x 200" in m for m in check_stack(rules.team_limits, platform(200, max_users=400))
    )
    with pytest.raises(AssertionError, match="must cover 5 per router x 200"):
        check_limits(Rendered())  # type: ignore[arg-type]


def test_memory_ceiling_changed_in_the_contract(monkeypatch: pytest.MonkeyPatch):
    assert check(rules.memory_ceilings, C, worker()) == []
    monkeypatch.setattr(contract, "WORKER_MEMORY_MAX_GIB", 32)
    with pytest.raises(ProfileError, match="worker ceiling is 32768 MB"):
        parse_profile(raw())
    assert re.search("worker ceiling is 32768 MB", check(rules.memory_ceilings, C, worker())[0])
    assert parse_profile(raw(worker_memory_gib=32)).worker_memory_gib == 32


def test_the_chat_counts_every_tasks_agents():
    """The bootstrap registers every task's agents in one team: 128 workers x 5 tasks need a cap above 642, refused at
    the profile (new-stack), by the pack (from the bootstrap's own WORKERS and TASKS, which a per-task profile's
    platform stack holds without any worker) and by the preflight alike, each naming the number to set."""
    assert (contract.mm_users_needed(128, 5, 2), contract.mm_max_users_needed(128, 5, 2)) == (642, 643)
    tasks = [
        "jgm__pandoc.5caad90",
        "gromacs__gromacs.665ea4c",
        "universal-ctags__ctags.243595e",
        "php__php-src.c891263",
        "ffmpeg__ffmpeg.360a402",
    ]
    with pytest.raises(ProfileError) as refused:
        parse_profile(raw(workers=128, tasks=tasks))
    assert refused.value.problems == [
        (
            "mm_max_users_per_team",
            "200 must exceed 5 task(s) x 128 workers + 2 administrators (642); set it to 643 or more",
        )
    ]
    assert parse_profile(raw(workers=128, tasks=tasks, mm_max_users_per_team=643)).limits["tasks"] == 5
    assert check_stack(rules.team_limits, platform(128, tasks=5)) == [
        "container 'mattermost': mm_max_users_per_team 200 must exceed 5 task(s) x 128 workers + 2 administrators "
        "(642); set it to 643 or more."
    ]
    assert check_stack(rules.team_limits, platform(128, tasks=5, max_users=643)) == []

    class Five:
        limits = {**LIMITS, "workers": 128, "routers": 128, "tasks": 5, "mm_max_users": 200}

    with pytest.raises(AssertionError, match="set it to 643 or more"):
        check_limits(Five())  # type: ignore[arg-type]
