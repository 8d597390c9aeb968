"""How the suite runs side by side (scripts/setup/run-tests.sh, tests/conftest.py): in a run of its own, with the same
options, a module's tests that share a module-scoped fixture run in one process that makes the fixture once, other
tests spread over the processes, and the longest unit starts first. A pytest that breaks pytest-xdist's groups (as 9.2
does) fails here, not as a suite whose shared fixtures are silently made in every process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from model.project import ROOT

TESTS = """
import os
import pytest

@pytest.fixture(scope="module")
def shared():
    with open(os.environ["MADE"], "a") as made:
        made.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    yield

def test_a(shared): pass
def test_b(shared): pass
def test_c(shared): pass
def test_d(): pass
def test_e(): pass
def test_f(): pass

@pytest.mark.slow(30)
def test_long(): pass
"""


def test_a_module_fixture_is_made_once_and_the_longest_starts_first(tmp_path: Path):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    (tmp_path / "test_sched.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow(seconds): its time\n")
    made = tmp_path / "made.txt"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MADE": str(made)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup"]
        + ["--no-loadscope-reorder", "test_sched.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(made.read_text().split()) == 1, run.stdout  # one process made it, once
    ran = re.findall(r"\[(gw\d)\] \[ *\d+%\] PASSED test_sched.py::(test_\w+)", run.stdout)
    where = {test: worker for worker, test in ran}
    assert where["test_a"] == where["test_b"] == where["test_c"], ran
    assert len(set(where.values())) > 1, ran  # the others spread
    # the order the processes are given the units in (kept by --no-loadscope-reorder): the longest first
    order = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "test_sched.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert order[0] == "test_sched.py::test_long", order
