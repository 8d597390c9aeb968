"""Fixtures of the integration tests: a swarm lab (scripts/swarm_lab.py) that is removed even when a test fails."""

from __future__ import annotations

import os
import shutil
from typing import Iterator

import pytest

from scripts import swarm_lab
from tests.conftest import require


def require_lab_tools() -> None:
    require(os.geteuid() == 0 and all(shutil.which(t) for t in ("dockerd", "nsenter", "ip", "iptables")),
            "root with dockerd, nsenter, ip and iptables")
    require(shutil.which("docker-registry") is not None, "Debian's docker-registry")


@pytest.fixture(scope="module")
def swarm(docker_engine: None) -> Iterator[swarm_lab.Lab]:
    """Two extra Docker daemons in network namespaces of their own, joined in a swarm, with a registry on the
    manager; torn down (and checked torn down) after the module's tests."""
    require_lab_tools()
    lab = swarm_lab.up(2)
    try:
        yield lab
    finally:
        assert swarm_lab.down(lab) == [], "the swarm lab left something behind"
