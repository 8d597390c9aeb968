"""`python -m scripts.cli check-checkout PATH`: the demo's checkout passes; a broken copy has each miss named with its
file and the line or file expected; a path that is no directory is a bad argument."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from model.project import DEMO_CHECKOUT, ROOT
from tests.checkouts import cc_log

DEMO = ROOT / DEMO_CHECKOUT


def check_checkout(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scripts.cli", "check-checkout", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_the_demo_checkout_passes():
    done = check_checkout(str(DEMO))
    assert (done.returncode, done.stdout) == (0, f"{DEMO} meets the checkout contract v1 with the demo convention\n")
    assert json.loads(check_checkout(str(DEMO), "--json").stdout) == {
        "checkout": str(DEMO),
        "contract": 1,
        "convention": "demo",
        "misses": [],
    }


def test_a_broken_checkout_has_each_miss_named(tmp_path: Path):
    broken = Path(shutil.copytree(DEMO, tmp_path / "checkout"))
    (broken / "board-service" / "Dockerfile").unlink()
    (broken / "prompts" / "kickoff.md").unlink()
    (broken / "agent" / "bin" / "pbench-selfcheck").unlink()
    base = broken / "agent" / "Dockerfile.base"
    base.write_text(base.read_text().replace("ARG COPILOT_VERSION=1.0.78\n", "").replace("ARG COPILOT_VERSION\n", ""))
    done = check_checkout(str(broken))
    assert done.returncode == 1, done.stdout + done.stderr
    named = ["agent/Dockerfile.base", "board-service/Dockerfile", "prompts/kickoff.md", "agent/"]
    lines = done.stdout.splitlines()
    assert lines[0] == f"{broken} misses 4 thing(s) of the checkout contract v1 with the demo convention:"
    assert [line.split(": ", 1)[0].strip() for line in lines[1:]] == named
    assert lines[1].startswith("  agent/Dockerfile.base: no line `ARG COPILOT_VERSION`: the project passes the profile")
    assert "board-service/Dockerfile: missing: the Dockerfile of the board image (context board-service/)" in lines[2]
    assert "prompts/kickoff.md: missing: the kickoff message" in lines[3]
    assert "agent/: no file pbench-selfcheck: " in lines[4]
    doc = json.loads(check_checkout(str(broken), "--json").stdout)
    assert [m["file"] for m in doc["misses"]] == named


def test_a_path_that_is_no_directory_is_a_bad_argument(tmp_path: Path):
    done = check_checkout(str(tmp_path / "absent"))
    assert (done.returncode, done.stdout) == (2, "")
    assert f"{tmp_path / 'absent'} is not a directory" in done.stderr


def test_the_cc_log_checkout_passes_with_its_convention_and_fails_with_the_demos(tmp_path: Path):
    cc = cc_log(tmp_path / "cc")
    done = check_checkout(str(cc), "--convention", "cc-log")
    assert (done.returncode, done.stdout) == (0, f"{cc} meets the checkout contract v1 with the cc-log convention\n")
    wrong = check_checkout(str(cc))
    assert wrong.returncode == 1
    assert wrong.stdout.splitlines()[1:] == [
        "  agent/: no file pbench-selfcheck: the worker images' self-check of the demo convention, which the preflight "
        "runs in each of them and which must print `board=True copilot=yes`",
        "  agent/Dockerfile.base and agent/Dockerfile: no line names pbench-selfcheck: one of them must install it "
        "into the worker image (e.g. `COPY bin/pbench-selfcheck /usr/local/bin/`)",
    ]
    demo = json.loads(check_checkout(str(DEMO), "--convention", "cc-log", "--json").stdout)
    assert [m["expected"].split(":")[0] for m in demo["misses"]] == [
        "no file agensh-selfcheck",
        "no line names agensh-selfcheck",
        "no file holds `cc.log`",
    ]
    unknown = check_checkout(str(cc), "--convention", "cc")
    assert (
        unknown.returncode == 2
        and "unknown checkout convention 'cc'; the contract knows cc-log, demo" in unknown.stderr
    )
