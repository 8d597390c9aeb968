"""How the fault harness judges a cell (scripts/lab/faults.py): a fault that cannot be survived is `marked` only when
the run carries its marker and nothing but the task's score and counts differ from the clean run."""

from __future__ import annotations

from model.rundir import DATA_ROOT_FULL
from scripts.lab.faults import FAULTS, Outcome, compare, judge

CLEAN = Outcome(1.0, True, 1, 0, {"t": True}, True, 12)
SCORED_INCOMPLETE = Outcome(None, False, 0, 1, {"t": True}, True, 12)


def test_a_clean_outcome_holds():
    assert judge(compare(CLEAN, CLEAN), [], []) == ("held", "")


def test_a_marked_task_with_nothing_else_lost_is_marked():
    verdict, detail = judge(compare(CLEAN, SCORED_INCOMPLETE), [], ["the data root was full"])
    assert verdict == "marked" and detail == "scored incomplete: the data root was full"


def test_a_lower_score_without_the_marker_is_lost():
    verdict, detail = judge(compare(CLEAN, SCORED_INCOMPLETE), [], [])
    assert verdict == "LOST" and "score: None (clean: 1.0)" in detail


def test_a_marker_does_not_excuse_anything_else():
    leftover = Outcome(None, False, 0, 1, {"t": True}, True, 13)  # a duplicate container
    assert judge(compare(CLEAN, leftover), [], ["full"])[0] == "LOST"
    assert judge(compare(CLEAN, SCORED_INCOMPLETE), ["1 containers left"], ["full"])[0] == "LOST"


def test_only_the_disk_full_fault_can_be_marked():
    assert {n: f.marks for n, f in FAULTS.items() if f.marks} == {"disk-full": DATA_ROOT_FULL}
