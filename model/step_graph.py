"""The step graph: what runs after what, read from the step table (model/steps.py, each step's `scope`, `after` and
`when`) and from the few nodes that are resources rather than steps (NODES: the engine's parts, the platform
services, a task's team).

Everything that needs the order reads it here: the experiment's parts declare their resources in `order` with the
dependencies of `after` (components/walk.py); `make status` names a task's phase by its latest step done
(`phases`); the launch hands over to the next task when `handover` has its receipt (scripts/cli/launch.py); a part
stack's update refuses until `needed_before` has receipts; and the table in docs/design.md is rendered from it
(`python -m scripts.cli steps --update docs/design.md`; tests/unit/test_step_graph.py fails when it is stale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from model.profile import Profile
from model.steps import STEPS, Scope, StepDef, When

SCOPES: tuple[Scope, ...] = ("platform", "task", "record")
TaskRef = Literal["same", "previous", "every"]


@dataclass(frozen=True)
class Node:
    """A node of the graph that is not a step: resources a component declares (`by`)."""

    suffix: str
    scope: Scope
    by: str
    after: tuple[str, ...] = ()
    when: When = "always"
    does: str = ""


Item = StepDef | Node

HOST_UNITS = Node(
    "host-units",
    "platform",
    "components/host_units.py",
    when="host-units",
    does="`pbench.slice` and the reboot guard, on this host (and on each swarm node)",
)
NETWORKS = Node("networks", "platform", "components/networks.py", when="one-host", does="the profile's Docker networks")
IMAGES = Node(
    "images",
    "platform",
    "components/images.py",
    does="every image of the image plan (`model/image_plan.py`); on a swarm, published to its registry",
)
MODEL_PATH = Node(
    "model-path",
    "platform",
    "components/platform.py",
    after=("manifest-start", "host-units"),
    does="the services on the model path (role table: `model_path`): the egress proxy, the stand-in model",
)
SERVICES = Node(
    "services",
    "platform",
    "components/platform.py",
    after=("preflight-model",),
    does="the other platform services, each after those before it in the role table's start order: MySQL, "
    "Gitea, Mattermost, board, token service, bootstrap",
)
TEAM = Node(
    "team",
    "task",
    "components/team.py",
    after=("seed|baseline-seed",),
    does="one router per worker, routers started and workers created stopped; a baseline's worker and its "
    "snapshot sidecar",
)
NODES: tuple[Node, ...] = (HOST_UNITS, NETWORKS, IMAGES, MODEL_PATH, SERVICES, TEAM)
ITEMS: tuple[Item, ...] = (*STEPS, *NODES)
BY_SUFFIX: dict[str, Item] = {i.suffix: i for i in ITEMS}


@dataclass(frozen=True)
class Ref:
    """An arrow's end: a node, of the same task, the previous task or every task (for a task's node)."""

    suffix: str
    task: TaskRef = "same"

    @property
    def item(self) -> Item:
        return BY_SUFFIX[self.suffix]


@dataclass(frozen=True)
class Run:
    """What decides which nodes a run has."""

    kind: Literal["team", "baseline"] = "team"
    engine: Literal["docker", "swarm"] = "docker"
    evaluated: bool = True
    host_units: bool = True

    @classmethod
    def of(cls, p: Profile) -> Run:
        return cls(p.kind, p.engine, not p.skip_eval, p.host_units != "off")

    def has(self, item: Item) -> bool:
        return {
            "always": True,
            "swarm": self.engine == "swarm",
            "one-host": self.engine == "docker",
            "host-units": self.host_units,
            "team": self.kind == "team",
            "baseline": self.kind == "baseline",
            "evaluated": self.evaluated,
        }[item.when]


def parse(arrow: str) -> tuple[tuple[str, ...], TaskRef]:
    """`a|b@previous` as (("a", "b"), "previous")."""
    names, _, task = arrow.partition("@")
    return tuple(names.split("|")), task or "same"  # type: ignore[return-value]


def after(item: Item, run: Run) -> list[Ref]:
    """What `item` runs after in `run`: each arrow's first alternative the run has (an arrow to nothing is none)."""
    refs = []
    for arrow in item.after:
        names, task = parse(arrow)
        present = [n for n in names if run.has(BY_SUFFIX[n])]
        if present:
            refs.append(Ref(present[0], task))
    return refs


def tasks_of(ref: Ref, task: str | None, tasks: list[str]) -> list[str | None]:
    """Whose node an arrow from `task`'s node (None: a platform's or the record's) names: None for a node of the
    platform or the record, else the same task, the previous one (none for the first) or every task."""
    if ref.item.scope != "task":
        return [None]
    if ref.task == "every":
        return list(tasks)
    if ref.task == "previous":
        assert task is not None
        k = tasks.index(task)
        return [tasks[k - 1]] if k else []
    return [task]


def order(run: Run, scope: Scope) -> list[Item]:
    """The run's nodes of one scope, each after what it runs after (table order where the graph leaves it free)."""
    todo = [i for i in ITEMS if i.scope == scope and run.has(i)]
    done: list[Item] = []
    while todo:
        ready = next(
            i for i in todo if all(r.item in done or r.item.scope != scope or r.task != "same" for r in after(i, run))
        )
        todo.remove(ready)
        done.append(ready)
    return done


def _ancestors(ref: Ref, run: Run) -> set[str]:
    seen: set[str] = set()
    stack = [ref.item]
    while stack:
        for r in after(stack.pop(), run):
            if r.item.scope == ref.item.scope and r.task == "same" and r.suffix not in seen:
                seen.add(r.suffix)
                stack.append(r.item)
    return seen


def needed_before(scope: Scope, run: Run) -> list[Ref]:
    """The steps of other stacks (scopes, or other tasks) that a part stack of `scope` follows: what its update
    waits for, read from their receipts. An arrow implied by another (the model check, before the platform's last
    check) and an arrow to a resource (it has no receipt; the steps after it do) are left out."""
    crossing = [
        r
        for i in order(run, scope)
        for r in after(i, run)
        if (r.item.scope != scope or r.task != "same") and isinstance(r.item, StepDef)
    ]
    implied = {a for r in crossing for a in _ancestors(r, run)}
    return list(dict.fromkeys(r for r in crossing if r.suffix not in implied))


def handover(run: Run) -> StepDef:
    """The step of task k whose receipt lets task k+1 begin (its arrow `@previous`)."""
    (ref,) = [r for r in needed_before("task", run) if r.task == "previous"]
    assert isinstance(ref.item, StepDef)
    return ref.item


def phases(run: Run) -> list[StepDef]:
    """A task's steps that name a phase of `make status`, latest first."""
    return [i for i in reversed(order(run, "task")) if isinstance(i, StepDef) and i.phase]
