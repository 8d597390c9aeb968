"""The activity readers (scripts/lib/activity.py), one per report of the checkout contract, on lines shaped as each
test checkout's driver writes them, hostile ones among them; the profile's and the steps' choice of a convention."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from model.checkout import CC_LOG, CONVENTIONS, DEMO_LOG
from model.profile import ProfileError, parse_profile
from model.step_inputs import KickoffInputs, ShutdownInputs
from scripts.lib import activity
from tests.unit.test_placement import swarm
from tests.unit.test_profile import raw

PIN = "1.0.78"


def demo_line(kind: str, at: str, **fields: object) -> str:
    """As the demo's ACP driver prints it (acp_driver.py `record`)."""
    return "activity " + json.dumps({"at": at, "agent": "t-1", "kind": kind, **fields}, sort_keys=True)


def cc_line(kind: str, ts: str, **fields: object) -> str:
    """As the cc-log test checkout's driver writes it to cc.log (tests/checkouts/cc_log/agent/cc_driver.py)."""
    return json.dumps({"ts": ts, "agent": "t-1", "type": kind, **fields}, sort_keys=True)


HOSTILE = [
    "",
    "activity ",
    "activity {not json",
    'activity ["a", "list"]',
    'activity {"kind": 7, "at": "x"}',
    'activity {"at": "no kind"}',
    "{" + '"kind": "prompt", "type": "user_prompt", "pad": "' + "x" * activity.MAX_LINE + '"}',
    "activity " + "\x00\x1b[2J",
    "acp-driver: chat unreachable: timed out",
    '{"type": "user_prompt", "ts": 5',
]


def test_demo_log_reads_its_lines_and_skips_the_rest():
    text = "\n".join(
        [
            "acp-driver: t-1 (uid 10000), team worker; silence watchdog 1200 s",
            demo_line("session", "2026-12-04T06:00:00.000Z", copilot_version=PIN, session_id="s", loaded=False),
            *HOSTILE,
            demo_line("prompt", "2026-12-04T06:00:01.000Z", why="chat", text="go"),
            demo_line("tool_call", "2026-12-04T06:00:02.000Z", title="bash"),
            demo_line("tool_result", "2026-12-04T06:00:03.000Z", status="completed"),
            demo_line("a_kind_no_one_knows", "2026-12-04T06:00:04.000Z"),
            demo_line("turn_end", "2026-12-04T06:00:05.000Z", stop_reason="end_turn"),
            cc_line("user_prompt", "2026-12-04T06:00:06.000Z"),  # the other report's line is not this one's
        ]
    )
    read = activity.reader("demo")
    events = read.parse(text)
    assert [e["kind"] for e in events] == [
        "session",
        "prompt",
        "tool_call",
        "tool_result",
        "a_kind_no_one_knows",
        "turn_end",
    ]
    s = read.session(events)
    assert (s.copilot_version, s.prompts, s.tool_calls, s.turns, s.watchdog, s.errors) == (PIN, 1, 1, 1, 0, 0)
    assert (s.first_at, s.last_at) == ("2026-12-04T06:00:00.000Z", "2026-12-04T06:00:05.000Z")


def test_cc_log_reads_its_lines_and_skips_the_rest():
    text = "\n".join(
        [
            cc_line("session_start", "2026-12-04T06:00:00.000Z", cli_version=PIN, session_id="s", loaded=False),
            *HOSTILE,
            cc_line("user_prompt", "2026-12-04T06:00:01.000Z", why="chat"),
            cc_line("tool_use", "2026-12-04T06:00:02.000Z", title="bash"),
            cc_line("tool_use", "2026-12-04T06:00:03.000Z", title="bash"),
            cc_line("watchdog", "2026-12-04T06:00:04.000Z", silent_s=1200),
            cc_line("error", "2026-12-04T06:00:05.000Z", error="503"),
            cc_line("turn_complete", "2026-12-04T06:00:06.000Z"),
            cc_line("something_new", "2026-12-04T06:00:07.000Z"),
            demo_line("prompt", "2026-12-04T06:00:08.000Z"),  # a demo-log line is no cc.log event
        ]
    )
    read = activity.reader("cc-log")
    events = read.parse(text)
    assert [e["type"] for e in events][:2] == ["session_start", "user_prompt"] and len(events) == 8
    s = read.session(events)
    assert (s.copilot_version, s.prompts, s.tool_calls, s.watchdog, s.errors, s.turns) == (PIN, 1, 2, 1, 1, 1)
    assert s.last_at == "2026-12-04T06:00:07.000Z"


def test_a_session_without_a_version_or_events_reports_none():
    for conv in CONVENTIONS.values():
        read = activity.reader(conv.name)
        assert read.session([]).copilot_version is None
        report = conv.report
        event = {report.kind: report.version_event, report.at: "t", report.version_field: ""}
        assert read.session([event]).copilot_version is None


def test_each_convention_has_its_reader():
    assert activity.reader("demo").report is DEMO_LOG and isinstance(activity.reader("demo"), activity.LogReader)
    cc = activity.reader("cc-log")
    assert isinstance(cc, activity.FileReader) and cc.file == CC_LOG.file == "/home/agent/.agensh/cc.log"


def test_the_profile_names_a_known_convention():
    assert parse_profile(raw()).checkout_convention == "demo"
    assert parse_profile(raw(checkout_convention="cc-log")).checkout_convention == "cc-log"
    with pytest.raises(ProfileError) as err:
        parse_profile(raw(checkout_convention="cclog"))
    ((key, msg),) = err.value.problems
    assert (
        key == "checkout_convention" and "unknown checkout convention 'cclog'; the contract knows cc-log, demo" in msg
    )


def test_a_file_report_is_refused_on_a_swarm():
    assert parse_profile(swarm(8, 2)).checkout_convention == "demo"
    with pytest.raises(ProfileError) as err:
        parse_profile(swarm(8, 2) | {"checkout_convention": "cc-log"})
    assert ("checkout_convention", "cc-log: its activity report is a file") in [
        (k, m.split(" the project")[0]) for k, m in err.value.problems
    ]


def test_the_steps_inputs_take_only_a_known_convention():
    base = {"run_dir": "/r", "task_id": "t", "grace_s": 1, "workers": {}, "routers": []}
    assert ShutdownInputs(**base).convention == "demo"
    assert ShutdownInputs(**base, convention="cc-log").convention == "cc-log"
    with pytest.raises(ValidationError, match="unknown checkout convention 'x'"):
        KickoffInputs(
            run_dir="/r",
            task_id="t",
            mattermost_url="u",
            mattermost_user="a",
            prompt="p",
            budget_s=1,
            kickoff_s=1,
            workers={},
            copilot_version=PIN,
            convention="x",
        )
