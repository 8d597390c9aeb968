"""How the modules find each other: by their package names from the project's root, which `model/project.py` alone
computes (`make setup` names it in the venv), so no module edits `sys.path` or counts its own way up to the root; and
inside the model, imports that form no cycle (the order is in docs/design.md#layers). The programs of the images
(demo/, tests/checkouts/) edit no `sys.path` either: their Dockerfiles install a module where Python finds it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from model.project import ROOT

SOURCES = ("__main__.py", "components", "model", "policies", "scripts", "tests")
IMAGES = (Path("demo"), Path("tests", "checkouts"))  # the programs of the images, run there with the images' packages
PATH_EDIT = re.compile(r"\bsys\.path\s*(\.(insert|append|extend)\b|\[|\+=|=[^=])")
ROOT_COUNT = re.compile(r"__file__\)(\.resolve\(\))?\.(parents\[|parent\.parent)|dirname\(os\.path\.dirname\(")


def sources(images: bool = False) -> Iterator[Path]:
    """The project's Python files; with `images`, the images' programs (the demo's and the test checkouts') too."""
    for top in (*SOURCES, *(("demo",) if images else ())):
        path = ROOT / top
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        yield from (p for p in found if images or not any(p.is_relative_to(ROOT / d) for d in IMAGES))


def test_no_module_edits_sys_path_or_finds_the_root_by_itself():
    scanned = list(sources(images=True))
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in scanned
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if path != Path(__file__).resolve()  # its own patterns, below
        and (PATH_EDIT.search(line) or (ROOT_COUNT.search(line) and path != ROOT / "model" / "project.py"))
    ]
    assert found == [], "take the root from model/project.py; the project is found by name:\n" + "\n".join(found)
    assert ROOT / "policies" / "rules.py" in scanned and ROOT / "tests" / "conftest.py" in scanned
    assert ROOT / "demo" / "checkout" / "agent" / "acp_driver.py" in scanned
    assert ROOT / "tests" / "checkouts" / "cc_log" / "agent" / "cc_driver.py" in scanned


def test_every_python_file_of_the_project_is_scanned():
    """A new top-level folder of Python files is scanned too: none is outside SOURCES (hidden ones are tools')."""
    tops = {
        entry.name
        for entry in ROOT.iterdir()
        if not entry.name.startswith(".") and (entry.suffix == ".py" or entry.is_dir() and any(entry.rglob("*.py")))
    }
    assert tops <= {*SOURCES, *(d.parts[0] for d in IMAGES)}, f"add to SOURCES: {sorted(tops - set(SOURCES))}"


def test_the_patterns_catch_what_they_forbid():
    assert PATH_EDIT.search("sys.path.insert(0, ROOT)") and PATH_EDIT.search("sys.path[:0] = [ROOT]")
    assert ROOT_COUNT.search("ROOT = Path(__file__).resolve().parents[2]")
    assert ROOT_COUNT.search("os.path.dirname(os.path.dirname(os.path.abspath(__file__)))")
    assert not ROOT_COUNT.search('Path(__file__).parent / "templates"')  # a file beside its module is no root


def model_imports() -> dict[str, set[str]]:
    """Each module of model/ and the modules of model/ it imports anywhere in it: `TYPE_CHECKING` blocks and
    functions count, since a cycle held together by them is still one."""
    modules = {p.stem for p in (ROOT / "model").glob("*.py")}
    graph: dict[str, set[str]] = {}
    for m in sorted(modules):
        found: set[str] = set()
        for node in ast.walk(ast.parse((ROOT / "model" / f"{m}.py").read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("model.")}
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level == 0 and not (module == "model" or module.startswith("model.")):
                    continue
                inner = module.removeprefix("model").lstrip(".") if node.level == 0 else module
                found |= {inner.split(".")[0]} if inner else {a.name for a in node.names}
        graph[m] = (found & modules) - {m}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, as the modules along it, or None."""
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> list[str] | None:
        if m in path:
            return path[path.index(m) :] + [m]
        if m in done:
            return None
        for n in sorted(graph[m]):
            if found := visit(n, [*path, m]):
                return found
        done.add(m)
        return None

    return next((c for m in sorted(graph) if (c := visit(m, []))), None)


def test_the_model_imports_form_no_cycle():
    graph = model_imports()
    assert cycle(graph) is None, "model/ imports in a circle: " + " -> ".join(cycle(graph) or [])
    # what the graph must see for the check to mean anything: relative, absolute and TYPE_CHECKING imports
    assert {"profile", "settings", "roles", "rundir", "placement", "topology"} <= graph.keys()
    assert {"settings", "placement", "roles", "rundir"} <= graph["profile"] and "profile" in graph["stackfiles"]
    assert "settings" not in graph["roles"] and not {"profile", "topology", "services"} & graph["settings"]


def test_a_cycle_is_found_also_through_type_checking():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_two_modules_of_the_program_share_a_name():
    """A module's name says what it holds, so one name is one thing wherever it is read: an import, a traceback, a
    search for the file (a package's `__init__` and `__main__` excepted; tests keep their tier's names)."""
    by_name: dict[str, list[str]] = {}
    for path in sources():
        if not path.is_relative_to(ROOT / "tests") and path.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}
