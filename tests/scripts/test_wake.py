"""The wake step makes the ramp: workers created stopped are started at their offsets, each wake recorded with how
late it was; a resumed ramp keeps its clock and reports lateness instead of hiding it."""

from __future__ import annotations

import contextlib
import http.server
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from model.rundir import RunDir
from model.step_inputs import WakeInputs
from scripts import wake
from scripts.lib.step import write_atomic
from scripts.setup.calculator import BASE_IMAGE


@pytest.fixture
def stopped_workers(base_image: str):
    """Three containers created, not started (as the team's workers are)."""
    tag = uuid.uuid4().hex[:6]
    names = [f"agensh-test-wake-{tag}-{n}" for n in (1, 2, 3)]
    for name in names:
        subprocess.run(
            [
                "docker",
                "create",
                "--name",
                name,
                "--network",
                "none",
                "--label",
                f"agensh.test=wake-{tag}",
                BASE_IMAGE,
                "sleep",
                "300",
            ],
            check=True,
            capture_output=True,
        )
    yield names
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True)


def started_at(name: str) -> float:
    out = subprocess.run(["docker", "inspect", "-f", "{{.State.StartedAt}}", name], capture_output=True, text=True)
    from datetime import datetime

    return datetime.fromisoformat(out.stdout.strip()[:26] + "+00:00").timestamp()


def test_workers_are_started_at_their_offsets(stopped_workers, tmp_path: Path):
    a = WakeInputs(run_dir=str(tmp_path), task_id="t", workers=dict(zip(stopped_workers, (0.0, 2.0, 4.0))))
    t0 = time.time()
    assert wake.main([], {"AGENSH_INPUT": a.model_dump_json()}) == 0
    result = json.loads(RunDir(tmp_path).receipt("wake", "t").read_text())["result"]
    start = result["ramp_start_epoch"]
    assert t0 <= start <= t0 + 2
    for w, offset in zip(result["wakes"], (0, 2, 4)):
        assert w["due_epoch"] == start + offset and w["late_s"] == round(max(0.0, w["at_epoch"] - w["due_epoch"]), 1)
        # never started early (docker's own clock agrees), whatever the load makes of `docker start`'s latency
        assert w["due_epoch"] - 0.5 <= started_at(w["worker"]) <= w["at_epoch"] + 0.5
    ats = [w["at_epoch"] for w in result["wakes"]]
    assert ats == sorted(ats)
    assert [e["label"] for e in result["events"]] == ["worker 1", "worker 2", "worker 3"]
    assert all(e["kind"] == "wake" for e in result["events"])


def test_a_resumed_ramp_keeps_its_clock_and_reports_late_wakes(stopped_workers, tmp_path: Path):
    rd = RunDir(tmp_path)
    start = time.time() - 10  # the interrupted ramp began 10 s ago and woke worker 1
    subprocess.run(["docker", "start", stopped_workers[0]], check=True, capture_output=True)
    write_atomic(rd.ramp("t"), {"ramp_start": start, "woken": {stopped_workers[0]: start}})
    a = WakeInputs(run_dir=str(tmp_path), task_id="t", workers=dict(zip(stopped_workers, (0.0, 2.0, 12.0))))
    t0 = time.time()
    assert wake.main([], {"AGENSH_INPUT": a.model_dump_json()}) == 0
    wakes = json.loads(rd.receipt("wake", "t").read_text())["result"]["wakes"]
    assert wakes[0]["already_awake"] and wakes[0]["at_epoch"] == start
    assert wakes[1]["late_s"] >= 7.5 and wakes[1]["at_epoch"] >= t0  # due 8 s ago: started now, reported late
    assert started_at(wakes[2]["worker"]) >= start + 12 - 0.5  # still ahead: it waited for its time
    assert json.loads(rd.ramp("t").read_text())["ramp_start"] == start


@contextlib.contextmanager
def router_answering_after(seconds: float) -> Iterator[str]:
    """A stand-in router's health endpoint on loopback: 503 until `seconds` have passed, then 200."""
    up_at = time.monotonic() + seconds

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if time.monotonic() >= up_at else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/healthz"
    finally:
        server.shutdown()
        server.server_close()


def test_a_worker_starts_only_once_its_router_answers(stopped_workers, tmp_path: Path):
    worker = stopped_workers[0]
    with router_answering_after(3.0) as url:
        a = WakeInputs(run_dir=str(tmp_path), task_id="t", workers={worker: 0.0}, ready={worker: url})
        t0 = time.time()
        assert wake.main([], {"AGENSH_INPUT": a.model_dump_json()}) == 0
    assert started_at(worker) >= t0 + 3.0 - 0.5  # not before the router said it was up


def test_a_router_that_never_answers_fails_the_wake_clearly(stopped_workers, tmp_path: Path):
    worker = stopped_workers[0]
    with router_answering_after(3600) as url:
        a = WakeInputs(
            run_dir=str(tmp_path), task_id="t", workers={worker: 0.0}, ready={worker: url}, ready_timeout_s=2
        )
        assert wake.main([], {"AGENSH_INPUT": a.model_dump_json()}) != 0
    receipt = json.loads(RunDir(tmp_path).receipt("wake", "t").read_text())
    assert receipt["status"] == "failed"
    assert f"worker 1's router did not answer at {url} within 2 s" in receipt["error"]
    out = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", worker], capture_output=True, text=True)
    assert out.stdout.strip() == "false"  # the worker was not started without its router


def test_a_stopped_router_is_started_before_its_worker(stopped_workers, tmp_path: Path):
    """A router is not recreated once stopped (it is stopped on purpose at shutdown): after `make down` and `pulumi up
    --refresh` the wake step itself starts it, before it waits for it and starts the worker."""
    worker, router = stopped_workers[:2]
    a = WakeInputs(run_dir=str(tmp_path), task_id="t", workers={worker: 0.0}, routers={worker: router})
    assert wake.main([], {"AGENSH_INPUT": a.model_dump_json()}) == 0
    assert started_at(router) <= started_at(worker)
