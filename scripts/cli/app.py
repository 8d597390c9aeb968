"""The operator's commands: one Typer app, a module of scripts/cli per command (`python -m scripts.cli --help`).

Each module declares its command as a Typer app of one command, `cli`, returning its exit code. The app imports a
command's module only when that command runs or shows its help, so starting it and listing the commands load no
command's dependencies.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import typer
from typer import _click as click  # Typer's own Click, whose classes TyperGroup's methods take
from typer.core import TyperGroup


class Entry(NamedTuple):
    module: str  # scripts/cli/<module>.py
    summary: str  # the command's line in the app's help, and the first of its own


COMMANDS = {
    "new-stack": Entry("new_stack", "Create or update a profile's stack and its secrets."),
    "check-checkout": Entry("check_checkout", "An Agensh checkout against the checkout contract."),
    "check": Entry("check", "Every live check of a profile, before a launch."),
    "launch": Entry("launch", "The documented preview and launch of a stack."),
    "destroy": Entry("destroy", "Every stack of a profile, the record's first."),
    "status": Entry("status", "What a run is doing now, for a stack."),
    "gate": Entry("gate", "Candidate runs scored per task against a reference."),
    "schedule": Entry("schedule", "A delayed launch as a systemd service and timer."),
    "host-units": Entry("receipts", "The host units' receipts here; stale ones removed."),
    "plan": Entry("plan", "The hosts a swarm profile needs and what runs where."),
    "report": Entry("report", "One self-contained HTML page of one or more runs."),
    "settings": Entry("settings_table", "The profile settings as a Markdown table."),
    "steps": Entry("graph_table", "The step graph as a Markdown table."),
    "baseline-from-json": Entry("baseline_from_json", "A baseline stack from the standalone baseline.json."),
    "save": Entry("save", "Copy and verify every run of a profile's data by hand."),
    "migrate-steps": Entry("migrate_steps", "Today's step commands and inputs in a profile's stacks."),
}


class Commands(TyperGroup):
    """The commands of COMMANDS, each loaded from its module when it is called for; a command's return value is the
    process's exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command = typer.main.get_command(importlib.import_module(f"scripts.cli.{entry.module}").cli)
        command.help = f"{entry.summary}\n\n{command.help}" if command.help else entry.summary
        command.short_help = entry.summary
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from COMMANDS alone: it imports no command."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry.summary) for name, entry in COMMANDS.items()])

    def invoke(self, ctx: click.Context) -> None:
        ctx.exit(super().invoke(ctx))


app = typer.Typer(
    cls=Commands,
    name="agensh",
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def agensh() -> None:
    """The operator's commands (`COMMAND --help` for each one's arguments and options)."""


def main(argv: list[str] | None = None) -> int:
    """Run one command line (sys.argv's by default) as `python -m scripts.cli` does and return its exit code: a usage
    error prints its message and returns 2."""
    try:
        app(args=argv)
    except SystemExit as done:  # how a standalone Click command always ends
        return int(done.code or 0)
    return 0
