"""A team's members asked of the Docker API a step is given, never of its inputs: on a Docker that runs no swarm a
member is a container, started and stopped as one; a Docker that cannot be asked is asked again next time. (A
swarm manager's services: tests/integration/test_swarm_lab.py.)"""

from __future__ import annotations

import subprocess
import uuid

import pytest

from scripts.lib import workers


@pytest.fixture(autouse=True)
def asked_anew():
    workers._services.cache_clear()
    yield
    workers._services.cache_clear()


def test_on_a_docker_without_a_swarm_a_member_is_a_container(base_image: str):
    name = f"agensh-test-member-{uuid.uuid4().hex[:8]}"
    create = ["docker", "create", "--name", name, "--label", f"agensh.test={name}", "--network", "none"]
    subprocess.run([*create, base_image, "sleep", "300"], check=True, capture_output=True)
    try:
        assert not workers.is_service(name)
        assert workers._services() == frozenset()  # "not a swarm manager": kept, no second question
        assert not workers.running(name)
        assert workers.start_worker(name).returncode == 0 and workers.running(name)
        workers.stop([name], 1)
        assert not workers.running(name)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def test_a_docker_that_cannot_be_asked_is_asked_again(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    assert not workers.is_service("anything")
    assert workers._services.cache_info().currsize == 0
