"""The idle watchdog: an idle worker is nudged once after the configured idle time, an active one never."""

from __future__ import annotations

import errno
import json
import subprocess
import threading
import time
import uuid
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from model import steps
from model.records import Receipt, RemindersResult, Wake, WakeResult
from model.rundir import DATA_ROOT_FULL, RunDir
from model.step_inputs import NudgesInputs, RemindersInputs
from scripts import nudges
from scripts.lib import step
from scripts.lib.scoring import problems_of
from scripts.lib.step import now, write_atomic
from scripts.setup.calculator import BASE_IMAGE
from tests.scripts.conftest import kicked_off
from tests.scripts.test_reminders import Mattermost


def test_an_idle_worker_is_nudged_once_an_active_one_never(tmp_path: Path, base_image: str):
    tag = uuid.uuid4().hex[:6]
    active, idle = f"agensh-test-nudge-{tag}-active", f"agensh-test-nudge-{tag}-idle"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mattermost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Mattermost.posts.clear()
    try:
        subprocess.run(
            [
                "docker",
                "run",
                "-d",
                "--name",
                active,
                "--network",
                "none",
                BASE_IMAGE,
                "sh",
                "-c",
                "while true; do echo working; sleep 0.5; done",
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            ["docker", "run", "-d", "--name", idle, "--network", "none", BASE_IMAGE, "sleep", "300"],
            check=True,
            capture_output=True,
        )
        start = time.time()
        rd = RunDir(tmp_path)
        woke = WakeResult(
            ramp_start_epoch=start,
            events=[],
            wakes=[Wake(worker=w, due_epoch=start, at_epoch=start, late_s=0) for w in (active, idle)],
        )
        write_atomic(
            rd.receipt("wake", "t"),
            Receipt[WakeResult](
                step="wake", task_id="t", inputs_digest="x", started=now(), finished=now(), status="ok", result=woke
            ),
        )
        kicked_off(tmp_path, "t", start + 6.5)  # idle 4 s: one nudge at ~4 s, the next could come only at ~8 s
        a = NudgesInputs(
            run_dir=str(tmp_path),
            task_id="t",
            mattermost_url=f"http://127.0.0.1:{server.server_port}",
            mattermost_user="pbench-admin",
            workers={active: "t-1", idle: "t-2"},
            idle_nudge_s=4,
            idle_check_s=1,
        )
        assert nudges.main([], {"AGENSH_INPUT": a.model_dump_json(), "AGENSH_MATTERMOST_PASSWORD": "pw"}) == 0
    finally:
        server.shutdown()
        subprocess.run(["docker", "rm", "-f", active, idle], capture_output=True)
    result = json.loads(rd.receipt("nudges", "t").read_text())["result"]
    assert [n["worker"] for n in result["nudges"]] == [idle]
    assert result["nudges"][0]["idle_s"] >= 4 and result["events"][0] == {
        "kind": "nudge",
        "at": result["nudges"][0]["at_epoch"],
        "end": None,
        "label": "t-2",
        "late_s": None,
    }
    assert len(Mattermost.posts) == 1 and Mattermost.posts[0].startswith("@t-2: no activity from you for")


def test_a_worker_found_stopped_before_the_deadline_is_started_again(tmp_path: Path, base_image: str):
    """After a reboot the refreshed stack holds the worker created stopped, and the finished wake step does not run
    again: the watchdog starts it for the time left, once, and records the restart; a dead platform service too, and
    (a Docker daemon restart stops them all) the worker's router, before the worker."""
    worker = f"agensh-test-nudge-{uuid.uuid4().hex[:6]}-stopped"
    service, router = f"{worker}-gitea", f"{worker}-router"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mattermost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Mattermost.posts.clear()
    try:
        subprocess.run(
            [
                "docker",
                "create",
                "--name",
                worker,
                "--network",
                "none",
                BASE_IMAGE,
                "sh",
                "-c",
                "while true; do echo working; sleep 0.5; done",
            ],
            check=True,
            capture_output=True,
        )
        for name in (service, router):
            subprocess.run(
                ["docker", "create", "--name", name, "--network", "none", BASE_IMAGE, "sleep", "300"],
                check=True,
                capture_output=True,
            )
        start = time.time()
        rd = RunDir(tmp_path)
        woke = WakeResult(
            ramp_start_epoch=start, events=[], wakes=[Wake(worker=worker, due_epoch=start, at_epoch=start, late_s=0)]
        )
        write_atomic(
            rd.receipt("wake", "t"),
            Receipt[WakeResult](
                step="wake", task_id="t", inputs_digest="x", started=now(), finished=now(), status="ok", result=woke
            ),
        )
        kicked_off(tmp_path, "t", start + 4)
        a = NudgesInputs(
            run_dir=str(tmp_path),
            task_id="t",
            mattermost_url=f"http://127.0.0.1:{server.server_port}",
            mattermost_user="pbench-admin",
            workers={worker: "t-1"},
            platform=[service],
            routers={worker: router},
            idle_nudge_s=60,
            idle_check_s=1,
        )
        assert nudges.main([], {"AGENSH_INPUT": a.model_dump_json(), "AGENSH_MATTERMOST_PASSWORD": "pw"}) == 0
        state = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Running}}", worker, service, router], capture_output=True, text=True
        ).stdout.split()
    finally:
        server.shutdown()
        subprocess.run(["docker", "rm", "-f", worker, service, router], capture_output=True)
    result = json.loads(rd.receipt("nudges", "t").read_text())["result"]
    assert state == ["true"] * 3 and [r["worker"] for r in result["restarts"]] == [service, router, worker]
    assert [e["kind"] for e in result["events"]] == ["restart"] * 3 and Mattermost.posts == []


def test_a_data_root_running_low_is_said_once_per_spell(tmp_path: Path, monkeypatch, capsys):
    """Below the threshold the console says so and the timeline gets one event; again only after a spell with room."""
    free = iter([10**10, 10**8, 10**8, 10**10, 10**8])
    monkeypatch.setattr(nudges.shutil, "disk_usage", lambda path: type("Usage", (), {"free": next(free)})())
    events: list = []
    low = False
    rd = RunDir(tmp_path)
    for at in range(5):
        low = nudges.low_space(rd, "t", low, float(at), events)
    assert [(e.kind, e.at, e.label) for e in events] == [
        ("data_root_low", 1.0, "100 MB free"),
        ("data_root_low", 4.0, "100 MB free"),
    ]
    said = capsys.readouterr().err
    assert said.count("WARNING: the data root") == 2 and "make room now" in said
    assert rd.markers("t") == []  # low is not full: nothing is marked


def test_a_full_data_root_marks_the_task_once_and_it_scores_incomplete(tmp_path: Path, monkeypatch, capsys):
    """Full while the team works, the task is marked DATA_ROOT_FULL (once, with why) and the completeness rule counts
    it incomplete; the marker survives the watchdog's own successful retry."""
    free = iter([10**8, 2**20, 0, 10**8])
    monkeypatch.setattr(nudges.shutil, "disk_usage", lambda path: type("Usage", (), {"free": next(free)})())
    rd, events, low = RunDir(tmp_path), [], False
    for at in range(4):
        low = nudges.low_space(rd, "t", low, float(at), events)
    assert [(e.kind, e.at) for e in events] == [("data_root_low", 0.0), ("data_root_full", 1.0)]
    assert rd.markers("t") == [DATA_ROOT_FULL]
    assert "while the team worked: it could not push" in rd.marker("t", DATA_ROOT_FULL).read_text()
    said = capsys.readouterr().err
    assert said.count(f"is marked {DATA_ROOT_FULL}") == 1 and "`pulumi cancel` and the same `make up`" in said
    assert f"{DATA_ROOT_FULL} marker present" in problems_of(rd, "t", None)


def test_a_full_data_root_with_no_room_for_the_reason_still_marks(tmp_path: Path, monkeypatch):
    """When not even the marker's text fits, its empty file still stands against the score."""
    monkeypatch.setattr(step, "write_marker", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left")))
    rd = RunDir(tmp_path)
    (tmp_path / "t").mkdir()
    nudges.mark_full(rd, "t", 0, 1.0, [])
    assert rd.markers("t") == [DATA_ROOT_FULL] and rd.marker("t", DATA_ROOT_FULL).read_text() == ""


def test_a_step_that_finds_the_data_root_full_while_the_team_works_marks_the_task(tmp_path: Path, monkeypatch):
    """The watchdog is not the only one to see a full data root: a step failing for want of room while the team works
    (its `up` then fails and takes the watchdog down with it) marks the task, whether its work or its own receipt met
    the full disk, and a later successful run of that step does not withdraw the marker. After the deadline the same
    failure marks nothing (archiving or copying resumes once there is room) and is recorded as any failure is."""
    rd = RunDir(tmp_path)
    inputs = RemindersInputs(run_dir=str(tmp_path), task_id="t", mattermost_url="", mattermost_user="u", minutes=[])

    def no_room() -> RemindersResult:
        raise OSError(errno.ENOSPC, "No space left on device")

    def reminders(task: str, body) -> int:
        return step.run_step(steps.REMINDERS, rd, task, inputs, body)

    def posted() -> RemindersResult:
        return RemindersResult(posted=[], skipped=[], deadline="")

    for task in ("t", "w", "late"):
        kicked_off(tmp_path, task, time.time() + (-1 if task == "late" else 60))
    assert reminders("t", no_room) == 1  # its work met the full disk; the failure is recorded
    assert rd.markers("t") == [DATA_ROOT_FULL]
    assert "while the team worked (reminders step): it could not push" in rd.marker("t", DATA_ROOT_FULL).read_text()
    assert reminders("t", posted) == 0 and rd.markers("t") == [DATA_ROOT_FULL]  # room again: the mark stays

    with monkeypatch.context() as m:  # the receipt itself finds no room
        m.setattr(step, "write_atomic", lambda *a, **k: no_room())
        with pytest.raises(OSError):
            reminders("w", posted)
    assert rd.markers("w") == [DATA_ROOT_FULL]

    assert reminders("late", no_room) == 1 and rd.markers("late") == []
    receipt = json.loads(rd.receipt("reminders", "late").read_text())
    assert receipt["status"] == "failed" and "No space left" in receipt["error"]
