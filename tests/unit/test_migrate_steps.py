"""migrate-steps' rewrite of an exported state (scripts/cli/migrate_steps.py): every step command of before becomes the
step's command of today, in the inputs and the outputs; nothing else changes, and a second pass finds nothing."""

from __future__ import annotations

import copy
from typing import Any

from model import steps
from scripts.cli.migrate_steps import COMMAND_TYPE, LEGACY, current, rewrite

OLD_PYTHON = "/old/checkout/.venv/bin/python"
SECRET = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}


def command(name: str, create: str, delete: str | None = None) -> dict[str, Any]:
    props = {"create": create, "dir": "/srv/agensh", "environment": {"AGENSH_INPUT": "{}", "AGENSH_X": SECRET}}
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
    changed = rewrite(deployment)
    assert len(changed) == 4
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
    assert rewrite(again) == [] and again == deployment
