"""destroy: a profile's stacks destroyed in reverse launch order (`make destroy STACK=...`, `make demo-destroy`).

    .venv/bin/python -m scripts.cli destroy STACK [--yes] [pulumi args]

One stack: its `pulumi destroy`. A per-task profile (model/parts.py): the record's stack first (its preserve step,
deleted first, refuses while any result lacks its verified copy), then each task's, the last task first (each
task's preserve step refuses likewise), then the platform's (the profile's data, deleted last, refusing as well). It
stops at the first stack that fails: nothing is lost, and the same command goes on once the cause is fixed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from model import parts
from model.profile import ProfileError
from model.stackfiles import ROOT, load_profile


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.cli destroy", description=__doc__.splitlines()[0])
    ap.add_argument("stack")
    args, rest = ap.parse_known_args(argv)
    yes = any(a in ("--yes", "-y") for a in rest)
    rest = [a for a in rest if a not in ("--yes", "-y", "--skip-preview")]
    try:
        p = load_profile(args.stack)
    except (FileNotFoundError, ProfileError) as err:
        print(f"destroy: {err}", file=sys.stderr)
        return 2
    listed = subprocess.run(["pulumi", "stack", "ls", "--json"], cwd=ROOT, capture_output=True, text=True, check=True)
    existing = {s["name"] for s in json.loads(listed.stdout or "[]")}
    order = [s for s, _ in reversed(parts.stacks_of(args.stack, p)) if s in existing]
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
