"""migrate-steps: move a profile's stacks to today's step commands and inputs, without running anything.

    .venv/bin/python -m scripts.cli migrate-steps STACK [--dry-run]

Before the step launcher (scripts/step.sh), a step resource's `create` was `<interpreter> -m scripts.<program>
<args>` and its `delete` the same with the delete's argument (LEGACY). pulumi-command takes a changed `create` or
`delete` as an update, and its update runs the new create command: the first `up` after upgrading would run every
completed step once more (each replaying its receipt), and the state would keep an interpreter's path until then.
This rewrites those two inputs, in the inputs and the outputs the state holds of every step resource of every stack
of the profile (its part stacks too), to the step's commands of today (model/steps.py), through `pulumi stack
export` and `pulumi stack import`: the engine then finds nothing changed and runs nothing, and a later destroy runs
the new delete commands. Nothing else in the state changes; the backend keeps the state before the import (a file
backend as `<stack>.json.bak` beside it). Run it once, while no update runs (the import takes the stack's lock);
again it finds nothing to change. A stack with pending operations (an update killed and not yet resumed) is refused:
the import would drop them.

The same way, it drops the input fields the steps no longer have (RETIRED_INPUTS) from each such step's `AGENSH_INPUT`
in the state, and rewrites the inputs digest of that step's receipt in the run directory to the digest of its inputs
without them (only where the receipt's digest is the one of the inputs the state held): a step Pulumi runs again later
with the same inputs then finds its receipt and does nothing, as before (a second kickoff would post the task again).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from model import steps
from model.project import ROOT
from model.rundir import RunDir
from scripts.cli import options
from scripts.cli.destroy import existing_stacks
from scripts.lib.step import digest, write_atomic

# A step's command of before: `<interpreter> -m <call>`, the interpreter any path.
LEGACY_COMMAND = re.compile(r"(?P<python>.+) -m (?P<call>scripts\.\w+(?: [\w-]+)?)")
# Every `<call>` the step resources ran before the launcher -> (the step's suffix, whether it is the delete). Frozen:
# the programs may move since, and these are what stacks made then hold.
LEGACY: dict[str, tuple[str, bool]] = {
    "scripts.profile_data create": ("profile-data", False),
    "scripts.profile_data delete": ("profile-data", True),
    "scripts.swarm_nodes create": ("nodes", False),
    "scripts.swarm_nodes delete": ("nodes", True),
    "scripts.preflight host": ("preflight-host", False),
    "scripts.manifest start": ("manifest-start", False),
    "scripts.preflight model": ("preflight-model", False),
    "scripts.preflight platform": ("preflight-platform", False),
    "scripts.seed": ("seed", False),
    "scripts.wake": ("wake", False),
    "scripts.kickoff": ("kickoff", False),
    "scripts.export": ("export", False),
    "scripts.reminders": ("reminders", False),
    "scripts.nudges": ("nudges", False),
    "scripts.shutdown": ("shutdown", False),
    "scripts.baseline seed": ("baseline-seed", False),
    "scripts.baseline stop": ("baseline-stop", False),
    "scripts.evaluate": ("evaluate", False),
    "scripts.score": ("score", False),
    "scripts.preserve task": ("preserve", False),
    "scripts.manifest finish": ("manifest-finish", False),
    "scripts.report step": ("report", False),
    "scripts.preserve run": ("preserve-run", False),
    "scripts.preserve guard": ("preserve-run", True),
}
# Input fields the steps' inputs have lost, by the step's suffix. Frozen: what stacks made before hold. `services`
# (until 9f97ffc): whether the team's members were a swarm's services; the programs ask Docker since.
RETIRED_INPUTS: dict[str, tuple[str, ...]] = {s: ("services",) for s in ("wake", "kickoff", "nudges", "shutdown")}
COMMAND_TYPE = "command:local:Command"
INPUT = "AGENSH_INPUT"


@dataclass(frozen=True)
class Redigest:
    """A step resource whose inputs lost retired fields; its receipt, whose inputs digest covered them, and the digest
    of its inputs without them."""

    step: str  # the resource's name
    dropped: tuple[str, ...]
    path: Path
    old: str
    new: str


cli = options.typer_app()


def current(urn: str, command: str) -> str | None:
    """Today's command for a step's command of before, or None when `command` is not one (left as it is)."""
    m = LEGACY_COMMAND.fullmatch(command)
    if not m or m["call"] not in LEGACY:
        return None
    suffix, delete = LEGACY[m["call"]]
    if not urn.endswith(f"-{suffix}"):  # a command resource of another kind that happens to look like a step's
        return None
    step = steps.by_suffix(suffix)
    return step.delete_command if delete else step.create_command


def commands(res: dict[str, Any]) -> list[str]:
    """A step resource's commands of before replaced by today's, in place; one line per change."""
    changed = []
    for field in ("create", "delete"):
        old = (res.get("inputs") or {}).get(field)
        new = current(res["urn"], old) if isinstance(old, str) else None
        if new is None:
            continue
        for props in (res["inputs"], res.get("outputs") or {}):
            if props.get(field) == old:
                props[field] = new
        changed.append(f"{res['urn'].rsplit('::', 1)[-1]} {field}: {old} -> {new}")
    return changed


def retire(res: dict[str, Any]) -> Redigest | None:
    """A step resource's retired input fields dropped from its AGENSH_INPUT, in place, which is then what today's
    program declares for the rest (its inputs model's JSON); its receipt's digests. An input that is a secret (none of
    these steps' is), not JSON, or not valid without the fields is left as it is."""
    name = res["urn"].rsplit("::", 1)[-1]
    suffix = next((s for s in RETIRED_INPUTS if name.endswith(f"-{s}")), None)
    text = ((res.get("inputs") or {}).get("environment") or {}).get(INPUT)
    if suffix is None or not isinstance(text, str):
        return None
    step = steps.by_suffix(suffix)
    try:
        held = json.loads(text)
        if not isinstance(held, dict):
            return None
        dropped = tuple(f for f in RETIRED_INPUTS[suffix] if f in held)
        inputs = step.inputs.model_validate({k: v for k, v in held.items() if k not in dropped}) if dropped else None
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return None
    if inputs is None:
        return None
    for props in (res["inputs"], res.get("outputs") or {}):
        env = props.get("environment") or {}
        if env.get(INPUT) == text:
            env[INPUT] = inputs.model_dump_json()
    return Redigest(
        step=name,
        dropped=dropped,
        path=RunDir(Path(held["run_dir"])).receipt(step.name, held.get("task_id")),  # both there: validated
        old=digest({"inputs": held}),
        new=digest({"inputs": inputs.model_dump(mode="json")}),
    )


def rewrite(deployment: dict[str, Any]) -> tuple[list[str], list[Redigest]]:
    """Every step command of before and every retired input field in an exported deployment replaced, in place: one
    line per change, and the receipts whose digests follow."""
    changed, receipts = [], []
    for res in deployment["deployment"].get("resources") or []:
        if res.get("type") != COMMAND_TYPE:
            continue
        changed += commands(res)
        if (r := retire(res)) is not None:
            changed.append(f"{r.step} {INPUT}: without {', '.join(r.dropped)}")
            receipts.append(r)
    return changed, receipts


def redigest(r: Redigest) -> str:
    """A receipt's inputs digest moved to the inputs without the retired fields; what was done, in a line. A receipt
    with another digest (its step ran with other inputs, or failed) is left: that step would work again anyway."""
    try:
        receipt = json.loads(r.path.read_text())
    except FileNotFoundError:
        return f"{r.path}: no receipt (the step has not run)"
    except (OSError, ValueError) as err:
        return f"{r.path}: left as it is ({err})"
    if receipt.get("inputs_digest") != r.old:
        return f"{r.path}: left as it is (another inputs digest)"
    write_atomic(r.path, {**receipt, "inputs_digest": r.new}, mode=os.stat(r.path).st_mode & 0o777)
    return f"{r.path}: inputs digest {r.old} -> {r.new}"


def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pulumi", *args, "--non-interactive"], cwd=ROOT, capture_output=True, text=True)


def migrate(stack: str, dry_run: bool) -> bool:
    """One stack: True once its state holds no step command of before."""
    exported = pulumi("stack", "export", "-s", stack)
    if exported.returncode != 0:
        print(f"migrate-steps: {stack}: pulumi stack export: {exported.stderr.strip()}", file=sys.stderr)
        return False
    deployment = json.loads(exported.stdout)
    changed, receipts = rewrite(deployment)
    for line in changed:
        print(f"migrate-steps: {stack}: {line}")
    pending = deployment["deployment"].get("pending_operations") or []
    if changed and pending:
        print(
            f"migrate-steps: {stack}: {len(pending)} pending operations of an interrupted update, which an import "
            f"would drop: resume it to its end with the checkout it started from, or forget them (`pulumi refresh -s "
            f"{stack} --clear-pending-creates`), then migrate",
            file=sys.stderr,
        )
        return False
    if not changed or dry_run:
        print(f"migrate-steps: {stack}: " + ("nothing to change" if not changed else "not changed (--dry-run)"))
        return True
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=f"{stack}.") as f:  # mode 600
        json.dump(deployment, f)
        f.flush()
        imported = pulumi("stack", "import", "-s", stack, "--file", f.name)
    if imported.returncode != 0:
        print(f"migrate-steps: {stack}: pulumi stack import: {imported.stderr.strip()}", file=sys.stderr)
        return False
    for r in receipts:
        print(f"migrate-steps: {stack}: {redigest(r)}")
    print(f"migrate-steps: {stack}: {len(changed)} step inputs moved to today's")
    return True


@cli.command()
def command(
    stack: options.ProfileStack,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would change, change nothing")] = False,
) -> int:
    """Rewrites the step commands and retired input fields in the state of every stack of the profile (`pulumi stack
    export` and `import`) and the receipts that follow, running nothing; again it finds nothing to change. Exits 1
    when a stack could not be moved (the reason printed)."""
    stacks = existing_stacks(stack, "migrate-steps", "--non-interactive")
    if stacks is None:
        return 2
    return 0 if all([migrate(stack, dry_run) for stack in stacks]) else 1
