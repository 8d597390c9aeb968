"""The demo's task as a standalone baseline through the real engine (the real Copilot CLI in an ACP session, driven
by the scripted stand-in model), scored by the real evaluator; records written; destroy leaves nothing labelled
behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from scripts.lab.sandbox import free_octet, isolated_env, profile_config, project_copy
from scripts.setup import demo_images
from tests.integration.test_demo import labelled

TASK = "testorg__calculator.abc1234"


@pytest.mark.slow(175)
def test_baseline_runs_scores_and_cleans_up(tmp_path: Path, pulumi_engine: str, base_image: str):
    profile, octet = f"baseit-{uuid.uuid4().hex[:4]}", free_octet()
    standin = demo_images.standin_images(profile)  # private tags, as in test_demo: no other run's images touched
    proj = project_copy(
        tmp_path,
        profile,
        profile_config(
            "demo-baseline.profile.yaml",
            profile=profile,
            pair_with=None,
            internal_subnet=f"10.{octet}.242.0/24",
            egress_subnet=f"10.{octet}.243.0/24",
            llm_upstream=f"http://10.{octet}.243.3:8080",
            data_root=str(tmp_path / "data"),
            traj_root=str(tmp_path / "traj"),
            uncached=True,
            # 90 s, not the profile's 180: the scripted agent has written its solution within seconds and only idles
            # after, and the 30 s snapshots still come (three); the same run, 90 s less waiting for the deadline
            hours=0.025,
            deadline_seconds=90,
        ),
        standin_image=standin[0],
    )
    env = isolated_env(tmp_path, "base-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(args, cwd=proj, env=env, capture_output=True, text=True)
        assert not check or out.returncode == 0, f"{args}: {out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return out

    pulumi = ["pulumi", "--non-interactive", "-s", profile]
    try:
        run(sys.executable, "-m", "scripts.setup.demo_images", "--standin-tag", profile)
        shutil.copy(proj / "policies" / "demo.json", proj / "stacks" / f"{profile}.policy.json")
        run(
            sys.executable,
            "-m",
            "scripts.cli",
            "new-stack",
            profile,
            "--from",
            f"stacks/{profile}.profile.yaml",
            "--env-file",
            "none",
        )
        run(
            *pulumi, "up", "--yes", "--policy-pack", "policies", "--policy-pack-config", f"stacks/{profile}.policy.json"
        )
        run_dir = tmp_path / "data" / profile / "20261129t000000z"
        score = json.loads((run_dir / TASK / "score.json").read_text())
        assert score["score"] == 1.0 and score["complete"], score
        stop = json.loads((run_dir / TASK / "receipts" / "shutdown.json").read_text())["result"]
        assert stop["archives_complete"] and stop["snapshots"] >= 1
        status = json.loads((run_dir / "status.json").read_text())
        assert [h["state"] for h in status["history"]] == ["running", "stopping", "exported"]
        assert json.loads((run_dir / "provenance.json").read_text())["profile"]["kind"] == "baseline"
        # the native activity log: the session's turns, resumed at once after each completed one
        session = stop["sessions"][next(iter(stop["archives"]))]
        assert session["copilot_version"] == "1.0.78" and session["turns"] >= 2 and session["tool_calls"] >= 2
        assert session["watchdog"] == 0 and session["errors"] == 0
        assert '"kind": "turn_end"' in (run_dir / "cc.log").read_text()
        assert status["copilot_version"] == "1.0.78"
        assert json.loads((run_dir / "run_manifest.json").read_text())["completed"] == 1
        assert (run_dir / "result_index.jsonl").exists()
        containers = labelled(profile)["containers"]
        ports = subprocess.run(
            ["docker", "inspect", "-f", "{{json .HostConfig.PortBindings}}", *containers],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert len(containers) == 4 and all(p in ("{}", "null") for p in ports)  # proxy, model, worker, sidecar
        run(*pulumi, "destroy", "--yes", "--skip-preview")
        assert labelled(profile) == {"containers": [], "networks": [], "volumes": [], "images": []}
    finally:
        run(*pulumi, "destroy", "--yes", "--skip-preview", check=False)
        run(*pulumi, "stack", "rm", "--yes", "--force", check=False)
        subprocess.run(["docker", "rmi", *standin], capture_output=True)
