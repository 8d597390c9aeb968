"""The second test checkout (tests/checkouts, cc-log: its sessions' events in a cc.log file in each worker's HOME, the
silence watchdog in its router, another self-check) runs the demo's task through the whole pipeline, through the
real engine, and scores 1.0: the kickoff, `status`, the shutdown and the report read its sessions through the
profile's convention, never through the demo's log lines; its preflight ran its own self-check; a model request
made to hang is cancelled by the router's watchdog and the work goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from model import contract
from model.checkout import CONVENTIONS
from model.project import DEMO_CHECKOUT
from model.rundir import ProfileDir
from scripts.lab.sandbox import kill_session
from tests.checkouts import cc_log
from tests.integration.test_demo import TASK, Sandbox, demo_sandbox, worker_logs

CONVENTION = CONVENTIONS["cc-log"]
STUCK_MS = 15_000  # the routers' silence limit: a hung model request of agent 1 is cancelled after it


@pytest.fixture
def cc(tmp_path: Path, pulumi_engine: str, base_image: str):
    with demo_sandbox(
        tmp_path,
        "ccit",
        lambda proj: cc_log(proj / "demo" / "cc-log", proj / DEMO_CHECKOUT),
        agensh_checkout="demo/cc-log",
        checkout_convention="cc-log",
        mini_router_stuck_ms=STUCK_MS,
    ) as sandbox:
        yield sandbox


def test_the_cc_log_checkout_scores_1_through_the_whole_pipeline(cc: Sandbox):
    proj, profile, env, run, data, traj, _ = cc
    t0 = time.monotonic()
    log = open(proj / "up.log", "w")
    up = subprocess.Popen(
        ["pulumi", "up", "--yes", "--non-interactive", "-s", profile, "--policy-pack", "policies"]
        + ["--policy-pack-config", f"stacks/{profile}.policy.json"],
        cwd=proj,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    run_dir = data / "20261129t000000z"
    receipts = run_dir / TASK / "receipts"
    try:
        while not (receipts / "kickoff.json").exists() and up.poll() is None and time.monotonic() - t0 < 600:
            time.sleep(1)
        assert (receipts / "kickoff.json").exists(), (proj / "up.log").read_text()[-3000:]
        hang = subprocess.run(  # agent 1's next model request hangs (the stand-in model's fault, for an hour)
            ["docker", "exec", contract.resource_name(profile, "model"), "curl", "-s", "-X", "POST"]
            + ["-H", f"Authorization: Bearer {env['LLM_UPSTREAM_TOKEN']}", "-d", '{"faults": ["hang@1"]}']
            + ["http://127.0.0.1:8080/faults"],
            capture_output=True,
            text=True,
        )
        assert '"pending": ["hang@1"]' in hang.stdout, hang
        # while the team works, `status` reads each session from its cc.log
        view = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)["tasks"][0]
        assert [w["session"]["copilot_version"] for w in view["workers"]] == [contract.OFFLINE_ACP_COPILOT_VERSION] * 2
        assert all(w["last_activity"] for w in view["workers"]), view
        assert up.wait(timeout=900) == 0, (proj / "up.log").read_text()[-3000:]
    finally:
        kill_session(up)
    print(f"cc-log checkout: up to the score in {time.monotonic() - t0:.0f} s")

    score = json.loads((run_dir / TASK / "score.json").read_text())
    assert score["score"] == 1.0 and score["complete"], (score, worker_logs(profile))
    preflight = json.loads((run_dir / "receipts" / "preflight-host.json").read_text())["result"]["checks"]
    assert "with the cc-log convention" in preflight["checkout"]["detail"]
    assert CONVENTION.selfcheck.line in preflight["workers"]["detail"]
    kicked = json.loads((receipts / "kickoff.json").read_text())["result"]["sessions"]
    assert sorted(kicked.values()) == [contract.OFFLINE_ACP_COPILOT_VERSION] * 2
    sessions = json.loads((receipts / "shutdown.json").read_text())["result"]["sessions"]
    assert len(sessions) == 2 and all(s["turns"] >= 1 and s["tool_calls"] >= 5 for s in sessions.values()), sessions

    # the events the shutdown kept are the checkout's own (cc.log's shape); no worker wrote a demo-log line
    for agent in kicked:
        kept = ProfileDir(data).archive_dir(agent, "20261129t000000z") / "activity.jsonl"
        events = [json.loads(line) for line in kept.read_text().splitlines()]
        assert events[0]["type"] == CONVENTION.report.version_event and "kind" not in events[0], events[0]
    assert "activity {" not in worker_logs(profile)
    # the hung request: agent 1's router said it was stuck, its driver cancelled it and went on (the score above)
    router = subprocess.run(
        ["docker", "logs", contract.member_name(profile, TASK, "router", 1)], capture_output=True, text=True
    ).stdout
    assert f"mini-router: ACP silence watchdog MINI_ROUTER_STUCK_MS={STUCK_MS}" in router
    decided = router.count(f"mini-router: watchdog: {TASK}-1 silent")  # each cancel was the router's answer
    assert decided >= 1 and "cancel its prompt" in router, router
    assert sessions[contract.member_name(profile, TASK, "worker", 1)]["watchdog"] == decided, (sessions, router)

    outputs = json.loads(run("pulumi", "stack", "output", "--json", "--non-interactive", "-s", profile).stdout)
    assert outputs["provenance"]["scores"][TASK]["score"] == 1.0
    assert Path(outputs["report"]).read_text().count('data-field="turns"') == 2
