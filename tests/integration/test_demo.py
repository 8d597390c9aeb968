"""The demo pipeline through the real engine, in a copy of the project with its own backend and profile:
the policy pack passes it; an `up` killed during the export wait resumes and finishes with score 1.0 without
re-running completed steps; a further `up` changes nothing; destroy leaves nothing labelled behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from scripts.sandbox import free_octet, isolated_env, profile_config, project_copy

ROOT = Path(__file__).resolve().parents[2]
TASK = "testorg__calculator.abc1234"
SLUG = "testorg-calculator-abc1234"


def labelled(profile: str) -> dict[str, list[str]]:
    f = f"label=agensh.profile={profile}"
    kinds = {"containers": ["ps", "-aq"], "networks": ["network", "ls", "-q"], "volumes": ["volume", "ls", "-q"],
             "images": ["images", "-q"]}
    return {k: subprocess.run(["docker", *cmd, "--filter", f], capture_output=True, text=True).stdout.split()
            for k, cmd in kinds.items()}


@pytest.fixture
def demo(tmp_path: Path, pulumi_engine: str):
    """A copy of the project whose stack `demoit` is the demo profile under its own name, octet and data root."""
    profile, octet = f"demoit-{uuid.uuid4().hex[:4]}", free_octet()
    proj = project_copy(tmp_path, profile, profile_config(
        "demo.profile.yaml", profile=profile, subnet_octet=octet, llm_upstream=f"http://10.{octet}.255.3:8080",
        data_root=str(tmp_path / "data"), keep_pulled_images=True))
    env = isolated_env(tmp_path, "demo-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(args, cwd=proj, env=env, capture_output=True, text=True)
        assert not check or out.returncode == 0, f"{args}: {out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return out

    assert subprocess.run(["bash", str(ROOT / "scripts" / "base_image.sh")], capture_output=True).returncode == 0
    run(sys.executable, "-m", "scripts.demo_images")
    run(sys.executable, "scripts/new_stack.py", profile, "--from", f"stacks/{profile}.profile.yaml", "--env-file", "none",
        "--set", "host_units=off")
    yield proj, profile, env, run, tmp_path / "data" / profile
    subprocess.run(["pkill", "-f", str(proj)], capture_output=True)  # step programs left by the killed `up`
    run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile, check=False)
    run("pulumi", "stack", "rm", "--yes", "--force", "--non-interactive", "-s", profile, check=False)
    left = labelled(profile)
    for kind, cmd in (("containers", ["rm", "-f"]), ("networks", ["network", "rm"]), ("volumes", ["volume", "rm"]),
                      ("images", ["rmi", "-f"])):
        if left[kind]:
            subprocess.run(["docker", *cmd, *left[kind]], capture_output=True)


def test_demo_resumes_scores_and_cleans_up(demo):
    proj, profile, env, run, data = demo
    policy = ["--policy-pack", "policies", "--policy-pack-config", "policies/demo.json"]

    def steps_in_state() -> dict[str, tuple[str, str]]:
        """Each step resource in the stack's state, by step name: (its id, when the engine created it)."""
        state = json.loads(run("pulumi", "stack", "export", "--non-interactive", "-s", profile).stdout)
        steps = {}
        for r in state["deployment"].get("resources") or []:
            if r["type"] == "command:local:Command" and "-" in r["urn"]:
                name = r["urn"].rsplit("::", 1)[1].removeprefix("experiment-").removeprefix(f"{SLUG}-")
                steps[name] = (r.get("id"), r.get("created"))
        return steps
    preview = run("pulumi", "preview", "--non-interactive", "-s", profile, *policy)
    assert "agensh@v0.0.1" in preview.stdout and "mandatory" not in preview.stdout

    # First up, killed (whole process group) while the export step waits for the deadline.
    log = open(proj / "up1.log", "w")
    first = subprocess.Popen(["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "-s", profile, *policy],
                             cwd=proj, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    run_dir = data / "20261129t000000z"
    kickoff = run_dir / TASK / "receipts" / "kickoff.json"
    deadline = time.time() + 400
    while not kickoff.exists() and first.poll() is None and time.time() < deadline:
        time.sleep(2)
    assert kickoff.exists(), (proj / "up1.log").read_text()[-3000:]
    time.sleep(10)  # the export step is now waiting for the task's deadline
    assert first.poll() is None and not (run_dir / TASK / "submission.tar.gz").exists()
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    kicked = json.loads(kickoff.read_text())["result"]
    done = steps_in_state()
    assert {"seed", "kickoff", "preflight-host", "manifest-start"} <= set(done), done

    # The next up resumes (after `pulumi cancel` drops the killed run's lock): completed steps stay done (the engine
    # does not create them again), the export waits only for what remains.
    run("pulumi", "cancel", "--yes", "--non-interactive", "-s", profile)
    run("pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "-s", profile, *policy)
    after = steps_in_state()
    for step in ("seed", "kickoff", "preflight-host", "manifest-start"):
        assert after[step] == done[step], step  # the same resource, never created again
    assert json.loads(kickoff.read_text())["result"] == kicked
    score = json.loads((run_dir / TASK / "score.json").read_text())
    assert score["score"] == 1.0 and score["complete"], score
    export = json.loads((run_dir / TASK / "receipts" / "export.json").read_text())["result"]
    assert export["exported_at"] >= kicked["deadline"]
    outputs = json.loads(run("pulumi", "stack", "output", "--json", "--non-interactive", "-s", profile).stdout)
    assert outputs["provenance"]["scores"][TASK]["score"] == 1.0
    assert outputs["provenance"]["manifest"]["requested_task_ids"] == [TASK]
    assert env["LLM_UPSTREAM_TOKEN"] not in json.dumps(outputs)
    stats = subprocess.run(["docker", "exec", f"omcgitea-{profile}-model", "curl", "-s", "http://127.0.0.1:8080/stats"],
                           capture_output=True, text=True).stdout
    assert json.loads(stats)["ok"] >= 3  # preflight and both workers reached the stand-in model through the proxy

    again = run("pulumi", "up", "--yes", "--expect-no-changes", "--non-interactive", "-s", profile, *policy)
    assert "unchanged" in again.stdout

    run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile)
    assert labelled(profile) == {"containers": [], "networks": [], "volumes": [], "images": []}
    assert not data.exists()
