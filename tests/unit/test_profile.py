"""The profile model: defaults, every validation rule with its message, and the derivations."""

from __future__ import annotations

import json
from datetime import UTC

import pytest

from model import catalog, contract
from model.profile import ProfileError, parse_profile
from model.roles import ROLES
from model.services import SPECS, spec
from model.topology import Layout

TASK = "jgm__pandoc.5caad90"
CALC = "testorg__calculator.abc1234"


def raw(**over):
    base = {
        "profile": "cohort-w8",
        "run_id": "20261129t101500z",
        "tasks": [TASK],
        "llm_upstream": "https://gateway.example",
        "agensh_checkout": "/opt/agensh",
    }
    base.update(over)
    return base


def problems(**over) -> list[tuple[str, str]]:
    with pytest.raises(ProfileError) as err:
        parse_profile(raw(**over))
    return err.value.problems


def test_defaults_match_the_requirements():
    p = parse_profile(raw())
    assert (p.kind, p.workers, p.hours, p.deadline_seconds) == ("team", 8, 6.0, None)
    assert (p.model, p.reasoning_effort, p.model_api, p.prompt_window_tokens) == (
        "gpt-5.6-sol",
        "high",
        "responses",
        272_000,
    )
    assert (p.worker_memory_gib, p.router_memory_gib, p.slice_memory_percent) == (64, 8, 80)
    assert (p.mm_max_users_per_team, p.mysql_max_connections, p.mini_router_stuck_ms) == (200, 1000, 1_200_000)
    assert (p.wake_stagger_s, p.wake_fast_stagger_s, p.wake_slow_workers, p.bringup_settle_s, p.wake_ramp_subj_s) == (
        30,
        3,
        120,
        20,
        60,
    )
    assert (p.idle_nudge_s, p.idle_check_s, p.export_grace_s, p.snapshot_seconds) == (600, 60, 600, 1200)
    assert (p.port_base, p.subnet_octet) == (24400, 249)
    assert p.agent_base_image == "omcgitea-agent-base:pbench"
    assert p.mini_router_image == "omcgitea-mini-router:local"
    assert p.board_image == "omcgitea-board:local"
    assert p.secret_service_image == "omcgitea-secret-service:local"
    assert p.bootstrap_image == "omcgitea-bootstrap:local"
    assert p.agent_image_tag == "pbench" and not p.uncached
    assert (p.host_units, p.skip_eval, p.eval_pytest_addopts, p.traj_root) == (
        "local",
        False,
        "",
        "~/pbench-trajectories",
    )


def test_problems_are_reported_together_with_their_keys():
    got = problems(
        profile="Bad_Name",
        run_id="2026-11-29",
        tasks=["nope__x.1", TASK, TASK],
        deadline_seconds=100,
        llm_upstream="https://g.example/v1/responses",
    )
    keys = [k for k, _ in got]
    assert keys.count("tasks") == 2 and {"profile", "run_id", "deadline_seconds", "llm_upstream"} <= set(keys)
    msg = str(ProfileError(got))
    assert "agensh:run_id" in msg and "agensh:tasks" in msg


@pytest.mark.parametrize(
    "over,key,fragment",
    [
        ({"profile": "-x"}, "profile", "lowercase letters"),
        ({"run_id": "20261129T101500Z"}, "run_id", "YYYYMMDDtHHMMSSz"),
        ({"tasks": ["nope__x.1"]}, "tasks", "not a ProgramBench task"),
        ({"tasks": [TASK, TASK]}, "tasks", "listed twice"),
        ({"tasks": []}, "tasks", "at least 1"),
        ({"deadline_seconds": 21599}, "deadline_seconds", "disagrees with hours=6.0"),
        ({"llm_upstream": "https://g.example/v1/responses"}, "llm_upstream", "without /v1/responses"),
        ({"llm_upstream": "gateway"}, "llm_upstream", "http(s) URL"),
        ({"workers": 199}, "mm_max_users_per_team", "200 must exceed 1 task(s) x 199 workers + 2 administrators (201)"),
        (
            {"workers": 250, "mm_max_users_per_team": 400},
            "mysql_max_connections",
            "1000 must cover 4 per router x 250 plus the platform's 100 (1100)",
        ),
        ({"worker_memory_gib": 96}, "worker_memory_gib", "the worker ceiling is 65536 MB (64 GiB)"),
        ({"router_memory_gib": 9}, "router_memory_gib", "the router ceiling is 8192 MB (8 GiB)"),
        ({"port_base": 80}, "port_base", "greater than or equal to 1024"),
        ({"port_base": 70000}, "port_base", "less than or equal to"),
        ({"subnet_octet": 0}, "subnet_octet", "greater than or equal to 1"),
        ({"internal_subnet": "8.8.8.0/24"}, "internal_subnet", "not a private range"),
        ({"internal_subnet": "10.1.0.0/28"}, "internal_subnet", "the profile needs 33"),
        (
            {"internal_subnet": "10.1.0.0/16", "egress_subnet": "10.1.255.0/24"},
            "egress_subnet",
            "overlaps the internal subnet",
        ),
        ({"egress_subnet": "10.9.9.0/30"}, "egress_subnet", "too small"),
        ({"egress_subnet": "nonsense"}, "egress_subnet", "not an IPv4 subnet"),
        (
            {
                "workers": 512,
                "tasks": sorted(catalog.tasks())[:32],
                "mm_max_users_per_team": 600,
                "mysql_max_connections": 3000,
            },
            "workers",
            "do not fit a derived subnet",
        ),
        ({"host_units": "remote"}, "ssh_host", "required when host_units is remote"),
        ({"cleanroom_digests": {TASK: "sha256:abc"}}, "cleanroom_digests", "sha256:<64 hex>"),
        ({"cleanroom_digests": {CALC: "sha256:" + "a" * 64}}, "cleanroom_digests", "not one of this profile's tasks"),
        ({"kind": "baseline", "workers": 2}, "workers", "exactly one worker"),
        ({"kind": "baseline", "workers": 1, "tasks": [TASK, CALC]}, "tasks", "exactly one task"),
        ({"wokers": 3}, "wokers", "unknown setting"),
        ({"profile": "demo\n"}, "profile", "lowercase letters"),
        ({"run_id": "20261129t101500z\n"}, "run_id", "YYYYMMDDtHHMMSSz"),
        ({"data_root": "/"}, "data_root", "system directory"),
        ({"data_root": "/home"}, "data_root", "system directory"),
        ({"data_root": "data"}, "data_root", "absolute path"),
        ({"data_root": ""}, "data_root", "absolute path"),
        ({"traj_root": "/srv/d/cohort-w8/copies", "data_root": "/srv/d"}, "traj_root", "inside the profile's data"),
        ({"llm_upstream": "https://user:tok@host/"}, "llm_upstream", "carries credentials"),
        ({"llm_upstream": "https://host/?key=x"}, "llm_upstream", "query or fragment"),
        ({"llm_upstream": "https://host:99999"}, "llm_upstream", "not a URL"),
        ({"cleanroom_org": "-x"}, "cleanroom_org", "not a Docker repository path"),
        ({"board_image": "--privileged"}, "board_image", "not a Docker image reference"),
        ({"agent_image_tag": "-t"}, "agent_image_tag", "not a Docker tag"),
        ({"profile": "a-very-long-profile-name-that-goes-on"}, "profile", "exceed 63 characters"),
    ],
)
def test_each_rule(over, key, fragment):
    got = problems(**over)
    assert any(k == key and fragment in m for k, m in got), got


def test_structured_config_that_is_not_json_names_its_key():
    from model.profile import from_config_strings

    with pytest.raises(ProfileError) as err:
        from_config_strings({"tasks": '["a",', "workers": "8"})
    assert err.value.problems[0][0] == "tasks" and "not valid JSON" in err.value.problems[0][1]


def test_image_references_and_paths_that_are_fine():
    p = parse_profile(
        raw(
            board_image="reg.local:5000/team/board:v1.2",
            cleanroom_org="reg.local:5000/pb",
            mysql_image="mysql@sha256:" + "a" * 64,
            data_root="~/agensh-data",
        )
    )
    assert p.board_image == "reg.local:5000/team/board:v1.2"


def test_hours_and_deadline_agree():
    assert parse_profile(raw(hours=6, deadline_seconds=21600)).deadline_seconds == 21600


def test_derived_names_images_and_labels():
    p = parse_profile(raw(tasks=[TASK, CALC]))
    assert contract.task_slug(TASK) == "jgm-pandoc-5caad90"
    assert p.cleanroom_image(TASK) == "programbench/jgm_1776_pandoc.5caad90:task_cleanroom_v6"
    assert p.worker_image(TASK) == "omcgitea-agent-jgm-pandoc-5caad90:pbench"
    assert p.image("mini-router") == "omcgitea-mini-router:local"
    assert p.compose_project == "omcgitea-cohort-w8"
    assert contract.member_name("cohort-w8", TASK, "worker", 3) == "omcgitea-cohort-w8-jgm-pandoc-5caad90-worker-3"
    assert contract.labels("cohort-w8", p.run_id, "worker", TASK) == {
        "com.docker.compose.project": "omcgitea-cohort-w8",
        "agensh.profile": "cohort-w8",
        "agensh.run-id": p.run_id,
        "agensh.role": "worker",
        "agensh.task": TASK,
        "agensh.kind": "team",
    }


def test_digest_pins_and_private_tags():
    digest = "sha256:" + "b" * 64
    p = parse_profile(raw(uncached=True, cleanroom_digests={TASK: digest}, board_image="reg.local:5000/board:v1"))
    assert p.cleanroom_image(TASK) == f"programbench/jgm_1776_pandoc.5caad90@{digest}"
    assert p.worker_image(TASK) == "omcgitea-agent-jgm-pandoc-5caad90:cohort-w8-20261129t101500z"
    assert p.image("board") == "reg.local:5000/board:cohort-w8-20261129t101500z"
    assert p.image("agent-base") == "omcgitea-agent-base:cohort-w8-20261129t101500z"


def test_ports_and_subnets_of_the_documented_examples():
    w8 = parse_profile(raw())
    w32 = parse_profile(raw(profile="cohort-w32", workers=32, port_base=24800, subnet_octet=250))
    assert w8.ports == {"gitea": 24400, "mattermost": 24401, "board": 24402, "secret-service": 24403, "mysql": 24404}
    assert str(w8.internal_network) == "10.249.0.0/24" and str(w8.egress_network) == "10.249.255.0/24"
    assert str(w32.internal_network) == "10.250.0.0/24" and w32.ports["gitea"] == 24800
    big = parse_profile(raw(workers=120, mm_max_users_per_team=243, tasks=[TASK, CALC]))
    assert str(big.internal_network) == "10.249.0.0/23"  # 16 + 2*2*120 + 1 = 497 addresses


def test_baseline_publishes_nothing_and_takes_explicit_subnets():
    p = parse_profile(
        raw(kind="baseline", workers=1, internal_subnet="10.177.242.0/24", egress_subnet="10.177.243.0/24")
    )
    assert p.ports == {}
    assert [c.role for c in Layout.of(p).placements] == ["egress-proxy", "worker", "snapshot"]


def test_placements_of_cohort_w8():
    p = parse_profile(raw())
    cs = Layout.of(p).placements
    assert len(cs) == 7 + 2 * 8
    by = {c.name: c for c in cs}
    # the database is on the data network only, with the services that use it and the routers; never a worker
    mysql = by["omcgitea-cohort-w8-mysql"]
    assert (mysql.internal_ip, mysql.data_ip, mysql.operator_ip) == (None, "10.249.128.2", "10.249.254.2")
    assert by["omcgitea-cohort-w8-gitea"].data_ip == "10.249.128.3" and by["omcgitea-cohort-w8-board"].data_ip is None
    assert by["omcgitea-cohort-w8-jgm-pandoc-5caad90-router-8"].data_ip == "10.249.128.23"
    assert not [c for c in cs if c.role == "worker" and c.data_ip]
    assert str(p.data_network) == "10.249.128.0/24"
    router = spec(p, by["omcgitea-cohort-w8-jgm-pandoc-5caad90-router-1"])
    assert router.secret_env == {"MYSQL_PASSWORD": "mysql_router_password"} and router.env["MYSQL_USER"] == "router"
    callers = json.loads(spec(p, by["omcgitea-cohort-w8-secret-service"]).env["SECRET_SERVICE_CALLERS"])
    assert callers[f"{TASK}-1"] == by["omcgitea-cohort-w8-jgm-pandoc-5caad90-worker-1"].internal_ip
    assert by["omcgitea-cohort-w8-egress-proxy"].egress_ip == "10.249.255.2"
    assert by["omcgitea-cohort-w8-jgm-pandoc-5caad90-router-1"].internal_ip == "10.249.0.16"
    assert by["omcgitea-cohort-w8-jgm-pandoc-5caad90-worker-1"].internal_ip == "10.249.0.24"
    workers = [c for c in cs if c.role == "worker"]
    assert all(spec(p, c).memory_mb == 64 * 1024 and c.egress_ip is None for c in workers)
    assert all(spec(p, c).memory_mb == 8 * 1024 for c in cs if c.role == "router")
    assert {c.router_ip for c in workers} == {c.internal_ip for c in cs if c.role == "router"}


def test_every_role_has_its_container_spec():
    assert list(SPECS) == list(ROLES)


def test_ramp_and_budget():
    p = parse_profile(raw(workers=122, mm_max_users_per_team=300))
    b = p.task_budget
    assert b.worker_offsets[:3] == (0, 30, 60)
    assert b.worker_offsets[119] == 119 * 30 and b.worker_offsets[120] == 120 * 30 and b.worker_offsets[121] == 3603
    assert b.kickoff_s == 3603 + 20 + 60
    assert b.budget_s == 21600 and b.worker_time(121) == 21600 - 3603


def test_profile_digest_changes_with_any_setting():
    base = parse_profile(raw()).digest()
    assert base == parse_profile(raw()).digest()
    assert base != parse_profile(raw(workers=9)).digest() != parse_profile(raw(hours=5)).digest()


def test_operator_network_only_when_ports_are_published():
    p = parse_profile(raw())
    assert str(p.operator_network) == "10.249.254.0/24"
    off = parse_profile(raw(publish_ports=False))
    assert off.operator_network is None and off.ports == {}
    assert all(c.operator_ip is None for c in Layout.of(off).placements)
    got = problems(internal_subnet="10.249.254.0/24")
    assert any(k == "internal_subnet" and "overlaps the operator network" in m for k, m in got)


@pytest.mark.parametrize(
    "value,fragment",
    [
        ("tomorrow", "not an ISO 8601 time"),
        ("2026-12-02T06:00:00", "in UTC, ending in Z"),
        ("2026-12-02T08:00:00+02:00", "in UTC, ending in Z"),
        ("2026-12-02T06:00:00.5Z", "whole seconds"),
    ],
)
def test_start_at_rules(value, fragment):
    got = problems(start_at=value)
    assert any(k == "start_at" and fragment in m for k, m in got), got


def test_start_at_is_utc_and_may_lie_in_the_past():
    """A finished run's profile still validates: only the scheduling command refuses a past time."""
    from datetime import datetime

    import yaml

    assert parse_profile(raw()).start_time is None
    past = parse_profile(raw(start_at="2001-02-03T04:05:06Z"))
    assert past.start_time == datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)
    unquoted = yaml.safe_load("start_at: 2026-12-02T06:00:00Z")["start_at"]  # YAML makes it a timestamp
    assert parse_profile(raw(start_at=unquoted)).start_time == datetime(2026, 12, 2, 6, tzinfo=UTC)


def test_a_retired_setting_says_why():
    with pytest.raises(ProfileError) as err:
        parse_profile(raw(keep_pulled_images=False))
    assert "keep_pulled_images" in str(err.value) and "always kept on destroy" in str(err.value)
