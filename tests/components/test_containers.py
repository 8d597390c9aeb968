"""The lean Container registers what pulumi_docker's docker.Container registers: type, inputs and provider version."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_docker as docker
import pytest
from pulumi.runtime.mocks import MockMonitor

from components import containers
from components.experiment import Experiment
from tests.components.conftest import Mocks, secrets, stack_profile


class WireMonitor(MockMonitor):
    """Records what the engine would receive for each container: type, inputs (wire names, secrets marked), version."""

    def __init__(self, mocks: Mocks):
        super().__init__(mocks)
        self.sent: dict[str, tuple[str, object, str]] = {}

    def RegisterResource(self, request):  # noqa: N802 (gRPC name)
        if request.type == "docker:index/container:Container":
            self.sent[request.name] = (request.type, request.object, request.version)
        return super().RegisterResource(request)


def sdk_container(
    resource_name: str, args: docker.ContainerArgs, opts: pulumi.ResourceOptions, exit_code: bool = False
) -> docker.Container:
    """The same container through the SDK's own class, with the same arguments (it always holds `exit_code`)."""
    return docker.Container(resource_name, opts=opts, **vars(args))


def registrations(program_dir: Path) -> dict[str, tuple[str, object, str]]:
    mocks = Mocks()
    monitor = WireMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, preview=True, monitor=monitor)
    profile = stack_profile("cohort-w8", program_dir)
    pulumi.runtime.test(lambda: Experiment("experiment", profile, secrets(), project_dir=program_dir).images.ids)()
    return monitor.sent


def test_lean_container_sends_what_the_sdk_sends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    lean = registrations(tmp_path)
    monkeypatch.setattr(containers, "Container", sdk_container)
    sdk = registrations(tmp_path)
    assert len(lean) == 7 + 2 * 8 and lean.keys() == sdk.keys()
    for name in lean:
        assert lean[name] == sdk[name], name
    assert {version for _, _, version in lean.values()} == {docker._utilities.get_version()}
