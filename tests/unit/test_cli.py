"""The operator's commands as one Typer app (scripts/cli/app.py): every command's own --help names what it takes,
listing the commands loads none of them, and launch and destroy hand every option they do not declare to pulumi."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from model.project import ROOT
from scripts.cli import app, destroy, launch
from scripts.cli.app import main as cli
from scripts.setup import console_scripts

PULUMI_ARGS = ["--target", "urn:pulumi:x::y", "-v=3", "--refresh", "--config=agensh:hours=5"]


@pytest.mark.parametrize("name", list(app.COMMANDS))
def test_each_command_has_help_naming_its_arguments_and_options(name: str, capsys: pytest.CaptureFixture[str]):
    assert cli([name, "--help"]) == 0
    shown = capsys.readouterr().out
    group = typer.main.get_command(app.app)
    command = group.get_command(typer.Context(group), name)
    assert command is not None and command.params
    assert app.COMMANDS[name].summary in shown
    for param in command.params:
        names = param.opts if param.param_type_name == "option" else [param.display_name_raw]
        assert all(n in shown for n in names), (name, names, shown)


def test_listing_the_commands_imports_none_of_them():
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from scripts.cli.app import main; main(['--help']); "
            "print(*sorted(m for m in sys.modules if m.startswith(('scripts.', 'model.'))))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert listed.stdout.splitlines()[-1].split() == ["scripts.cli", "scripts.cli.app"]


def test_unknown_commands_and_bad_stack_names_exit_2(capsys: pytest.CaptureFixture[str]):
    assert cli(["nope"]) == 2
    assert "No such command 'nope'" in capsys.readouterr().err
    assert cli(["destroy", "Cohort_W8", "--yes"]) == 2
    assert "stack name 'Cohort_W8'" in capsys.readouterr().err
    assert cli(["launch", "up", "../x"]) == 2
    assert "not a stack name: '../x'" in capsys.readouterr().err


def test_the_agensh_command_is_the_app(tmp_path: Path):
    assert console_scripts.write(tmp_path, sys.executable) == ["agensh"]
    assert console_scripts.write(tmp_path, sys.executable) == []  # in place: nothing written
    shown = subprocess.run([tmp_path / "agensh", "--help"], capture_output=True, text=True, check=True).stdout
    assert shown.startswith("Usage: agensh [OPTIONS] COMMAND [ARGS]...") and "  migrate-steps  " in shown


class Pulumi:
    """subprocess.run for destroy: `stack ls` lists the profile's stacks, every other command is recorded."""

    def __init__(self, stacks: list[str]):
        self.stacks = stacks
        self.ran: list[list[str]] = []

    def __call__(self, cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if cmd[1:3] == ["stack", "ls"]:
            listed = ", ".join(f'{{"name": "{s}"}}' for s in self.stacks)
            return subprocess.CompletedProcess(cmd, 0, f"[{listed}]", "")
        self.ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)


def test_destroy_hands_its_unknown_options_to_each_pulumi_destroy(monkeypatch: pytest.MonkeyPatch):
    pulumi = Pulumi(["cohort", "cohort.platform", "cohort.t1", "other"])
    monkeypatch.setattr(destroy.subprocess, "run", pulumi)
    assert cli(["destroy", "cohort", *PULUMI_ARGS[:2], "--yes", *PULUMI_ARGS[2:]]) == 0
    fixed = ["pulumi", "destroy", "--yes", "--skip-preview", "-s"]
    assert pulumi.ran == [[*fixed, s, *PULUMI_ARGS] for s in ("cohort", "cohort.t1", "cohort.platform")]


def test_destroy_without_yes_asks_and_off_a_terminal_refuses(monkeypatch: pytest.MonkeyPatch, capsys):
    pulumi = Pulumi(["cohort"])
    monkeypatch.setattr(destroy.subprocess, "run", pulumi)
    assert cli(["destroy", "cohort", "--refresh"]) == 2  # pytest's stdin is no terminal
    assert "pass --yes to destroy" in capsys.readouterr().err and pulumi.ran == []


def test_launch_hands_its_unknown_options_to_pulumi(monkeypatch: pytest.MonkeyPatch):
    started: list[list[str]] = []

    class Preview:
        def __init__(self, cmd: list[str], **kwargs: Any):
            started.append(cmd)

        def wait(self) -> int:
            return 0

    monkeypatch.setenv("PULUMI_OPTION_POLICY_PACK", "policies")  # launch drops it; restored after the test
    monkeypatch.setattr(launch.subprocess, "Popen", Preview)
    assert cli(["launch", "preview", "cohort-w8", *PULUMI_ARGS]) == 0
    assert started == [["pulumi", "preview", "-s", "cohort-w8", *launch.PACK, *PULUMI_ARGS]]

    launched: list[tuple[str, bool, list[str]]] = []

    def foreground(stack: str, p: object, yes: bool, rest: list[str]) -> int:
        launched.append((stack, yes, rest))
        return 0

    monkeypatch.setattr(launch, "launch", foreground)
    assert cli(["launch", "up", "cohort-w8", "--foreground", *PULUMI_ARGS[:2], "-y", *PULUMI_ARGS[2:]]) == 0
    assert launched == [("cohort-w8", True, PULUMI_ARGS)]


@pytest.mark.parametrize(
    "argv, refused",
    [
        (["up", "cohort-w8", "--skip-preview"], "the launch always previews first"),
        (["stop", "cohort-w8", "--refresh"], "stop takes no other arguments: --refresh"),
        (["logs", "cohort-w8", "-v=3"], "logs takes no other arguments: -v=3"),
    ],
)
def test_launch_refuses_what_it_cannot_hand_on(argv: list[str], refused: str, capsys: pytest.CaptureFixture[str]):
    assert cli(["launch", *argv]) == 2
    assert refused in capsys.readouterr().err
