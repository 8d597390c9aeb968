"""Shared test set-up: the project on sys.path, and the guard for tiers that need real tools.

A tier that needs something absent skips locally with the reason, and fails in CI (CI=true), so a
missing engine is never a silent green run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def require(ok: bool, what: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI; run `make setup`")
    pytest.skip(f"{what} is absent; run `make setup`")


@pytest.fixture(scope="session")
def docker_engine() -> None:
    ok = shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True).returncode == 0
    require(ok, "a running Docker engine")


@pytest.fixture(scope="session")
def pulumi_engine(docker_engine: None) -> str:
    """Path of the pulumi CLI set up by scripts/env.sh, with both resource plugins installed."""
    exe = shutil.which("pulumi")
    ok = exe is not None and subprocess.run([exe, "plugin", "ls"], capture_output=True, text=True).stdout.count(
        "resource") >= 2
    require(ok, "the Pulumi toolchain (pulumi CLI with the docker and command plugins)")
    return exe  # type: ignore[return-value]
