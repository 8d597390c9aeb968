"""destroy: every stack of a profile, the record's first (`make destroy STACK=...`, `make demo-destroy`).

    .venv/bin/python -m scripts.cli destroy STACK [--yes] [pulumi args]

One stack: its `pulumi destroy`. A per-task profile (model/parts.py): first the profile's own stack, the record (its
`preserve-run` step, deleted first, refuses while any result lacks its verified copy, and then nothing is deleted);
then every task's stack, also those of tasks since dropped from the profile; the platform's last (the profile's data,
deleted last, refuses as well). It stops at the first stack that fails: nothing is lost, and the same command goes on
once the cause is fixed. It needs no valid profile: the stacks are found by name.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from model import contract, parts
from model.project import ROOT


def destroy_order(stack: str, existing: set[str]) -> list[str]:
    """The profile's stacks that exist, in the order they are destroyed (part stacks are `<stack>.<part>`; a profile's
    name holds no dot)."""
    platform = parts.platform_stack(stack)
    tasks = sorted(s for s in existing if s.startswith(f"{stack}.") and s != platform)
    return [s for s in (stack, *tasks, platform) if s in existing]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.cli destroy", description=__doc__.splitlines()[0])
    ap.add_argument("stack")
    args, rest = ap.parse_known_args(argv)
    if not contract.PROFILE_RE.fullmatch(args.stack):
        ap.error(f"not a profile's stack: {args.stack!r} (a part stack goes with its profile's)")
    yes = any(a in ("--yes", "-y") for a in rest)
    rest = [a for a in rest if a not in ("--yes", "-y", "--skip-preview")]
    listed = subprocess.run(["pulumi", "stack", "ls", "--json"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        print(f"destroy: pulumi stack ls: {listed.stderr.strip()}", file=sys.stderr)
        return 2
    order = destroy_order(args.stack, {s["name"] for s in json.loads(listed.stdout or "[]")})
    if not order:
        print(f"destroy: no stack {args.stack} or part of it", file=sys.stderr)
        return 2
    if not yes:
        if not sys.stdin.isatty():
            print("destroy: not on a terminal; pass --yes to destroy", file=sys.stderr)
            return 2
        if not input(f"Destroy {', '.join(order)}? [y/N] ").lower().startswith("y"):
            return 1
    for stack in order:
        print(f"destroy: pulumi destroy -s {stack}", flush=True)
        done = subprocess.run(["pulumi", "destroy", "--yes", "--skip-preview", "-s", stack, *rest], cwd=ROOT)
        if done.returncode != 0:
            print(
                f"destroy: {stack} was not destroyed; the stacks after it in this order are untouched", file=sys.stderr
            )
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
