"""How the modules find each other: by their package names from the project's root, which `model/project.py` alone
computes (`make setup` names it in the venv), so no module edits `sys.path` or counts its own way up to the root."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from model.project import ROOT

SOURCES = ("__main__.py", "components", "model", "policies", "scripts", "tests")
PATH_EDIT = re.compile(r"\bsys\.path\s*(\.(insert|append|extend)\b|\[|\+=|=[^=])")
ROOT_COUNT = re.compile(r"__file__\)(\.resolve\(\))?\.(parents\[|parent\.parent)|dirname\(os\.path\.dirname\(")


def sources() -> Iterator[Path]:
    """The project's Python files; the test checkouts are images' sources, laid out as their images run them."""
    for top in SOURCES:
        path = ROOT / top
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        yield from (p for p in found if not p.is_relative_to(ROOT / "tests" / "checkouts"))


def test_no_module_edits_sys_path_or_finds_the_root_by_itself():
    scanned = list(sources())
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in scanned
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if path != Path(__file__).resolve()  # its own patterns, below
        and (PATH_EDIT.search(line) or (ROOT_COUNT.search(line) and path != ROOT / "model" / "project.py"))
    ]
    assert found == [], "take the root from model/project.py; the project is found by name:\n" + "\n".join(found)
    assert ROOT / "policies" / "rules.py" in scanned and ROOT / "tests" / "conftest.py" in scanned


def test_the_patterns_catch_what_they_forbid():
    assert PATH_EDIT.search("sys.path.insert(0, ROOT)") and PATH_EDIT.search("sys.path[:0] = [ROOT]")
    assert ROOT_COUNT.search("ROOT = Path(__file__).resolve().parents[2]")
    assert ROOT_COUNT.search("os.path.dirname(os.path.dirname(os.path.abspath(__file__)))")
    assert not ROOT_COUNT.search('Path(__file__).parent / "templates"')  # a file beside its module is no root
