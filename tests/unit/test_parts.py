"""A per-task profile's stacks by name (model/parts.py): the part a stack's config names must be its own, destroy
finds every part by name, and the launch's parts never get the `--config` the preview saved."""

from __future__ import annotations

import pytest

from model import parts
from model.parts import Part
from scripts.cli.destroy import destroy_order
from scripts.cli.launch import without_config

TASKS = ["jgm__pandoc.5caad90", "ajeetdsouza__zoxide.67ca1bc"]


def test_a_part_stack_config_must_match_its_name():
    assert parts.of_part_config("p.platform", "p", "platform", TASKS) == Part("platform")
    assert parts.of_part_config("p.jgm-pandoc-5caad90", "p", TASKS[0], TASKS) == Part("task", TASKS[0])
    with pytest.raises(ValueError, match="whose stack is p.jgm-pandoc-5caad90"):
        parts.of_part_config("p.other", "p", TASKS[0], TASKS)
    with pytest.raises(ValueError, match="not in profile p's tasks"):
        parts.of_part_config("p.x", "p", "owner__x.1234567", TASKS)


def test_destroy_takes_the_record_first_every_task_and_the_platform_last():
    existing = {"p", "p.platform", "p.jgm-pandoc-5caad90", "p.dropped-task", "pq", "pq.platform", "other"}
    assert destroy_order("p", existing) == ["p", "p.dropped-task", "p.jgm-pandoc-5caad90", "p.platform"]
    assert destroy_order("pq", existing) == ["pq", "pq.platform"]
    assert destroy_order("p", {"p"}) == ["p"]  # one stack
    assert destroy_order("p", {"p.platform"}) == ["p.platform"]  # a launch stopped after the platform
    assert destroy_order("absent", existing) == []


def test_the_parts_updates_do_not_get_the_config_the_preview_saved():
    args = ["--refresh", "--config", "agensh:eval_attempt=2", "-c", "a=b", "--config=c=d", "--parallel", "4"]
    assert without_config(args) == ["--refresh", "--parallel", "4"]
