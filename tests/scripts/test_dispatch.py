"""A step resource's commands name the step alone (model/steps.py: LAUNCHER): scripts/step.sh finds the project's
interpreter and scripts/dispatch.py the step's program and arguments in the table."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from model import steps
from model.project import ROOT
from scripts import dispatch


@pytest.mark.parametrize("delete", [False, True])
def test_every_command_runs_its_program_with_its_arguments(monkeypatch: pytest.MonkeyPatch, delete: bool):
    ran: list[tuple[str, list[str]]] = []

    def program(module: str) -> SimpleNamespace:
        return SimpleNamespace(main=lambda argv: ran.append((module, argv)) or 3)

    monkeypatch.setattr(dispatch, "importlib", SimpleNamespace(import_module=program))
    chosen = [s for s in steps.STEPS if s.delete or not delete]
    for s in chosen:
        command = s.delete_command if delete else s.create_command
        assert command is not None
        launcher, *args = command.removeprefix("bash ").split()
        assert launcher == steps.LAUNCHER
        assert dispatch.main(args) == 3  # the program's exit code
    assert ran == [(f"scripts.{s.program}", (s.delete if delete else s.args).split()) for s in chosen]


@pytest.mark.parametrize("program", sorted({s.program for s in steps.STEPS}))
def test_every_program_has_one_main_of_its_arguments_and_refuses_others(
    program: str, capsys: pytest.CaptureFixture[str]
):
    """Each step program's `main(argv)` takes its steps' words from the table, refuses any other before it reads its
    inputs, and reads no `sys.argv` (but to be run by hand: `main(sys.argv[1:])`)."""
    module = importlib.import_module(f"scripts.{program}")
    argv, *rest = inspect.signature(module.main).parameters.values()
    assert argv.name == "argv" and argv.default is argv.empty and all(p.default is not p.empty for p in rest)
    source = inspect.getsource(module)
    assert source.count("sys.argv") == 1 and 'if __name__ == "__main__":\n    sys.exit(main(sys.argv[1:]))' in source
    with pytest.raises(SystemExit) as exit_:
        module.main(["no-such-mode"], {})  # no inputs: refused before they are read
    assert exit_.value.code == 2 and "no-such-mode" in capsys.readouterr().err
    for s in (s for s in steps.STEPS if s.program == program):
        for delete in {False, bool(s.delete)}:
            with pytest.raises(KeyError, match="AGENSH_INPUT"):  # taken: on to read its inputs
                module.main(s.argv(delete), {})


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
