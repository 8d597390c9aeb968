"""The fault matrix's cheap cells (scripts/lab/faults.py; the whole matrix is `make faults`), a second `up` that plans
no change, and one profile destroyed beside another that runs on: the other sees no change. One bare profile
(`beside`), up once for the last three tests, is the one whose second `up` plans nothing, the one that sees no change
while another is stopped and destroyed, and the one beside the kills. The cells' runs have the tests' task budget."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from model import contract
from model.project import ROOT
from scripts.lab import faults
from tests.conftest import require
from tests.integration.test_demo import BUDGET_HOURS
from tests.integration.test_step_migration import CODE, put_code

# The last commit whose experiment declared every resource as its own child, before the platform, each task and the
# record were components of their own (components/walk.py: their children carry an alias to the experiment).
PARTS_LEGACY = "0024632a5a6f54326c690cd58d5a793c96d84f81"
PARTS = {"agensh:index:PlatformPart", "agensh:index:TaskPart"}  # a bare profile's (no record without steps)
# what the demo's shape scores and leaves when nothing goes wrong (the clean run of `make faults` measures it)
CLEAN = faults.Outcome(
    score=1.0, complete=True, completed=1, failed=0, preserved={faults.TASK: True}, index_terminal=True, containers=12
)


def bare_sandbox(tag: str) -> faults.Sandbox:
    """A sandbox of the demo's bare topology (no steps), not yet created; `remove` cleans it up."""
    return faults.Sandbox(Path(tempfile.mkdtemp(prefix=f"agensh-faults-{tag}-")), tag, run_steps=False)


def remove(s: faults.Sandbox) -> None:
    s.cleanup()
    shutil.rmtree(s.tmp, ignore_errors=True)


@pytest.fixture
def bare(pulumi_engine: str, base_image: str):
    """Sandboxes of the demo's bare topology (no steps); each is destroyed and removed after the test."""
    made: list[faults.Sandbox] = []

    def make(tag: str) -> faults.Sandbox:
        s = bare_sandbox(tag)
        made.append(s)
        s.create()
        return s

    yield make
    for s in made:
        remove(s)


def up(s: faults.Sandbox, *extra: str) -> None:
    proc = s.up(*extra)
    assert faults.finish(s, proc) == 0, s.last_log(30)


@pytest.fixture(scope="module")
def beside(pulumi_engine: str, base_image: str) -> Iterator[faults.Sandbox]:
    """One bare profile up for the module's tests (each checks it saw no change of its own), destroyed and removed
    after the last, also when one failed. Its up is by the code of PARTS_LEGACY, and the copy then upgraded in place
    to this checkout's, so every plan of it also checks that a stack made before the parts were components keeps
    every resource (their aliases)."""
    s = bare_sandbox("beside")
    try:
        s.create()
        archive = subprocess.run(["git", "archive", PARTS_LEGACY, *CODE], cwd=ROOT, capture_output=True)
        require(archive.returncode == 0, f"commit {PARTS_LEGACY[:7]} in this checkout's history (a full clone)")
        legacy = s.tmp / "legacy"
        legacy.mkdir()
        subprocess.run(["tar", "-x", "-C", str(legacy)], input=archive.stdout, check=True)
        put_code(s.proj, legacy)
        up(s)
        put_code(s.proj, ROOT)
        # the upgrade's plan: the parts' components created, every resource found where it was by its alias
        plan = s.preview("--json")
        changes = {step["urn"]: step["op"] for step in json.loads(plan.stdout)["steps"]}
        assert {op for op in changes.values() if op != "same"} == {"create"}, plan.stdout[-2000:]
        made = {urn.split("::")[2].rsplit("$", 1)[-1] for urn, op in changes.items() if op == "create"}
        assert made == PARTS, plan.stdout[-2000:]
        up(s)
        yield s
    finally:
        remove(s)


@pytest.fixture(autouse=True)
def short_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cells' runs have the tests' task budget (tests/integration/test_demo.py's BUDGET_HOURS: the same steps,
    the reminder still sent, 36 s less of waiting for the deadline per run)."""
    monkeypatch.setattr(faults, "sandbox", functools.partial(faults.sandbox, hours=BUDGET_HOURS))


# The reboot comes as the export starts waiting, at the kickoff, so its recovery is taken from the team's window: at
# the tests' budget the deadline comes 74 s after the kickoff, and beside the suite's other runs the recovery once took
# 125 s (the task was lost). Twice the budget: 218 s from the kickoff to the deadline.
REBOOT_HOURS = 2 * BUDGET_HOURS


@pytest.mark.slow(450)
def test_a_reboot_then_a_full_disk_while_archiving(
    pulumi_engine: str, base_image: str, monkeypatch: pytest.MonkeyPatch
):
    """One run on a data root of its own (a small tmpfs): the host goes down as the export starts waiting (the
    session dies, the reboot guard stops the profile's containers) and is recovered with `pulumi up --refresh`; the
    data root then fills while the workers seal their archives, and is recovered by making room and the same `up`.
    It scores what a clean run scores, with verified copies, and nothing left behind."""
    monkeypatch.setattr(faults, "sandbox", functools.partial(faults.sandbox, hours=REBOOT_HOURS))
    verdict = faults.run_sequence(["reboot@export", "disk-full@shutdown"], CLEAN)
    assert verdict.verdict == "held", verdict


@pytest.mark.slow(310)
def test_a_data_root_full_while_the_team_works_marks_the_task(pulumi_engine: str, base_image: str):
    """The data root (a small tmpfs of the run's own) fills as the export starts waiting for the deadline, while the
    team works: it cannot push, which no recovery brings back, so the run says so. The task is marked DATA_ROOT_FULL,
    scored incomplete and counted failed; after making room and the same launch, nothing else differs from a clean
    run: the copies verified, nothing left running, destroy leaving nothing."""
    verdict = faults.run_sequence(["disk-full@export"], CLEAN, stacks="one")  # the other cells: a stack per task
    assert verdict.verdict == "marked", verdict  # only where the task holds the marker and all else held


@pytest.mark.slow(300)
def test_a_second_up_plans_no_change(beside):
    """Routers and workers carry a memory ceiling; the one Docker fills in (swap) is given, so nothing differs. The
    first up was by the code of before the parts were components: the aliases find each resource where it was."""
    s = beside  # up once, by the fixture
    plan = s.preview("--diff", "--expect-no-changes")
    assert plan.returncode == 0, plan.stdout[-2000:]
    memory = {
        c: json.loads(subprocess.run(["docker", "inspect", c], capture_output=True, text=True).stdout)[0]["HostConfig"]
        for c in s.labelled()["containers"]
    }
    ceilings = [(h["Memory"], h["MemorySwap"]) for h in memory.values() if h["Memory"]]
    assert len(ceilings) == 4 and all(m == swap for m, swap in ceilings)  # 2 routers, 2 workers: no swap beyond


@pytest.mark.slow(150)
def test_down_and_destroy_beside_another_profile_leave_it_untouched(beside, bare):
    """Two demo-shaped profiles on one host share the pulled images (the real Gitea and MariaDB). `make down` of one
    stops all its containers and keeps its data; the documented `pulumi up --refresh` brings its platform back (its
    routers and workers are the steps' to start: the wake step, or the watchdog while the team works); destroying it
    then ends cleanly and removes none of the shared images; and the other's containers, images and plan do not
    change through any of it."""
    a, b = beside, bare("gone")
    up(b)
    before = a.footprint()
    assert len(before.containers) == CLEAN.containers and before.tags  # the bare topology: the same containers
    running = {n for n, (_, state, _, _) in b.footprint().containers.items() if state == "running"}
    down = subprocess.run(["bash", "scripts/host/down.sh", b.profile], cwd=b.proj, capture_output=True, text=True)
    assert down.returncode == 0, down.stdout + down.stderr
    assert running and not any(state == "running" for _, state, _, _ in b.footprint().containers.values())
    assert (b.data / b.profile).is_dir()  # its data kept
    assert before.changes(a.footprint()) == []
    up(b, "--refresh")
    routers = {"/" + contract.member_name(b.profile, faults.TASK, "router", k) for k in (1, 2)}
    again = {n for n, (_, state, _, _) in b.footprint().containers.items() if state == "running"}
    assert running - routers and running - routers <= again
    assert b.destroy() == ""
    assert before.changes(a.footprint()) == []  # the same containers (ids, states, starts), networks, image tags
    plan = a.preview("--expect-no-changes")
    assert plan.returncode == 0, plan.stdout[-2000:]


@pytest.mark.slow(340)
def test_kills_at_preview_seed_shutdown_and_evaluation_and_a_hanging_model(beside):
    """One run meets, in order: its whole launch session killed while the launch's preview declares the stack and
    again while the seed step works, the model hanging on every agent's next request after the kickoff, the session
    killed while the shutdown seals the archives and again while the evaluator runs; each time `pulumi cancel` and
    the same launch again. It scores what a clean run scores, with the same counts, verified copies, and nothing left
    behind; and another profile up beside it all the while sees no change (containers, networks, image tags). The
    profile runs as a stack per task (model/parts.py), so the kills hit the platform's, the task's and the launch
    between them."""
    other = beside
    cells = ["sigkill@preview", "sigkill@seed", "model-hang@kickoff", "sigkill@shutdown", "sigkill@evaluate"]
    verdict = faults.run_sequence(cells, CLEAN, beside=other)
    assert verdict.verdict == "held", verdict
