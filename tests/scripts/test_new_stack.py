"""`python -m scripts.cli new-stack` against the real pulumi CLI, in a copy of the project with its own backend."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TASK = "jgm__pandoc.5caad90"


def run(proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scripts.cli", "new-stack", *args, "--env-file", "none"],
        cwd=proj,
        capture_output=True,
        text=True,
    )


def secret(proj: Path, key: str) -> str:
    return subprocess.run(
        ["pulumi", "config", "get", "-s", "cohort-w8", f"agensh:{key}"],
        cwd=proj,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_twice_keeps_passwords_and_file_is_private(project: Path):
    args = (
        "cohort-w8",
        "--workers",
        "8",
        "--tasks",
        TASK,
        "--port-base",
        "24400",
        "--subnet-octet",
        "249",
        "--checkout",
        "/opt/agensh",
    )
    first = run(project, *args)
    assert first.returncode == 0, first.stderr
    path = project / "stacks" / "Pulumi.cohort-w8.yaml"
    before = {k: secret(project, k) for k in ("mysql_root_password", "worker_proxy_token")}
    assert all(len(v) >= 24 for v in before.values())
    assert secret(project, "llm_upstream_token") == "tok-" + "x" * 20
    second = run(project, *args, "--set", "hours=5")
    assert second.returncode == 0, second.stderr
    assert "nothing (kept)" in second.stdout
    assert {k: secret(project, k) for k in before} == before
    doc = yaml.safe_load(path.read_text())["config"]
    assert doc["agensh:hours"] == 5 and doc["agensh:workers"] == 8 and doc["agensh:tasks"] == [TASK]
    assert "secure" in doc["agensh:mysql_root_password"]
    assert "x" * 20 not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_bad_arguments_write_nothing(project: Path):
    bad = run(project, "cohort-w8", "--workers", "300", "--tasks", "nope__x.1", "--checkout", "/opt/agensh")
    assert bad.returncode == 2
    assert "agensh:tasks" in bad.stderr and "agensh:mm_max_users_per_team" in bad.stderr
    assert not (project / "stacks" / "Pulumi.cohort-w8.yaml").exists()
    listed = subprocess.run(["pulumi", "stack", "ls", "--json"], cwd=project, capture_output=True, text=True)
    assert "cohort-w8" not in listed.stdout


def test_a_team_too_large_for_the_chat_is_refused_with_the_number_to_set(project: Path):
    """128 workers on 5 tasks: the bootstrap registers 640 agents in one chat team, beyond the default cap of 200."""
    five = ("jgm__pandoc.5caad90", "gromacs__gromacs.665ea4c", "universal-ctags__ctags.243595e")
    five += ("php__php-src.c891263", "ffmpeg__ffmpeg.360a402")
    args = ("cohort-w128", "--workers", "128", "--checkout", "/opt/agensh", "--set", "stacks=per-task")
    stacks = sorted((project / "stacks").iterdir())
    bad = run(project, *args, "--tasks", *five)
    assert bad.returncode == 2, bad.stderr
    assert (
        "the profile has 1 problem(s):\n  agensh:mm_max_users_per_team: 200 must exceed 5 task(s) x 128 workers"
        " + 2 administrators (642); set it to 643 or more"
    ) in bad.stderr
    assert sorted((project / "stacks").iterdir()) == stacks
    listed = subprocess.run(["pulumi", "stack", "ls", "--json"], cwd=project, capture_output=True, text=True)
    assert "cohort-w128" not in listed.stdout
    fitted = run(project, *args, "--set", "mm_max_users_per_team=643", "--tasks", *five)
    assert fitted.returncode == 0, fitted.stderr
    doc = yaml.safe_load((project / "stacks" / "Pulumi.cohort-w128.yaml").read_text())
    assert doc["config"]["agensh:mm_max_users_per_team"] == "643"


def test_no_token_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LLM_UPSTREAM_TOKEN")
    out = run(project, "cohort-w8", "--tasks", TASK, "--checkout", "/opt/agensh")
    assert out.returncode == 2 and "no gateway token" in out.stderr
    assert not (project / "stacks" / "Pulumi.cohort-w8.yaml").exists()


def test_env_file_values_and_mode_warning(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LLM_UPSTREAM")
    env = tmp_path / "upstream.env"
    env.write_text("LLM_UPSTREAM=https://from-file.example\nLLM_UPSTREAM_TOKEN=file-token-123\n")
    os.chmod(env, 0o644)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.cli",
            "new-stack",
            "cohort-w8",
            "--tasks",
            TASK,
            "--checkout",
            "/opt/agensh",
            "--env-file",
            str(env),
        ],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "chmod 600" in out.stderr
    doc = yaml.safe_load((project / "stacks" / "Pulumi.cohort-w8.yaml").read_text())["config"]
    assert doc["agensh:llm_upstream"] == "https://from-file.example"
    assert secret(project, "llm_upstream_token") == "tok-" + "x" * 20  # the exported value wins over the file


@pytest.mark.parametrize(
    "args,key",
    [
        (("../../evil", "--tasks", TASK), "stack name"),
        (("cohort-w8", "--tasks", TASK, "--set", "profile=demo\n"), "agensh:profile"),
        (("cohort-w8", "--tasks", TASK, "--set", "run_id=20261129t000000z\n"), "agensh:run_id"),
        (("cohort-w8", "--tasks", TASK, "--set", "data_root=/"), "agensh:data_root"),
        (("cohort-w8", "--tasks", TASK, "--set", "data_root=relative/data"), "agensh:data_root"),
        (("cohort-w8", "--tasks", TASK, "--set", "data_root="), "agensh:data_root"),
        (("cohort-w8", "--tasks", TASK, "--set", "llm_upstream=https://user:tok@host/?key=x"), "agensh:llm_upstream"),
        (("cohort-w8", "--tasks", TASK, "--set", "cleanroom_org=-x"), "agensh:cleanroom_org"),
    ],
)
def test_hostile_inputs_are_refused_and_nothing_is_written(project: Path, args, key):
    before = sorted(p.name for p in (project / "stacks").iterdir())
    out = run(project, *args, "--checkout", "/opt/agensh")
    assert out.returncode == 2 and key in out.stderr, out.stderr
    assert sorted(p.name for p in (project / "stacks").iterdir()) == before
    assert not (project.parent / "evil").exists() and not list(project.parent.glob("Pulumi.*"))
    listed = subprocess.run(["pulumi", "stack", "ls", "--json"], cwd=project, capture_output=True, text=True)
    assert "cohort-w8" not in listed.stdout and "evil" not in listed.stdout


def test_a_retired_setting_of_an_earlier_stack_file_is_dropped_with_its_reason(project: Path):
    args = ("cohort-w8", "--tasks", TASK, "--checkout", "/opt/agensh")
    assert run(project, *args).returncode == 0
    path = project / "stacks" / "Pulumi.cohort-w8.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["agensh:keep_pulled_images"] = "false"  # as an earlier checkout wrote it
    path.write_text(yaml.safe_dump(doc))
    again = run(project, *args)
    assert again.returncode == 0, again.stderr
    assert "dropped keep_pulled_images" in again.stderr and "always kept on destroy" in again.stderr
    assert "agensh:keep_pulled_images" not in yaml.safe_load(path.read_text())["config"]
    refused = run(project, *args, "--set", "keep_pulled_images=false")  # asked for anew: refused, with the reason
    assert refused.returncode != 0 and "always kept on destroy" in refused.stderr


def test_an_earlier_stack_file_gets_a_new_secret_and_keeps_the_others(project: Path):
    """A stack file written before a generated secret existed (mysql_mattermost_password): new-stack generates that
    one and changes no other."""
    args = ("cohort-w8", "--tasks", TASK, "--checkout", "/opt/agensh")
    assert run(project, *args).returncode == 0
    pulumi = ["pulumi", "config", "rm", "-s", "cohort-w8", "agensh:mysql_mattermost_password"]
    subprocess.run(pulumi, cwd=project, check=True, capture_output=True)
    kept = {k: secret(project, k) for k in ("mysql_root_password", "mysql_router_password", "llm_upstream_token")}
    again = run(project, *args)
    assert again.returncode == 0, again.stderr
    assert "generated: mysql_mattermost_password\n" in again.stdout
    assert {k: secret(project, k) for k in kept} == kept and len(secret(project, "mysql_mattermost_password")) >= 24
