"""What the commands share: each command's Typer settings and the arguments and options more than one declares."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from model import contract

# Unknown options and their values stay in `ctx.args`, in order, for the command to hand on (to pulumi, to new-stack).
PASS_THROUGH: dict[str, Any] = {"allow_extra_args": True, "ignore_unknown_options": True}
STACK_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # any stack pulumi accepts, a part stack too


def typer_app() -> typer.Typer:
    """A command module's Typer app: plain help and errors (no colours or boxes, read in logs and tests too) and plain
    tracebacks."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


def any_stack(value: str) -> str:
    if not STACK_RE.fullmatch(value):
        raise typer.BadParameter(f"not a stack name: {value!r}")
    return value


def profile_stack(value: str) -> str:
    """A profile's own stack: its name is the profile's (docs/requirements.md R9); a part stack goes with it."""
    if not contract.PROFILE_RE.fullmatch(value):
        raise typer.BadParameter(
            f"stack name {value!r}: a profile's stack, lowercase letters, digits and hyphens, starting with a letter "
            "or digit (a part stack goes with its profile's)"
        )
    return value


Stack = Annotated[
    str, typer.Argument(metavar="STACK", callback=any_stack, help="the stack (stacks/Pulumi.<STACK>.yaml)")
]
ProfileStack = Annotated[
    str,
    typer.Argument(metavar="STACK", callback=profile_stack, help="the profile's stack (its part stacks go with it)"),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="go on without asking on the terminal")]
Json = Annotated[bool, typer.Option("--json", help="the result as JSON")]
# a generated table's file: rewritten in place (the settings', the step graph's)
UpdateFile = Annotated[
    Path | None, typer.Option("--update", metavar="FILE", help="rewrite the table in FILE in place, not print it")
]
