"""migrate-steps' rewrite of an exported state (scripts/cli/migrate_steps.py): every step command of before becomes the
step's command of today, and every retired input field leaves the step's inputs, in the inputs and the outputs;
nothing else changes, and a second pass finds nothing. (With the real engine: tests/integration/test_step_migration.py.)
"""

from __future__ import annotations

import copy
import json
from typing import Any

from model import steps
from model.rundir import RunDir
from model.step_inputs import KickoffInputs, WakeInputs
from scripts.cli.migrate_steps import COMMAND_TYPE, LEGACY, RETIRED_INPUTS, Redigest, current, redigest, rewrite
from scripts.lib.step import digest, write_atomic

OLD_PYTHON = "/old/checkout/.venv/bin/python"
SECRET = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}


def command(name: str, create: str, delete: str | None = None, inputs: str = "{}") -> dict[str, Any]:
    props = {"create": create, "dir": "/srv/agensh", "environment": {"AGENSH_INPUT": inputs, "AGENSH_X": SECRET}}
    if delete:
        props["delete"] = delete
    return {
        "urn": f"urn:pulumi:demo::agensh::agensh:index:Experiment$command:local:Command::{name}",
        "custom": True,
        "type": COMMAND_TYPE,
        "inputs": copy.deepcopy(props),
        "outputs": {**copy.deepcopy(props), "stdout": '{"status": "ok"}', "stderr": ""},
    }


def without_commands(res: dict[str, Any]) -> dict[str, Any]:
    return {
        **res,
        **{p: {k: v for k, v in res[p].items() if k not in ("create", "delete")} for p in ("inputs", "outputs")},
    }


def test_every_legacy_command_becomes_its_steps_command():
    for call, (suffix, delete) in LEGACY.items():
        step = steps.by_suffix(suffix)
        expected = step.delete_command if delete else step.create_command
        assert expected is not None, call
        assert current(f"urn:x::demo-{suffix}", f"{OLD_PYTHON} -m {call}") == expected


def test_the_state_keeps_everything_but_the_step_commands():
    resources = [
        command(
            "demo-profile-data",
            f"{OLD_PYTHON} -m scripts.profile_data create",
            f"{OLD_PYTHON} -m scripts.profile_data delete",
        ),
        command("demo-jgm-pandoc-seed", f"{OLD_PYTHON} -m scripts.seed"),
        command("demo-baseline-seed", "/usr/bin/python3 -m scripts.baseline seed"),
        command("demo-read-ip", 'echo "$IP"'),  # a command resource that is no step
        command("demo-copy", f"{OLD_PYTHON} -m scripts.seed"),  # looks like a step's, named as none
        {
            "urn": "urn:pulumi:demo::agensh::docker:index/container:Container::c",
            "type": "docker:index/container:Container",
            "inputs": {"create": f"{OLD_PYTHON} -m scripts.seed"},
            "outputs": {},
        },
    ]
    deployment = {"version": 3, "deployment": {"manifest": {"time": "t"}, "resources": resources}}
    before = copy.deepcopy(deployment)
    changed, receipts = rewrite(deployment)
    assert len(changed) == 4 and receipts == []
    after = deployment["deployment"]["resources"]
    pd, seed, baseline_seed = after[:3]
    assert pd["inputs"]["create"] == pd["outputs"]["create"] == steps.PROFILE_DATA.create_command
    assert pd["inputs"]["delete"] == pd["outputs"]["delete"] == steps.PROFILE_DATA.delete_command
    assert seed["inputs"]["create"] == seed["outputs"]["create"] == "bash scripts/step.sh seed"
    assert baseline_seed["inputs"]["create"] == steps.BASELINE_SEED.create_command
    # everything else as it was: the other fields of the steps, the other resources, the rest of the deployment
    for old, new in zip(before["deployment"]["resources"], after):
        assert without_commands(new) == without_commands(old)
    assert after[3:] == before["deployment"]["resources"][3:]
    assert {k: v for k, v in deployment["deployment"].items() if k != "resources"} == {"manifest": {"time": "t"}}
    again = copy.deepcopy(deployment)
    assert rewrite(again) == ([], []) and again == deployment


def test_retired_input_fields_leave_the_steps_inputs_and_their_receipts_follow(tmp_path):
    wake = WakeInputs(run_dir=str(tmp_path), task_id="t1", workers={"w1": 0.0, "w2": 4.5})
    kickoff = KickoffInputs(
        run_dir=str(tmp_path),
        task_id="t1",
        mattermost_url="http://127.0.0.1:8065",
        mattermost_user="admin",
        prompt="/srv/checkout/kickoff.md",
        budget_s=144.0,
        kickoff_s=10.0,
        workers={"w1": "t1-1"},
        copilot_version="0.0.354",
    )
    # the inputs as the code of before declared them: today's fields and `services`
    held = [{**m.model_dump(mode="json"), "services": True} for m in (wake, kickoff)]
    resources = [
        command("demo-t1-wake", steps.WAKE.create_command, inputs=json.dumps(held[0])),
        command("demo-t1-kickoff", steps.KICKOFF.create_command, inputs=json.dumps(held[1])),
        command("demo-t1-seed", steps.SEED.create_command, inputs=json.dumps({"services": True})),  # none retired
        command("demo-t1-nudges", steps.NUDGES.create_command, inputs='{"services": true, "unknown": 1}'),  # invalid
    ]
    deployment = {"version": 3, "deployment": {"resources": resources}}
    before = copy.deepcopy(deployment)
    changed, receipts = rewrite(deployment)
    assert changed == ["demo-t1-wake AGENSH_INPUT: without services", "demo-t1-kickoff AGENSH_INPUT: without services"]
    wake_res, kickoff_res = deployment["deployment"]["resources"][:2]
    for res, model in ((wake_res, wake), (kickoff_res, kickoff)):
        # what today's program declares, so the engine finds nothing changed
        assert res["inputs"]["environment"]["AGENSH_INPUT"] == model.model_dump_json()
        assert res["outputs"]["environment"]["AGENSH_INPUT"] == model.model_dump_json()
        assert res["inputs"]["environment"]["AGENSH_X"] == SECRET
    assert deployment["deployment"]["resources"][2:] == before["deployment"]["resources"][2:]
    rd = RunDir(tmp_path)
    assert receipts == [
        Redigest(
            step=f"demo-t1-{name}",
            dropped=("services",),
            path=rd.receipt(name, "t1"),
            old=digest({"inputs": h}),
            new=digest({"inputs": m.model_dump(mode="json")}),
        )
        for name, h, m in (("wake", held[0], wake), ("kickoff", held[1], kickoff))
    ]
    assert set(RETIRED_INPUTS) == {"wake", "kickoff", "nudges", "shutdown"}

    # the receipt the step wrote then moves to the digest the program computes today; one of other inputs stays
    ok = {"step": "wake", "task_id": "t1", "inputs_digest": receipts[0].old, "status": "ok", "started": "s"}
    write_atomic(receipts[0].path, ok, mode=0o640)
    assert redigest(receipts[0]).endswith(f"inputs digest {receipts[0].old} -> {receipts[0].new}")
    assert json.loads(receipts[0].path.read_text()) == {**ok, "inputs_digest": receipts[0].new}
    assert receipts[0].path.stat().st_mode & 0o777 == 0o640
    other = {**ok, "step": "kickoff", "inputs_digest": "0123456789abcdef"}
    write_atomic(receipts[1].path, other)
    assert "left as it is" in redigest(receipts[1]) and json.loads(receipts[1].path.read_text()) == other
    assert "no receipt" in redigest(Redigest("x", ("services",), tmp_path / "none.json", "a", "b"))
