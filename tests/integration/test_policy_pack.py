"""The real `pulumi preview --policy-pack policies`, in `make preview`'s environment, refuses a stack that breaks
rules 1, 3 and 5, showing every message, and `pulumi up` (with its preview, as the documented commands run it)
creates nothing. (The demo stack passing the pack is part of tests/integration/test_demo.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

from model.project import ROOT
from scripts.lab.sandbox import PREVIEW_ENV


def test_preview_refuses_a_broken_team(tmp_path: Path, pulumi_engine: str):
    run = uuid.uuid4().hex[:8]
    proj = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "policy_project", proj)
    (proj / "Pulumi.yaml").write_text((proj / "Pulumi.yaml").read_text().replace("VIRTUALENV", str(ROOT / ".venv")))
    (tmp_path / "state").mkdir()
    env = dict(os.environ, PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}", PULUMI_CONFIG_PASSPHRASE="t")
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)

    def pulumi(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["pulumi", *args, "--non-interactive", "-s", "broken"],
            cwd=proj,
            env={**env, **(extra or {})},
            capture_output=True,
            text=True,
        )

    subprocess.run(
        ["pulumi", "stack", "init", "broken", "--non-interactive"], cwd=proj, env=env, check=True, capture_output=True
    )
    pulumi("config", "set", "run", run)
    try:
        out = pulumi("preview", "--policy-pack", str(ROOT / "policies"), extra=PREVIEW_ENV)
        text = out.stdout + out.stderr
        assert out.returncode != 0
        assert "subnet-capacity" in text and "cannot hold its 6 containers plus 3 reserved addresses" in text
        assert "worker-isolation" in text and "joins 2 networks" in text
        assert "runs as the image default" in text and "mounts the host's /" in text
        assert "credentials-contained" in text and "carries the model credential LLM_UPSTREAM_TOKEN" in text
        # `up` as the documented commands and `make demo` run it (a preview first): refused before anything exists
        up = pulumi("up", "--yes", "--policy-pack", str(ROOT / "policies"))
        assert up.returncode != 0 and "mounts the host's /" in up.stdout + up.stderr
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=agensh.test={run}"], capture_output=True, text=True
        )
        nets = subprocess.run(
            ["docker", "network", "ls", "-q", "--filter", f"label=agensh.test={run}"], capture_output=True, text=True
        )
        assert left.stdout.strip() == "" and nets.stdout.strip() == ""
    finally:
        pulumi("stack", "rm", "--yes", "--force")
