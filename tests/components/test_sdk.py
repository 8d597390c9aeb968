"""The SDK workarounds (components/sdk.py) were measured with the pinned SDKs; a moved pin stops the program until
they are measured again."""

from __future__ import annotations

import importlib.metadata
import inspect
from pathlib import Path

import pulumi.runtime.resource as sdk_resource
import pytest

from components import sdk
from tests.conftest import pinned_versions


def pins() -> dict[str, str]:
    env = pinned_versions()
    return {
        "pulumi": env["PULUMI_PY_VERSION"],
        "pulumi_docker": env["PULUMI_DOCKER_VERSION"],
        "pulumi_command": env["PULUMI_COMMAND_VERSION"],
    }


def test_the_workarounds_were_measured_with_the_pins():
    assert sdk.MEASURED_WITH == pins()
    sdk.check()  # the installed SDKs are the pins


def test_a_moved_pin_stops_the_program(monkeypatch: pytest.MonkeyPatch):
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda n: "3.999.0" if n == "pulumi" else real(n))
    with pytest.raises(RuntimeError, match=r"pulumi 3\.272\.0 -> 3\.999\.0.*measure each workaround"):
        sdk.check()


def test_a_registration_sends_only_the_declaring_frame(monkeypatch: pytest.MonkeyPatch):
    """The SDK finds the declaring line above the third `__init__` (resource, custom resource, concrete class); cut,
    the trace is that one frame, so the source position the engine shows is unchanged."""
    monkeypatch.setattr(sdk_resource, "_get_stack_trace", sdk_resource._get_stack_trace)  # restored afterwards

    class Base:
        def __init__(self) -> None:
            self.trace = sdk_resource._get_stack_trace()

    class Custom(Base):
        def __init__(self) -> None:
            super().__init__()

    class Concrete(Custom):
        def __init__(self) -> None:
            super().__init__()

    def declare() -> tuple[object, int]:
        return Concrete(), inspect.currentframe().f_lineno  # type: ignore[union-attr]

    full, line = declare()
    assert len(full.trace.frames) > 1  # type: ignore[attr-defined]
    sdk.short_stack_traces()
    cut, _ = declare()
    frames = cut.trace.frames  # type: ignore[attr-defined]
    assert len(frames) == 1
    assert frames[0] == full.trace.frames[0]  # type: ignore[attr-defined]
    assert frames[0].pc.uri == Path(__file__).as_uri() and frames[0].pc.line == line
