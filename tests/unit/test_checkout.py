"""The checkout contract (model/checkout.py): the demo's checkout meets it, and each miss of a broken copy is named by
its file and the line or file expected, from the checkout's files alone."""

from __future__ import annotations

import shutil
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from model import checkout
from model.checkout import AGENT_BASE, DEMO_LOG, KICKOFF, SELFCHECK, SHARED_IMAGES, WORKER_IMAGE, Miss, check
from model.project import ROOT
from model.records import Session

DEMO = ROOT / "stacks" / "demo"


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
    assert misses["agent/"].startswith("no file pbench-selfcheck: ") and "`board=True copilot=yes`" in misses["agent/"]


def test_a_self_check_no_dockerfile_installs_is_named(copy: Path):
    for dockerfile in (AGENT_BASE.dockerfile, WORKER_IMAGE.dockerfile):
        path = copy / dockerfile
        path.write_text(path.read_text().replace(f" bin/{SELFCHECK.command}", "").replace(SELFCHECK.command, "x"))
    assert [str(m) for m in check(copy)] == [
        "agent/Dockerfile.base and agent/Dockerfile: no line names pbench-selfcheck: one of them must install it into "
        "the worker image (e.g. `COPY bin/pbench-selfcheck /usr/local/bin/`)"
    ]


def test_the_activity_report_is_read_for_in_the_worker_files(copy: Path):
    """The demo's driver writes the session's version; a report it does not write is named with its convention."""
    other = replace(DEMO_LOG, name="cc-log", version_field="agentVersionInHome")
    (miss,) = check(copy, report=other)
    assert miss.file == "agent/" and miss.expected.startswith("no file writes `agentVersionInHome`: in the cc-log")
    (copy / "agent" / "acp_driver.py").unlink()
    assert [m.file for m in check(copy)] == ["agent/"]
    assert "`activity {json}`" in check(copy)[0].expected


def test_a_path_that_is_no_directory():
    assert check(DEMO / "README.md") == [Miss(str(DEMO / "README.md"), "not a directory: the Agensh checkout")]


def test_arg_lines_as_docker_reads_them():
    text = "# ARG COMMENTED\nARG A\narg B=1 C\n  ARG D=x\nRUN echo ARG E\n"
    assert checkout.declared_args(text) == {"A", "B", "C", "D"}


def test_the_counted_kinds_are_fields_of_a_session():
    assert set(asdict(DEMO_LOG.counted)) <= set(Session.model_fields)
