"""status reads a run's phase from its receipts, without any secret: seeding, ramp k of N, waiting for kickoff,
working with the time to the deadline going down, archiving, evaluating, scored."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from model.profile import parse_profile
from model.records import (
    ExportResult,
    KickoffResult,
    Receipt,
    Record,
    Score,
    SeedResult,
    ShutdownResult,
    Wake,
    WakeResult,
)
from model.rundir import RunDir
from scripts.cli import status
from scripts.lib import launcher
from scripts.lib.step import iso, now, write_atomic

TASK = "testorg__calculator.abc1234"


def receipt(rd: RunDir, step: str, result: Record) -> None:
    write_atomic(
        rd.receipt(step, TASK),
        Receipt[type(result)](
            step=step, task_id=TASK, inputs_digest="x", started=now(), finished=now(), status="ok", result=result
        ),
    )


def test_phases_follow_the_receipts(tmp_path: Path):
    p = parse_profile(
        {
            "profile": "st",
            "run_id": "20261129t000000z",
            "tasks": [TASK],
            "workers": 2,
            "llm_upstream": "http://m.example",
            "agensh_checkout": "/x",
            "data_root": str(tmp_path),
            "traj_root": str(tmp_path / "traj"),
            "wake_stagger_s": 5,
            "bringup_settle_s": 5,
        }
    )
    rd = RunDir.of(p)

    def seen() -> status.TaskView:
        return status.snapshot("st", p).tasks[0]

    assert seen().phase == "waiting" and "no run directory" in status.snapshot("st", p).cannot_see[0]
    receipt(rd, "seed", SeedResult(repo="team/x", commit="c", seeded="now"))
    write_atomic(rd.ramp(TASK), {"ramp_start": time.time(), "woken": {"w1": time.time()}})
    assert (seen().phase, seen().detail) == ("ramp", "1 of 2 woken")
    start = time.time()
    receipt(
        rd,
        "wake",
        WakeResult(
            ramp_start_epoch=start, events=[], wakes=[Wake(worker="w1", due_epoch=start, at_epoch=start, late_s=0)]
        ),
    )
    assert seen().phase == "waiting for kickoff" and "kickoff at" in seen().detail
    receipt(
        rd,
        "kickoff",
        KickoffResult(
            ramp_start=iso(start),
            ramp_start_epoch=start,
            kickoff_at=now(),
            deadline=iso(start + 30),
            deadline_epoch=start + 30,
            post_id="p",
        ),
    )
    first = seen()
    time.sleep(1.1)
    later = seen()
    assert first.phase == later.phase == "working" and later.time_to_deadline_s < first.time_to_deadline_s
    assert later.repo.head is None and "no repository" in (later.repo.note or "")
    receipt(rd, "export", ExportResult(submission="s", commit="c", files=1, exported_at=now()))
    assert seen().phase == "archiving"
    receipt(rd, "shutdown", ShutdownResult(archives={}, archives_complete=True))
    assert seen().phase == "evaluating"
    receipt(rd, "score", Score(task_id=TASK, score=1.0, raw_score=1.0, complete=True, problems=[], eval_json="e"))
    view = status.snapshot("st", p)
    assert (view.tasks[0].phase, view.tasks[0].score) == ("scored", 1.0)
    assert json.loads(view.model_dump_json())["tasks"][0]["phase"] == "scored"


def test_any_failed_step_shows(tmp_path: Path):
    """Not only the main line's steps: a failed idle-nudge step (beside the export) shows with its error."""
    p = parse_profile(
        {
            "profile": "st",
            "run_id": "20261129t000000z",
            "tasks": [TASK],
            "workers": 2,
            "llm_upstream": "http://m.example",
            "agensh_checkout": "/x",
            "data_root": str(tmp_path),
            "traj_root": str(tmp_path / "traj"),
        }
    )
    rd = RunDir.of(p)
    receipt(rd, "seed", SeedResult(repo="team/x", commit="c", seeded="now"))
    write_atomic(
        rd.receipt("nudges", TASK),
        Receipt[Record](
            step="nudges",
            task_id=TASK,
            inputs_digest="x",
            started=now(),
            finished=now(),
            status="failed",
            error="Mattermost refused the post",
        ),
    )
    view = status.snapshot("st", p).tasks[0]
    assert (view.phase, view.detail) == ("failed", "nudges failed: Mattermost refused the post")


def test_the_launcher_shows_from_its_lock(tmp_path: Path):
    """status's view of the launcher: its record's fields, whether it or its update holds the lock, whether it lives."""
    rd = RunDir(tmp_path)
    assert status.launch_view(rd) is None
    record = launcher.Record(
        stack="cohort-w8", pid=os.getpid(), how="session", host=socket.gethostname(), started=now(), log="/x/launch.log"
    )
    with open(rd.launcher, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        launcher.write(fh, record)
        held = status.launch_view(rd)
    assert held == status.LaunchView(
        running=True,
        launcher_alive=True,
        how="session",
        pid=os.getpid(),
        unit=None,
        started=record.started,
        log="/x/launch.log",
        ended=None,
        exit=None,
    )
    with open(rd.launcher, "a+") as fh:
        launcher.write(fh, dataclasses.replace(record, ended=now(), exit=3))
    ended = status.launch_view(rd)
    assert ended is not None and not ended.running and not ended.launcher_alive and ended.exit == 3
