"""The SDK workarounds (components/sdk.py) were measured with the pinned SDKs; a moved pin stops the program until
they are measured again."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from components import sdk

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    lines = (
        (ROOT / "scripts" / "setup" / "versions.env").read_text().splitlines()
        if (ROOT / "scripts" / "setup" / "versions.env").exists()
        else (ROOT / "scripts" / "versions.env").read_text().splitlines()
    )
    env = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
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
