"""dispatch: run a step by its name in the table (model/steps.py), as scripts/step.sh asks.

    bash scripts/step.sh <step> [--delete]      (from the project; the engine runs it as a step resource's command)

The step's program is imported and its `main(argv)` called with the step's arguments (with `--delete`, its delete's),
whose result is the exit code: every step program has that one `main`, and none reads `sys.argv` (by hand,
`python -m scripts.<program> <args>` calls the same `main`). The program's module and arguments are read here, from
the table, and nowhere in any stack's state: a program can move with a change to the table alone.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from model import steps


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bash scripts/step.sh", description=__doc__.splitlines()[0])
    ap.add_argument(
        "step", choices=[s.suffix for s in steps.STEPS], metavar="STEP", help="the step's name (its suffix)"
    )
    ap.add_argument("--delete", action="store_true", help="the step's undo, run by `pulumi destroy`")
    a = ap.parse_args(argv)
    step = steps.by_suffix(a.step)
    if a.delete and not step.delete:
        ap.error(f"{a.step} has nothing to undo")
    program = importlib.import_module(step.module)
    code: int = program.main(step.argv(a.delete))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
