"""The Go tests of the toolchain pieces built here (the command provider's protocol and command semantics)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require

TOOLCHAIN = Path(__file__).resolve().parents[2] / "toolchain"


def test_command_provider_go_tests():
    require(shutil.which("go") is not None, "Go")
    out = subprocess.run(["go", "test", "-short", "./..."], cwd=TOOLCHAIN / "command-provider", capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
