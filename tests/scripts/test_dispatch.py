"""A step resource's commands name the step alone (model/steps.py: LAUNCHER): scripts/step.sh finds the project's
interpreter and scripts/dispatch.py the step's program and arguments in the table."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from model import steps
from model.project import ROOT
from scripts import dispatch


@pytest.mark.parametrize("delete", [False, True])
def test_every_command_runs_its_program_with_its_arguments(monkeypatch: pytest.MonkeyPatch, delete: bool):
    ran: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(runpy, "run_module", lambda module, **kw: ran.append((module, sys.argv[1:])))
    chosen = [s for s in steps.STEPS if s.delete or not delete]
    for s in chosen:
        command = s.delete_command if delete else s.create_command
        assert command is not None
        launcher, *args = command.removeprefix("bash ").split()
        assert launcher == steps.LAUNCHER
        dispatch.main(args)
    assert ran == [(f"scripts.{s.program}", (s.delete if delete else s.args).split()) for s in chosen]


def test_a_step_without_an_undo_or_outside_the_table_is_refused(capsys: pytest.CaptureFixture[str]):
    for args in (["seed", "--delete"], ["no-such-step"]):
        with pytest.raises(SystemExit) as exit_:
            dispatch.main(args)
        assert exit_.value.code == 2
    assert "seed has nothing to undo" in capsys.readouterr().err


def test_the_launcher_runs_a_step_from_anywhere_with_the_projects_interpreter(tmp_path: Path):
    """The engine runs `bash scripts/step.sh ...` in the project; the launcher needs nothing else from its caller."""
    inputs = {"profile_dir": str(tmp_path / "data" / "p"), "profile": "p", "traj_root": str(tmp_path / "traj")}
    env = {"PATH": "/usr/bin:/bin", "AGENSH_INPUT": json.dumps(inputs)}  # no virtualenv, no PYTHONPATH
    launcher = ROOT / steps.LAUNCHER
    created = subprocess.run(
        ["bash", str(launcher), steps.PROFILE_DATA.suffix], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout) == {"profile_dir": inputs["profile_dir"]}
    assert (tmp_path / "data" / "p").is_dir()
    deleted = subprocess.run(
        ["bash", str(launcher), steps.PROFILE_DATA.suffix, "--delete"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert deleted.returncode == 0, deleted.stderr
    assert not (tmp_path / "data" / "p").exists()
