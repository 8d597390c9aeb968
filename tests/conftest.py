"""Shared test set-up: the guard for tiers that need real tools.

A tier that needs something absent skips with the reason when pytest is run by hand, and fails under `make test`
and in CI (CI=true, which scripts/setup/run-tests.sh sets), so a missing engine is never a silent green run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

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


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    """A running engine with room for the suite; the build cache the suite's stacks leave is trimmed back to its size
    at the start when the session ends (scripts/lab/docker_disk.py says why)."""
    ok = shutil.which("docker") is not None and subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    require(ok, "a running Docker engine")
    short = docker_disk.room_for_a_run()
    if short:
        pytest.fail(short)
    with docker_disk.build_cache_kept():
        yield


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
