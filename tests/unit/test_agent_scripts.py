"""The scripted model's plans (demo/checkout/standin/agent_scripts.py) and the activity summary
(scripts/lib/activity.py), on conversations shaped as the Copilot CLI sends them (its Responses `input`)."""

from __future__ import annotations

import agent_scripts  # demo/checkout/standin, on pytest's path (pyproject.toml)

from model.checkout import DEMO_LOG
from scripts.lib import activity

AGENT = "testorg__calculator.abc1234"
CONTINUE = "Continue with the task: read the team chat."
KICKOFF = "# Kickoff: testorg__calculator.abc1234\n\nYou are one worker of a team."


def user(text: str) -> dict:
    return {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": f"<current_datetime>now</current_datetime>\n\n{text}"}],
    }


def result(output: str) -> list[dict]:
    return [
        {"type": "function_call", "name": "bash", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": output},
    ]


def conversation(n: int, *turns: tuple[str, list[str]]) -> dict:
    items: list[dict] = [{"type": "message", "role": "system", "content": [{"type": "input_text", "text": "sys"}]}]
    for k, (prompt, outputs) in enumerate(turns):
        items.append(user((f"You are agent {AGENT}-{n} (user x).\n\n" if k == 0 else "") + prompt))
        for out in outputs:
            items += result(out)
    return {"input": items}


def test_a_kickoff_looks_around_first_then_follows_the_plan_its_output_picks():
    agent, step = agent_scripts.next_item(conversation(1, (KICKOFF, [])), 10)
    assert agent == f"{AGENT}-1" and step == agent_scripts.LOOK
    titles = []
    looked = "baseline=0 workers=2\n10000\n/workspace"
    outputs = [looked]
    while isinstance(step := agent_scripts.next_item(conversation(1, (KICKOFF, outputs)), 10)[1], agent_scripts.Step):
        titles.append(step.description)
        outputs.append("ok")
    assert titles == [
        "Fetch my Gitea token and set up Git",
        "Clone the task repository from Gitea",
        "Write the solution",
        "Commit and push my branch",
        "Open and merge a pull request",
        "Compare with the reference binary",
    ]
    assert step == agent_scripts.FINAL["kickoff"]


def test_peers_note_claim_post_and_agent_2_tries_main_while_a_baseline_only_writes_its_solution():
    def plan(n: int, looked: str) -> list[str]:
        return [s.description for s in agent_scripts.plan("kickoff", f"{AGENT}-{n}", n, looked, 10)]

    assert plan(2, "baseline=0 workers=3")[-4:] == [
        "Commit a note on my branch",
        "Claim on the board",
        "Tell the team",
        "Try a direct push to main",
    ]
    assert "Try a direct push to main" not in plan(3, "baseline=0 workers=3")
    assert plan(1, "baseline=0 workers=1")[-1] == "Try a direct push to main"  # a lone solver tries it itself
    assert plan(1, "baseline=1 workers=1") == ["Look around", "Write the solution into my workspace"]
    assert "calculator.sh" in agent_scripts.BASELINE[0].command


def test_later_turns_continue_or_answer_a_nudge_or_a_reminder():
    first = (KICKOFF, ["baseline=0 workers=2", "ok"])
    _, step = agent_scripts.next_item(conversation(2, first, (CONTINUE, [])), 7)
    assert isinstance(step, agent_scripts.Step) and step.command.startswith("sleep 7;")
    _, done = agent_scripts.next_item(conversation(2, first, (CONTINUE, ["nothing new"])), 7)
    assert done == agent_scripts.FINAL["continue"]
    nudge = f"@{AGENT}-2: no activity from you for 10 min. Pick up a claim."
    assert agent_scripts.next_item(conversation(2, first, (nudge, [])), 7)[1] == agent_scripts.FINAL["nudge"]
    assert (
        agent_scripts.next_item(conversation(2, first, ("Reminder: 10 minutes left", [])), 7)[1]
        == agent_scripts.FINAL["reminder"]
    )
    assert agent_scripts.next_item({"input": "hi"}, 7) == ("unknown", agent_scripts.FINAL["other"])


def test_a_session_is_summarised_from_its_activity_events():
    events = [
        {"kind": "session", "copilot_version": "1.0.78", "at": "t0"},
        {"kind": "prompt", "at": "t1"},
        {"kind": "tool_call", "at": "t2"},
        {"kind": "tool_call", "at": "t3"},
        {"kind": "watchdog", "at": "t4"},
        {"kind": "prompt", "at": "t5"},
        {"kind": "prompt_error", "at": "t6"},
        {"kind": "turn_end", "at": "t7"},
    ]
    s = activity.session(DEMO_LOG, events)
    assert (s.copilot_version, s.prompts, s.turns, s.tool_calls, s.watchdog, s.errors) == ("1.0.78", 2, 1, 2, 1, 1)
    assert (s.first_at, s.last_at) == ("t0", "t7")
    assert activity.session(DEMO_LOG, []).copilot_version is None
