"""Shared test set-up: the guard for tiers that need real tools.

A tier that needs something absent skips with the reason when pytest is run by hand, and fails under `make test`
and in CI (CI=true, which scripts/setup/run-tests.sh sets), so a missing engine is never a silent green run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from contextlib import ExitStack

import pytest

from model.project import ROOT
from scripts.lab import docker_disk
from scripts.setup.calculator import BASE_IMAGE


def pinned_versions() -> dict[str, str]:
    """scripts/setup/versions.env's settings: the toolchain's versions and those requirements.txt names by them."""
    lines = (ROOT / "scripts" / "setup" / "versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def require(ok: bool, what: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI; run `make setup`")
    pytest.skip(f"{what} is absent; run `make setup`")


def unit_of(item: pytest.Item) -> str:
    """What runs in one process when the tests run side by side: the tests of a module that share a fixture of the
    module's scope (made once there), or a test alone."""
    group = item.get_closest_marker("xdist_group")
    return str(group.args[0]) if group else item.nodeid


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Ready for the suite's processes (scripts/setup/run-tests.sh): a module's tests that share a module-scoped
    fixture are one unit, so the fixture is made once; and the units start longest first (`slow` marks a test's time
    alone), so that no long test starts last while the other processes have nothing left to run."""
    for item in items:
        fixtures = item._fixtureinfo.name2fixturedefs.values()
        if any(defs[-1].scope == "module" for defs in fixtures) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    seconds: Counter[str] = Counter()
    for item in items:
        slow = item.get_closest_marker("slow")
        seconds[unit_of(item)] += slow.args[0] if slow else 0
    items.sort(key=lambda item: -seconds[unit_of(item)])


def engine_running() -> bool:
    return (
        shutil.which("docker") is not None and subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    )


BUILD_CACHE_KEPT = pytest.StashKey[ExitStack]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """The build cache the suite's stacks leave is trimmed back to its size at the start when the run ends
    (scripts/lab/docker_disk.py says why): once for the whole run, in the process that runs the others when the tests
    run side by side."""
    if not hasattr(session.config, "workerinput") and engine_running():
        kept = session.config.stash[BUILD_CACHE_KEPT] = ExitStack()
        kept.enter_context(docker_disk.build_cache_kept())


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash.get(BUILD_CACHE_KEPT, ExitStack()).close()


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """A running engine with room for the suite."""
    require(engine_running(), "a running Docker engine")
    short = docker_disk.room_for_a_run()
    if short:
        pytest.fail(short)


@pytest.fixture(scope="session")
def base_image(docker_engine: None) -> str:
    """The offline base image every test container starts from (scripts/setup/base_image.sh: cached per version), made
    once per session."""
    made = subprocess.run(["bash", str(ROOT / "scripts" / "setup" / "base_image.sh")], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    return BASE_IMAGE


@pytest.fixture(scope="session")
def pulumi_cli() -> str:
    """Path of the pulumi CLI that scripts/env.sh puts on PATH."""
    exe = shutil.which("pulumi")
    require(exe is not None, "the pulumi CLI")
    return exe  # type: ignore[return-value]


@pytest.fixture(scope="session")
def pulumi_engine(pulumi_cli: str, docker_engine: None) -> str:
    """The pulumi CLI with both resource plugins installed, and a Docker engine."""
    listed = subprocess.run([pulumi_cli, "plugin", "ls"], capture_output=True, text=True).stdout
    ok = all(
        any(line.split()[:2] == [name, "resource"] for line in listed.splitlines()) for name in ("docker", "command")
    )
    require(ok, "the docker and command resource plugins")
    return pulumi_cli
