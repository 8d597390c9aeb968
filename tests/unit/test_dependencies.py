"""The dependencies are named once, in pyproject.toml, and pinned once, in requirements.txt (which `make setup`
installs): every declared dependency is pinned, nothing is pinned that is neither declared nor a transitive pin that
says whose it is, and every package the program and its tests import is declared.

The pins are checked rather than generated from pyproject.toml: the file `make setup` installs is then the one in
the checkout, read by pip alone (no step before it, nothing to keep in step), and its comments say why each is there.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions, version

import pytest

from model.project import ROOT
from tests.conftest import pinned_versions
from tests.unit.test_imports import sources

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)(\s+# transitive of (?P<of>\S+))?$")
VARIABLE = re.compile(r"\$\{([A-Z0-9_]+)\}")  # as pip expands them from the environment


def normal(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(pyproject: dict) -> list[str]:
    """The project's dependencies and its dev group's, as written."""
    return pyproject["project"]["dependencies"] + pyproject["dependency-groups"]["dev"]


def pins(text: str, versions: dict[str, str]) -> dict[str, tuple[str, str | None]]:
    """Each pinned distribution's version (a versions.env name resolved) and whose transitive pin it is, if so."""
    out: dict[str, tuple[str, str | None]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        found = PIN.match(line.strip())
        assert found, f"requirements.txt: not an exact pin: {line!r}"
        exact = VARIABLE.sub(lambda m: versions[m.group(1)], found["version"])
        out[normal(found["name"])] = (exact, found["of"] and normal(found["of"]))
    return out


def problems(names: list[str], pinned: dict[str, tuple[str, str | None]]) -> list[str]:
    """What keeps the declared dependencies and the pins from naming the same packages."""
    out = [
        f"pyproject.toml: {n!r} carries a version: its pin belongs in requirements.txt"
        for n in names
        if not NAME.match(n)
    ]
    wanted = {normal(n) for n in names if NAME.match(n)}
    out += [f"{n}: declared, not pinned" for n in sorted(wanted - pinned.keys())]
    for name, (_, of) in sorted(pinned.items()):
        if of is None and name not in wanted:
            out.append(f"{name}: pinned, not declared (nor a transitive pin of a declared one)")
        elif of is not None and (of not in wanted or name in wanted):
            out.append(f"{name}: a transitive pin of {of}, which is not declared, or itself declared")
    return out


def first_party(module: str, pythonpath: list[str]) -> bool:
    """The project's own packages, and the demo's stand-in programs the tests import from pytest's path."""
    return any((ROOT / d / module).is_dir() or (ROOT / d / f"{module}.py").is_file() for d in [".", *pythonpath])


def imported_distributions(pythonpath: list[str]) -> dict[str, set[str]]:
    """Each third-party distribution the program and its tests import, with a file that imports it."""
    by_module: dict[str, set[str]] = {}
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in (m.split(".")[0] for m in modules):
                if module not in sys.stdlib_module_names and not first_party(module, pythonpath):
                    by_module.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    installed = packages_distributions()
    out: dict[str, set[str]] = {}
    for module, files in by_module.items():
        for dist in installed.get(module, [f"<no installed distribution has {module}>"]):
            out.setdefault(normal(dist), set()).update(files)
    return out


def test_every_declared_dependency_is_pinned_and_every_pin_declared():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pinned = pins((ROOT / "requirements.txt").read_text(), pinned_versions())
    assert problems(declared(pyproject), pinned) == []


def test_every_imported_package_is_declared():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = {normal(n) for n in declared(pyproject)}
    imported = imported_distributions(pyproject["tool"]["pytest"]["ini_options"]["pythonpath"])
    assert {dist: sorted(files)[0] for dist, files in imported.items() if dist not in wanted} == {}
    assert {"pulumi", "pydantic", "pytest"} <= imported.keys()  # the scan reads the program and the tests


def test_the_check_finds_each_mismatch():
    with pytest.raises(AssertionError, match="not an exact pin"):
        pins("f>=1\n", {})
    pinned = pins("a==1\nb==${B}\nc==2\nd==3 # transitive of a\ne==4 # transitive of z\n", {"B": "7"})
    assert pinned["b"] == ("7", None) and pinned["d"] == ("3", "a")
    assert problems(["a", "B", "g", "h>=1"], pinned) == [
        "pyproject.toml: 'h>=1' carries a version: its pin belongs in requirements.txt",
        "g: declared, not pinned",
        "c: pinned, not declared (nor a transitive pin of a declared one)",
        "e: a transitive pin of z, which is not declared, or itself declared",
    ]


def test_the_venv_holds_the_pins():
    """What `make setup` installed is what the file pins (a moved pin needs `make setup` again)."""
    pinned = pins((ROOT / "requirements.txt").read_text(), pinned_versions())
    assert {n: v for n, (v, _) in pinned.items() if version(n) != v} == {}
