"""The operator's commands: `python -m scripts.cli <command> [args]` (`<command> --help` for its own options)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

# command -> its module of scripts/cli (each has `main(argv) -> int`)
COMMANDS = {
    "new-stack": "new_stack",
    "check-checkout": "check_checkout",
    "check": "check",
    "launch": "launch",
    "destroy": "destroy",
    "status": "status",
    "gate": "gate",
    "schedule": "schedule",
    "plan": "plan",
    "report": "report",
    "settings": "settings_table",
    "baseline-from-json": "baseline_from_json",
    "migrate-steps": "migrate_steps",
}
USAGE = "usage: python -m scripts.cli <command> [args]   (python -m scripts.cli <command> --help)"


def summary(module: str) -> str:
    """The first line of the module's docstring, without a leading `<name>: ` (read, not imported: no command's
    dependencies are loaded to list them)."""
    doc = ast.get_docstring(ast.parse((Path(__file__).parent / f"{module}.py").read_text())) or ""
    line = doc.splitlines()[0] if doc else ""
    name, sep, rest = line.partition(": ")
    return rest[:1].upper() + rest[1:] if sep and name.replace(" ", "_") == module else line


def help_text() -> str:
    width = max(map(len, COMMANDS))
    rows = [f"  {name:<{width}}  {summary(module)}" for name, module in COMMANDS.items()]
    return "\n".join([USAGE, "", __doc__.splitlines()[0], "", "commands:", *rows])


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(help_text())
        return 0
    if not args or args[0] not in COMMANDS:
        print(help_text(), file=sys.stderr)
        if args:
            print(f"\npython -m scripts.cli: unknown command {args[0]!r}", file=sys.stderr)
        return 2
    return importlib.import_module(f"scripts.cli.{COMMANDS[args[0]]}").main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
