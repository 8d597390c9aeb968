"""The demo's task as a standalone baseline through the real engine (stand-in agent, stand-in model), scored by
the real evaluator; records written; destroy leaves nothing labelled behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from tests.integration.test_demo import COPIED, labelled

ROOT = Path(__file__).resolve().parents[2]
TASK = "testorg__calculator.abc1234"


def test_baseline_runs_scores_and_cleans_up(tmp_path: Path, pulumi_engine: str):
    proj = tmp_path / "project"
    proj.mkdir()
    for part in COPIED:
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, proj / part)
    shutil.copytree(ROOT / "stacks" / "demo", proj / "stacks" / "demo")
    (proj / ".venv").symlink_to(ROOT / ".venv")
    profile = f"baseit-{uuid.uuid4().hex[:4]}"
    config = yaml.safe_load((ROOT / "stacks" / "demo-baseline.profile.yaml").read_text())["config"]
    config = {k: v for k, v in config.items() if k != "agensh:pair_with"}
    config.update({"agensh:profile": profile, "agensh:internal_subnet": "10.176.242.0/24",
                   "agensh:egress_subnet": "10.176.243.0/24", "agensh:llm_upstream": "http://10.176.243.3:8080",
                   "agensh:data_root": str(tmp_path / "data"), "agensh:keep_pulled_images": True})
    (proj / "stacks" / f"{profile}.profile.yaml").write_text(yaml.safe_dump({"config": config}))
    (tmp_path / "state").mkdir()
    env = dict(os.environ, PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}", PULUMI_CONFIG_PASSPHRASE="base-it",
               LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(args, cwd=proj, env=env, capture_output=True, text=True)
        assert not check or out.returncode == 0, f"{args}: {out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return out

    pulumi = ["pulumi", "--non-interactive", "-s", profile]
    try:
        assert subprocess.run(["bash", str(ROOT / "scripts" / "base_image.sh")], capture_output=True).returncode == 0
        run(sys.executable, "-m", "scripts.demo_images")
        run(sys.executable, "scripts/new_stack.py", profile, "--from", f"stacks/{profile}.profile.yaml", "--env-file", "none")
        run(*pulumi, "up", "--yes", "--skip-preview", "--policy-pack", "policies", "--policy-pack-config",
            "policies/demo.json")
        run_dir = tmp_path / "data" / profile / "20261129t000000z"
        score = json.loads((run_dir / TASK / "score.json").read_text())
        assert score["score"] == 1.0 and score["complete"], score
        stop = json.loads((run_dir / TASK / "receipts" / "shutdown.json").read_text())
        assert stop["archives_complete"] and stop["snapshots"] >= 1
        status = json.loads((run_dir / "status.json").read_text())
        assert [h["state"] for h in status["history"]] == ["running", "stopping", "exported"]
        assert json.loads((run_dir / "provenance.json").read_text())["profile"]["kind"] == "baseline"
        assert "stand-in" in (run_dir / "cc.log").read_text()
        assert json.loads((run_dir / "run_manifest.json").read_text())["completed"] == 1
        assert (run_dir / "result_index.jsonl").exists()
        containers = labelled(profile)["containers"]
        ports = subprocess.run(["docker", "inspect", "-f", "{{json .HostConfig.PortBindings}}", *containers],
                               capture_output=True, text=True).stdout.split()
        assert len(containers) == 4 and all(p in ("{}", "null") for p in ports)  # proxy, model, worker, sidecar
        run(*pulumi, "destroy", "--yes", "--skip-preview")
        assert labelled(profile) == {"containers": [], "networks": [], "volumes": [], "images": []}
    finally:
        run(*pulumi, "destroy", "--yes", "--skip-preview", check=False)
        run(*pulumi, "stack", "rm", "--yes", "--force", check=False)
