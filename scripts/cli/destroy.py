"""destroy: every stack of a profile, the record's first (`make destroy STACK=...`, `make demo-destroy`).

    .venv/bin/python -m scripts.cli destroy STACK [--yes] [pulumi args]

One stack: its `pulumi destroy`. A per-task profile (model/parts.py): first the profile's own stack, the record (its
`preserve-run` step, deleted first, refuses while any result lacks its verified copy, and then nothing is deleted);
then every task's stack, also those of tasks since dropped from the profile; the platform's last (the profile's data,
deleted last, refuses as well). It stops at the first stack that fails: nothing is lost, and the same command goes on
once the cause is fixed. It needs no valid profile: the stacks are found by name.
"""

from __future__ import annotations

import json
import subprocess
import sys

import typer

from model import parts
from model.project import ROOT
from scripts.cli import options

cli = options.typer_app()


def destroy_order(stack: str, existing: set[str]) -> list[str]:
    """The profile's stacks that exist, in the order they are destroyed (part stacks are `<stack>.<part>`; a profile's
    name holds no dot)."""
    platform = parts.platform_stack(stack)
    tasks = sorted(s for s in existing if s.startswith(f"{stack}.") and s != platform)
    return [s for s in (stack, *tasks, platform) if s in existing]


def existing_stacks(stack: str, command: str, *ls_flags: str) -> list[str] | None:
    """The profile's stacks that exist (`pulumi stack ls`), in destroy_order; None, with the reason printed after
    `<command>:`, when pulumi cannot list the stacks or none of the profile exists."""
    listed = subprocess.run(["pulumi", "stack", "ls", "--json", *ls_flags], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        print(f"{command}: pulumi stack ls: {listed.stderr.strip()}", file=sys.stderr)
        return None
    order = destroy_order(stack, {s["name"] for s in json.loads(listed.stdout or "[]")})
    if not order:
        print(f"{command}: no stack {stack} or part of it", file=sys.stderr)
        return None
    return order


@cli.command(context_settings=options.PASS_THROUGH)
def command(
    ctx: typer.Context,
    stack: options.ProfileStack,
    yes: options.Yes = False,
) -> int:
    """The profile's stacks that exist, destroyed in order after one question (none with --yes); it stops at the first
    that fails. Any other option, with its value, goes to each `pulumi destroy`."""
    order = existing_stacks(stack, "destroy")
    if order is None:
        return 2
    if not yes:
        if not sys.stdin.isatty():
            print("destroy: not on a terminal; pass --yes to destroy", file=sys.stderr)
            return 2
        if not input(f"Destroy {', '.join(order)}? [y/N] ").lower().startswith("y"):
            return 1
    for each in order:
        print(f"destroy: pulumi destroy -s {each}", flush=True)
        done = subprocess.run(["pulumi", "destroy", "--yes", "--skip-preview", "-s", each, *ctx.args], cwd=ROOT)
        if done.returncode != 0:
            print(
                f"destroy: {each} was not destroyed; the stacks after it in this order are untouched", file=sys.stderr
            )
            return done.returncode
    return 0
