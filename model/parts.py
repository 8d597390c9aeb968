"""Which stacks a profile runs as, and which part of the profile each one declares (the `stacks` setting).

`stacks: one`: the profile's stack declares everything. Simplest, and fast enough up to some 32 workers x 5 tasks.
`stacks: per-task`: the file backend rewrites a stack's whole state after every step, so one stack's update grows
with the square of its resources (docs/performance.md). The profile then runs as several stacks, in this order:

    <stack>.platform     the graph's nodes of scope `platform` (model/step_graph.py)
    <stack>.<task slug>  one per task: the nodes of scope `task`
    <stack>              the nodes of scope `record`, and the provenance record

`scripts/cli/launch.py` updates them in that order (task k+1 begins at the receipt the graph hands over at, task k's
shutdown, so an evaluation overlaps the next task); `scripts/cli/destroy.py` destroys the record's first and the
platform's last. The launch's preview declares the whole profile in the profile's stack (`WHOLE_PREVIEW_ENV`), so the
policy pack sees all of it before anything exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from model import contract
from model.profile import Profile

Kind = Literal["whole", "platform", "task", "record"]
PLATFORM: Kind = "platform"
PART_OF_KEY = "part_of"  # a part stack's own config: the profile's stack it belongs to
PART_KEY = "part"  # ... and which part it is: `platform`, or a task id
WHOLE_PREVIEW_ENV = "AGENSH_WHOLE_PREVIEW"  # set by the launch for its preview of a per-task profile


@dataclass(frozen=True)
class Part:
    """What one stack declares of its profile."""

    kind: Kind
    task: str | None = None

    @property
    def platform(self) -> bool:
        return self.kind in ("whole", "platform")

    @property
    def record(self) -> bool:
        return self.kind in ("whole", "record")

    def declares(self, task: str) -> bool:
        return self.kind == "whole" or (self.kind == "task" and self.task == task)


WHOLE = Part("whole")


def platform_stack(stack: str) -> str:
    return f"{stack}.{PLATFORM}"


def task_stack(stack: str, task: str) -> str:
    return f"{stack}.{contract.task_slug(task)}"


def stacks_of(stack: str, p: Profile) -> list[tuple[str, Part]]:
    """A profile's stacks in launch order: its own; or, per task, the platform, each task, then its own (the
    record)."""
    if p.stacks == "one":
        return [(stack, WHOLE)]
    return [
        (platform_stack(stack), Part(PLATFORM)),
        *((task_stack(stack, t), Part("task", t)) for t in p.tasks),
        (stack, Part("record")),
    ]


def of_part_config(stack: str, part_of: str, part: str, tasks: list[str]) -> Part:
    """The part a part stack's own config names, refused when it does not match the stack's name or the profile."""
    found = Part(PLATFORM) if part == PLATFORM else Part("task", part)
    if found.kind == "task" and part not in tasks:
        raise ValueError(
            f"stack {stack}: task {part!r} is not in profile {part_of}'s tasks; destroy this stack "
            f"(`pulumi destroy -s {stack}`) or add the task back"
        )
    expected = platform_stack(part_of) if found.kind == PLATFORM else task_stack(part_of, part)
    if stack != expected:
        raise ValueError(f"stack {stack}: its config names the part {part!r} of {part_of}, whose stack is {expected}")
    return found
