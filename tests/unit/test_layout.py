"""scripts/ by kind (scripts/README.md): the top level holds only what running stacks and installed units name, the
shared library and the operator's commands never import a step program, and one entry point lists every command."""

from __future__ import annotations

import ast
import subprocess
import sys

from model import steps
from model.project import ROOT

SCRIPTS = ROOT / "scripts"
PROGRAMS = {s.program for s in steps.STEPS}
# named by path in Pulumi state (step.sh: every step resource's commands; mysql_users.sh) or installed host units, or
# sourced by users
PINNED = {"step.sh", "mysql_users.sh", "pbench_reboot_guard.sh", "scheduled_launch.sh", "env.sh"}
COMMANDS = [
    "new-stack",
    "check-checkout",
    "check",
    "launch",
    "destroy",
    "status",
    "gate",
    "schedule",
    "host-units",
    "plan",
    "report",
    "settings",
    "steps",
    "baseline-from-json",
    "save",
    "migrate-steps",
]


def imported(tree: ast.AST) -> set[str]:
    """Every module an `import` or `from ... import` names, with `from scripts import x` as `scripts.x`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return out


def test_no_library_module_or_command_imports_a_step_program():
    step_modules = {f"scripts.{p}" for p in PROGRAMS}
    found = []
    for folder in ("cli", "lib"):
        for path in sorted((SCRIPTS / folder).rglob("*.py")):
            bad = imported(ast.parse(path.read_text())) & step_modules
            found += [f"{path.relative_to(ROOT)}: {m}" for m in sorted(bad)]
    assert found == []


def test_the_scan_finds_a_step_program_imported():
    code = "from scripts import score\nimport scripts.preserve\nfrom scripts.manifest import revision\n"
    assert {"scripts.score", "scripts.preserve", "scripts.manifest"} <= imported(ast.parse(code))


def test_the_top_level_holds_only_step_programs_and_pinned_files():
    allowed = {f"{p}.py" for p in PROGRAMS} | PINNED | {"dispatch.py", "__init__.py", "README.md"}
    files = {p.name for p in SCRIPTS.iterdir() if p.is_file()}
    assert files - allowed == set()
    assert {f"{p}.py" for p in PROGRAMS} | PINNED <= files
    folders = {p.name for p in SCRIPTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {"cli", "lib", "host", "setup", "lab"}


def test_one_entry_point_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "scripts.cli", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = out.stdout.split("\nCommands:\n", 1)[1].splitlines()
    assert [row.split()[0] for row in rows] == COMMANDS
    assert all(len(row.split(None, 1)) == 2 for row in rows)  # each with its summary
