"""The checkout contract (model/checkout.py): the demo's checkout meets it, and each miss of a broken copy is named by
its file and the line or file expected, from the checkout's files alone."""

from __future__ import annotations

import shutil
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from model import checkout
from model.checkout import AGENT_BASE, CONVENTIONS, DEMO_LOG, KICKOFF, SHARED_IMAGES, WORKER_IMAGE, Miss, check
from model.project import DEMO_CHECKOUT, ROOT
from model.records import Session
from tests.checkouts import cc_log

DEMO = ROOT / DEMO_CHECKOUT
SELFCHECK = CONVENTIONS["demo"].selfcheck


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the demo's checkout to break."""
    return Path(shutil.copytree(DEMO, tmp_path / "checkout"))


def expected(misses: list[Miss]) -> dict[str, str]:
    return {m.file: m.expected for m in misses}


def test_the_demo_checkout_meets_the_contract():
    assert check(DEMO) == []
    assert check(DEMO, baseline=True) == []


def test_a_baseline_needs_only_its_images(copy: Path):
    team_only = ("mini-router", "board", "secret-service", "bootstrap")
    for role in team_only:
        (copy / SHARED_IMAGES[role].dockerfile).unlink()
    assert check(copy, baseline=True) == []
    assert [m.file for m in check(copy)] == [SHARED_IMAGES[r].dockerfile for r in team_only]


def test_each_miss_is_named(copy: Path):
    (copy / SHARED_IMAGES["mini-router"].dockerfile).unlink()
    (copy / KICKOFF.path).unlink()
    worker = copy / WORKER_IMAGE.dockerfile
    worker.write_text(worker.read_text().replace("ARG TASK_IMAGE\n", ""))
    for path in (copy / AGENT_BASE.context).rglob(SELFCHECK.command):
        path.unlink()
    misses = expected(check(copy))
    assert misses.keys() == {"mini-router/Dockerfile", "prompts/kickoff.md", "agent/Dockerfile", "agent/"}
    assert misses["mini-router/Dockerfile"] == "missing: the Dockerfile of the mini-router image (context mini-router/)"
    assert misses["prompts/kickoff.md"].startswith("missing: the kickoff message")
    assert misses["agent/Dockerfile"].startswith("no line `ARG TASK_IMAGE`: the project passes the task's cleanroom")
    assert misses["agent/"].startswith("no file pbench-selfcheck: the worker images' self-check of the demo convention")
    assert "`board=True copilot=yes`" in misses["agent/"]


def test_a_self_check_no_dockerfile_installs_is_named(copy: Path):
    for dockerfile in (AGENT_BASE.dockerfile, WORKER_IMAGE.dockerfile):
        path = copy / dockerfile
        path.write_text(path.read_text().replace(f" bin/{SELFCHECK.command}", "").replace(SELFCHECK.command, "x"))
    assert [str(m) for m in check(copy)] == [
        "agent/Dockerfile.base and agent/Dockerfile: no line names pbench-selfcheck: one of them must install it into "
        "the worker image (e.g. `COPY bin/pbench-selfcheck /usr/local/bin/`)"
    ]


def test_the_activity_report_is_read_for_in_the_worker_files(copy: Path):
    """The demo's driver writes its report; a report it does not write is named with its convention."""
    other = replace(CONVENTIONS["demo"], name="other", report=replace(DEMO_LOG, name="x-log", sign="x.log"))
    (miss,) = check(copy, conv=other)
    assert miss.file == "agent/" and miss.expected.startswith("no file holds `x.log`: in the x-log activity report")
    (copy / "agent" / "acp_driver.py").unlink()
    assert [m.file for m in check(copy)] == ["agent/"]
    assert "one `activity {json}` line each, to the worker's container log" in check(copy)[0].expected


def test_the_cc_log_checkout_meets_the_contract_with_its_convention_only(tmp_path: Path):
    cc = cc_log(tmp_path / "cc")
    assert check(cc, conv=CONVENTIONS["cc-log"]) == []
    assert check(cc, baseline=True, conv=CONVENTIONS["cc-log"]) == []
    assert [str(m) for m in check(cc)] == [  # the demo's self-check is not in it
        "agent/: no file pbench-selfcheck: the worker images' self-check of the demo convention, which the preflight "
        "runs in each of them and which must print `board=True copilot=yes`",
        "agent/Dockerfile.base and agent/Dockerfile: no line names pbench-selfcheck: one of them must install it into "
        "the worker image (e.g. `COPY bin/pbench-selfcheck /usr/local/bin/`)",
    ]
    assert [m.expected.split(":")[0] for m in check(DEMO, conv=CONVENTIONS["cc-log"])] == [
        "no file agensh-selfcheck",
        "no line names agensh-selfcheck",
        "no file holds `cc.log`",
    ]


def test_the_cc_log_checkout_is_made_from_the_demo_or_says_what_moved(tmp_path: Path):
    demo = Path(shutil.copytree(DEMO, tmp_path / "demo"))
    (demo / "agent" / "bin" / "pbench-worker").write_text("#!/bin/sh\nexec python3 /opt/elsewhere.py\n")
    with pytest.raises(AssertionError, match="pbench-worker no longer holds '/opt/agensh/acp_driver.py'"):
        cc_log(tmp_path / "cc", demo)


def test_a_convention_is_named_or_refused_with_the_known_ones():
    assert checkout.convention("cc-log").report.file == "/home/agent/.agensh/cc.log"
    with pytest.raises(ValueError, match="unknown checkout convention 'cc'; the contract knows cc-log, demo"):
        checkout.convention("cc")


def test_a_path_that_is_no_directory():
    assert check(DEMO / "README.md") == [Miss(str(DEMO / "README.md"), "not a directory: the Agensh checkout")]


def test_arg_lines_as_docker_reads_them():
    text = "# ARG COMMENTED\nARG A\narg B=1 C\n  ARG D=x\nRUN echo ARG E\n"
    assert checkout.declared_args(text) == {"A", "B", "C", "D"}


def test_the_counted_kinds_are_fields_of_a_session():
    for conv in CONVENTIONS.values():
        assert set(asdict(conv.report.counted)) <= set(Session.model_fields)
