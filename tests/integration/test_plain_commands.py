"""`pulumi preview -s <stack>` and `pulumi up -s <stack>`, typed by hand after `. scripts/env.sh`, refuse what
`make preview` refuses, with the same messages, and create nothing; so does the checked-in cohort-w8. (That a plain
preview of a good stack passes, the pack finding the stack's own numbers, is part of
tests/integration/test_demo.py.)"""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

from scripts.lab.sandbox import free_octet, isolated_env, profile_config, project_copy

UNPINNED = "gpt-5.6"  # a model id the pack refuses unless the stack's policy config allows it
MISSING_CHECKOUT = "agensh:agensh_checkout: the Agensh checkout"  # the program's refusal of a checkout


def violations(out: subprocess.CompletedProcess[str]) -> list[str]:
    """The pack's messages in a command's output, in order."""
    return re.findall(r"uses model '[^']+'; the pinned model is .*", out.stdout + out.stderr)


def test_plain_commands_refuse_what_make_preview_refuses(tmp_path: Path, pulumi_engine: str):
    profile = f"plain-{uuid.uuid4().hex[:4]}"
    proj = project_copy(
        tmp_path,
        profile,
        profile_config(
            "demo.profile.yaml",
            profile=profile,
            subnet_octet=free_octet(),
            model=UNPINNED,
            data_root=str(tmp_path / "data"),
            traj_root=str(tmp_path / "traj"),
        ),
    )
    env = isolated_env(tmp_path, "plain-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        """A command as a user types it, in a shell that sourced the project's environment."""
        return subprocess.run(
            ["bash", "-c", f". scripts/env.sh && {command}"], cwd=proj, env=env, capture_output=True, text=True
        )

    made = shell(
        f".venv/bin/python -m scripts.cli new-stack {profile} --from stacks/{profile}.profile.yaml "
        "--env-file none --set host_units=off"
    )
    assert made.returncode == 0, made.stdout + made.stderr
    try:
        documented = shell(f"bash scripts/host/launch.sh preview {profile}")
        assert documented.returncode != 0 and violations(documented), documented.stdout[-3000:]
        plain = shell(f"pulumi preview --non-interactive -s {profile}")
        assert plain.returncode != 0
        assert violations(plain) == violations(documented)
        up = shell(f"pulumi up --yes --non-interactive -s {profile}")
        assert up.returncode != 0 and violations(up) == violations(documented)
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=agensh.profile={profile}"], capture_output=True, text=True
        )
        nets = subprocess.run(
            ["docker", "network", "ls", "-q", "--filter", f"label=agensh.profile={profile}"],
            capture_output=True,
            text=True,
        )
        assert left.stdout.strip() == "" and nets.stdout.strip() == ""
    finally:
        shell(f"pulumi destroy --yes --skip-preview --non-interactive -s {profile}")
        shell(f"pulumi stack rm --yes --force --non-interactive -s {profile}")


def pins(out: subprocess.CompletedProcess[str]) -> list[str]:
    """The pack's image-pins messages in a command's output, in order."""
    return re.findall(r"RemoteImage '[^']+' pulls \S+ by tag; pin it by digest.*", out.stdout + out.stderr)


def test_the_checked_in_cohort_w8_refused_alike(tmp_path: Path, pulumi_engine: str):
    """The checked-in `stacks/Pulumi.cohort-w8.yaml` as a researcher takes it: a plain `pulumi preview -s cohort-w8`
    refuses what `make preview` refuses. As it is, its checkout (/opt/agensh) is not here: both stop on it, before
    any image is declared. With a checkout that meets the contract: both refuse its cleanroom image pulled by tag."""
    profile = "cohort-w8"
    config = profile_config(f"Pulumi.{profile}.yaml", data_root=str(tmp_path / "data"), traj_root=str(tmp_path / "t"))
    proj = project_copy(tmp_path, profile, config)
    env = isolated_env(tmp_path, "w8-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", f". scripts/env.sh && {command}"], cwd=proj, env=env, capture_output=True, text=True
        )

    made = shell(
        f".venv/bin/python -m scripts.cli new-stack {profile} --from stacks/{profile}.profile.yaml --env-file none"
    )
    assert made.returncode == 0, made.stdout + made.stderr
    try:
        for out in (shell(f"bash scripts/host/launch.sh preview {profile}"), shell(f"pulumi preview -s {profile}")):
            said = out.stdout + out.stderr
            assert out.returncode != 0 and f"{MISSING_CHECKOUT} /opt/agensh does not meet" in said, said[-2000:]
            assert "Traceback" not in said
        demo_checkout = profile_config("demo.profile.yaml")["agensh:agensh_checkout"]  # relative to the project
        assert shell(f"pulumi config set -s {profile} agensh:agensh_checkout {demo_checkout}").returncode == 0
        documented = shell(f"bash scripts/host/launch.sh preview {profile}")
        plain = shell(f"pulumi preview --non-interactive -s {profile}")
        assert documented.returncode != 0 and pins(documented), documented.stdout[-3000:]
        assert plain.returncode != 0 and pins(plain) == pins(documented)
    finally:
        shell(f"pulumi stack rm --yes --force --non-interactive -s {profile}")
