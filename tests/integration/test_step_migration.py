"""A stack made by the code of before the step launcher moves to the commands that name the step, and to the inputs
of today's steps (migrate-steps), without running or deleting anything, with the real engine and the real
pulumi-command provider.

The project is the code of LEGACY (from git) and then of this checkout, in the same directory, as an operator's
checkout is upgraded in place; its program declares three real steps as the experiment does: `profile-data` (with a
delete), `preserve-run` (with a delete, the guard, and a trigger) and `shutdown` (whose inputs then said `services`,
with a secret beside them as the kickoff's and the nudges' have; with no workers it runs without Docker).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from model.project import ROOT
from model.rundir import RunDir
from scripts.cli.migrate_steps import LEGACY
from tests.conftest import require

# The last commit whose step resources ran `<interpreter> -m scripts.<program> <args>`.
LEGACY_COMMIT = "3fc2b25ed8cbd8b5d0a3d9cd9d955d92e0c7cf75"
CODE = ("components", "model", "scripts")
STACK = "mig"
PROGRAM = """
import pulumi
try:
    from components.step_resources import Step
except ImportError:  # the legacy code's name for it
    from components.steps import Step
from model import steps
from model.step_inputs import PreserveInputs, ProfileDataInputs, ShutdownInputs

root = pulumi.Config().require("root")
data = ProfileDataInputs(profile_dir=f"{root}/data/mig", profile="mig", traj_root=f"{root}/traj")
made = Step("mig", steps.PROFILE_DATA, data, pulumi.ResourceOptions())
run = PreserveInputs(run_dir=f"{root}/runs/run-1", task_id=None, copy_dir=f"{root}/traj/mig.run-1", archive_dirs={},
                     guard=data)
Step("mig", steps.PRESERVE_RUN, run, pulumi.ResourceOptions(depends_on=[made]), triggers=[1])
done = ShutdownInputs(run_dir=f"{root}/runs/run-1", task_id="t1", grace_s=1, workers={}, routers=[])
Step("mig", steps.SHUTDOWN, done, pulumi.ResourceOptions(depends_on=[made]),
     secrets={"AGENSH_MIG_SECRET": pulumi.Output.secret("kept")})
"""
# what the legacy code's own table ran (compared with migrate-steps' frozen LEGACY)
LEGACY_CALLS = """
import json
from model import steps
calls = {f"{s.module} {s.args}".strip(): (s.suffix, False) for s in steps.STEPS}
calls |= {f"{s.module} {s.delete}": (s.suffix, True) for s in steps.STEPS if s.delete}
print(json.dumps(calls))
"""


def put_code(proj: Path, tree: Path) -> None:
    """The project's code replaced by `tree`'s (the program and Pulumi.yaml stay)."""
    for part in CODE:
        shutil.rmtree(proj / part, ignore_errors=True)
        shutil.copytree(tree / part, proj / part, ignore=shutil.ignore_patterns("__pycache__"))


def resources(pulumi, *export: str) -> list[dict[str, Any]]:
    return json.loads(pulumi("stack", "export", *export).stdout)["deployment"]["resources"]


def step_env(pulumi, name: str, *export: str) -> dict[str, Any]:
    """A step resource's environment in the state (its inputs and its outputs hold the same inputs)."""
    res = next(r for r in resources(pulumi, *export) if r["urn"].endswith(f"::{name}"))
    assert res["inputs"]["environment"]["AGENSH_INPUT"] == res["outputs"]["environment"]["AGENSH_INPUT"]
    return res["inputs"]["environment"]


def step_input(pulumi, name: str) -> str:
    return step_env(pulumi, name)["AGENSH_INPUT"]


def commands(state: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Each command resource's create and delete in the exported state, by logical name (inputs and outputs alike)."""
    out = {}
    for res in state["deployment"]["resources"]:
        if res["type"] == "command:local:Command":
            ins, outs = res["inputs"], res["outputs"]
            assert (ins["create"], ins.get("delete")) == (outs["create"], outs.get("delete"))
            out[res["urn"].rsplit("::", 1)[1]] = (ins["create"], ins.get("delete"))
    return out


@pytest.fixture
def legacy_project(tmp_path: Path, pulumi_engine: str):
    """The project with the code of LEGACY, its own backend and passphrase; its stack destroyed even on failure."""
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    archive = subprocess.run(["git", "archive", LEGACY_COMMIT, *CODE], cwd=ROOT, capture_output=True)
    require(archive.returncode == 0, f"commit {LEGACY_COMMIT[:7]} in this checkout's history (a full clone)")
    subprocess.run(["tar", "-x", "-C", str(legacy)], input=archive.stdout, check=True)
    proj = tmp_path / "project"
    proj.mkdir()
    put_code(proj, legacy)
    (proj / ".venv").symlink_to(ROOT / ".venv")
    (proj / "Pulumi.yaml").write_text(
        "name: agensh-migrationtest\nruntime:\n  name: python\n  options:\n    virtualenv: .venv\n"
    )
    (proj / "__main__.py").write_text(PROGRAM)
    (tmp_path / "runs" / "run-1").mkdir(parents=True)
    (tmp_path / "runs" / "run-1" / "result.txt").write_text("a result\n")
    (tmp_path / "state").mkdir()
    env = dict(os.environ, PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}", PULUMI_CONFIG_PASSPHRASE="migration")
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    env.pop("PULUMI_OPTION_POLICY_PACK", None)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(list(args), cwd=proj, env=env, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
        return out

    def pulumi(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run("pulumi", *args, "--non-interactive", "-s", STACK, check=check)

    run("pulumi", "stack", "init", STACK, "--non-interactive")
    pulumi("config", "set", "root", str(tmp_path))
    yield proj, legacy, run, pulumi
    pulumi("destroy", "--yes", check=False)
    pulumi("stack", "rm", "--yes", "--force", check=False)


def test_a_stack_of_before_moves_to_the_step_names_without_running_anything(legacy_project, tmp_path: Path):
    proj, legacy, run, pulumi = legacy_project
    # migrate-steps knows every command the legacy table ran
    legacy_calls = json.loads(run(str(proj / ".venv" / "bin" / "python"), "-c", LEGACY_CALLS).stdout)
    assert {call: tuple(v) for call, v in legacy_calls.items()} == LEGACY

    pulumi("up", "--yes")
    before = commands(json.loads(pulumi("stack", "export").stdout))
    assert before["mig-profile-data"][0].endswith(" -m scripts.profile_data create")
    assert before["mig-preserve-run"][1].endswith(" -m scripts.preserve guard")
    receipt = tmp_path / "runs" / "run-1" / "receipts" / "preserve-run.json"
    marker = tmp_path / "data" / "mig" / ".agensh-profile"
    kept = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (receipt, marker)}
    shut = RunDir(tmp_path / "runs" / "run-1").receipt("shutdown", "t1")
    made_then = json.loads(shut.read_text())
    assert made_then["status"] == "ok" and '"services":false' in step_input(pulumi, "mig-shutdown")

    put_code(proj, ROOT)  # the checkout upgraded in place
    # without the migration, the engine would update (and so run again) the three steps: pulumi-command's update of a
    # changed `create` or environment runs the new create command
    assert "3 to update" in pulumi("preview", "--diff").stdout

    dry = run(str(proj / ".venv" / "bin" / "python"), "-m", "scripts.cli", "migrate-steps", STACK, "--dry-run")
    assert "not changed (--dry-run)" in dry.stdout
    assert commands(json.loads(pulumi("stack", "export").stdout)) == before
    moved = run(str(proj / ".venv" / "bin" / "python"), "-m", "scripts.cli", "migrate-steps", STACK)
    # five commands, and the shutdown's inputs without `services`
    assert "6 step inputs moved to today's" in moved.stdout, moved.stdout
    assert commands(json.loads(pulumi("stack", "export").stdout)) == {
        "mig-profile-data": ("bash scripts/step.sh profile-data", "bash scripts/step.sh profile-data --delete"),
        "mig-preserve-run": ("bash scripts/step.sh preserve-run", "bash scripts/step.sh preserve-run --delete"),
        "mig-shutdown": ("bash scripts/step.sh shutdown", None),
    }
    assert "services" not in step_input(pulumi, "mig-shutdown")
    assert step_env(pulumi, "mig-shutdown", "--show-secrets")["AGENSH_MIG_SECRET"]["plaintext"] == '"kept"'
    # the shutdown's receipt now has the digest of its inputs of today, and nothing else changed in it
    moved_to = json.loads(shut.read_text())
    assert moved_to["inputs_digest"] != made_then["inputs_digest"] and f"{shut}: inputs digest" in moved.stdout
    assert moved_to == {**made_then, "inputs_digest": moved_to["inputs_digest"]}
    kept[shut] = (shut.read_bytes(), shut.stat().st_mtime_ns)
    again = run(str(proj / ".venv" / "bin" / "python"), "-m", "scripts.cli", "migrate-steps", STACK)
    assert "nothing to change" in again.stdout

    # the engine finds nothing to do, and the steps' receipt and marker are untouched
    pulumi("preview", "--expect-no-changes")
    pulumi("up", "--yes", "--expect-no-changes")
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in kept} == kept
    # a step the engine runs again with the same inputs finds its receipt and does nothing (the kickoff's would
    # otherwise post the task once more)
    urn = next(r["urn"] for r in resources(pulumi) if r["urn"].endswith("::mig-shutdown"))
    again_up = pulumi("up", "--yes", "--replace", urn)
    assert "shutdown: done before" in again_up.stdout + again_up.stderr, again_up.stdout
    assert (shut.read_bytes(), shut.stat().st_mtime_ns) == kept[shut]

    # a destroy runs the delete commands the state now names: the guard passes, the profile's data goes
    pulumi("destroy", "--yes")
    assert not (tmp_path / "data" / "mig").exists()
    assert (tmp_path / "traj" / "mig.run-1" / "result.txt").read_text() == "a result\n"
