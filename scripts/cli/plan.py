"""plan: how many hosts a swarm profile needs and where each container goes, before anything is created.

    .venv/bin/python -m scripts.cli plan cohort-w120                       # the stack stacks/Pulumi.cohort-w120.yaml
    .venv/bin/python -m scripts.cli plan stacks/demo-swarm.profile.yaml    # a profile file (its `config:`)
    .venv/bin/python -m scripts.cli plan STACK --workers 120 --node-memory-gib 512 --node-cpus 64 [--containers]

`--workers` and `--node-*` ask "what if": the team size, and the size of every node (the manager keeps its role).
Exits 1 when the plan does not fit the nodes (the same refusal `pulumi up` and the policy pack give), 2 on a bad
profile.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from model import contract, placement
from model.profile import Profile, ProfileError, parse_profile
from model.stackfiles import plain_settings, stack_file
from model.topology import Layout
from scripts.cli import options

cli = options.typer_app()


def raw_profile(source: str) -> dict[str, Any]:
    """The `agensh:` settings of a stack name or a profile file (secrets are not needed and not read)."""
    path = Path(source) if Path(source).is_file() else stack_file(source)
    if not path.is_file():
        raise typer.BadParameter(f"{source!r} is neither a profile file nor a stack (no {path})", param_hint="SOURCE")
    settings = plain_settings((yaml.safe_load(path.read_text()) or {}).get("config") or {})
    return {k: v for k, v in settings.items() if k not in contract.SECRET_KEYS}  # a profile file may hold them plain


def what_if(raw: dict[str, Any], workers: int | None, memory_gib: float | None, cpus: float | None) -> dict[str, Any]:
    raw = dict(raw)
    if workers is not None:
        raw["workers"] = workers
        admins = int(raw.get("administrators", Profile.model_fields["administrators"].default))
        needed = contract.mm_max_users_needed(workers, len(raw.get("tasks") or []), admins)
        raw["mm_max_users_per_team"] = max(int(raw.get("mm_max_users_per_team", 0)), needed)
    if (memory_gib or cpus) and raw.get("swarm"):
        raw["swarm"] = dict(
            raw["swarm"],
            nodes=[
                dict(n, **({"memory_gib": memory_gib} if memory_gib else {}), **({"cpus": cpus} if cpus else {}))
                for n in raw["swarm"]["nodes"]
            ],
        )
    return raw


def hosts_line(p: Profile) -> str:
    size, needed = placement.reference_node(p.swarm), placement.hosts_needed(p)  # type: ignore[arg-type]
    if needed is None:
        return placement.needs(p)
    return f"{needed} (the platform's node and {needed - 1} more of {size.memory_gib:g} GiB / {size.cpus:g} CPUs)"


def report(p: Profile, made: placement.Plan, containers: bool) -> str:
    s = p.swarm
    assert s is not None
    pair = placement.pair_load(p, s)
    agents_gib = p.workers * contract.MEASURED_AGENT_MB / contract.GIB_MB
    lines = [
        f"profile {p.profile}: {p.workers} workers x {len(p.tasks)} task(s); a pair (worker {p.worker_memory_gib} GiB "
        f"+ router {p.router_memory_gib} GiB ceilings) counts {pair.memory_mb} MB and {pair.cpus:g} CPUs; "
        f"slice {p.slice_memory_percent}%, overcommit x{s.memory_overcommit:g}",
        f"a real agent measured {contract.MEASURED_AGENT_MB} MB working "
        f"(Copilot CLI {contract.OFFLINE_ACP_COPILOT_VERSION}): {agents_gib:.1f} GiB of agents per task before "
        "the model's own work; the ceilings bound what it may grow to",
        f"hosts needed: {hosts_line(p)}",
        "",
        f"{'node':<10} {'role':<8} {'memory':>9} {'cpus':>6} {'limit':>6} {'pairs':>6}  platform  workers",
    ]
    for n in made.nodes:
        lines.append(
            f"{n.node.name:<10} {n.node.role:<8} {n.capacity.memory_mb:>7}MB {n.capacity.cpus:>6g} {n.limit:>6} "
            f"{len(n.members):>6}  {'yes' if n.platform else '-':<8}  {_ranges(n.members) or '-'}"
        )
    if made.unplaced:
        lines.append(f"DOES NOT FIT: workers {_ranges(made.unplaced)} have no node; add hosts or raise the limits")
    if containers:
        lines.append("")
        for c in Layout.of(p).placements:
            if c.role in ("router", "worker") and c.index in made.unplaced:
                continue
            lines.append(f"{c.name:<60} {made.node_of(c.role, c.index)}")
    return "\n".join(lines)


def _ranges(numbers: list[int]) -> str:
    out, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(f"{start}" if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out)


@cli.command()
def command(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="a stack name or a profile file")],
    workers: Annotated[int | None, typer.Option(help="what if the team had this many workers")] = None,
    node_memory_gib: Annotated[float | None, typer.Option(help="what if every node had this much memory")] = None,
    node_cpus: Annotated[float | None, typer.Option(help="what if every node had this many CPUs")] = None,
    containers: Annotated[bool, typer.Option("--containers", help="list every container with its node")] = False,
) -> int:
    """Exits 1 when the plan does not fit the nodes (the refusal `pulumi up` and the policy pack give), 2 on a bad
    profile or one that runs on one Docker host."""
    raw = what_if(raw_profile(source), workers, node_memory_gib, node_cpus)
    try:
        p = parse_profile(raw)
    except ProfileError as err:
        fits_only = all(k == "swarm.nodes" and "do not fit" in m for k, m in err.problems)
        if not fits_only:
            print(f"plan: {err}", file=sys.stderr)
            return 2
        p = Profile.model_validate(raw)  # valid but too large for its nodes: show the plan and refuse it
    if p.engine != "swarm" or p.swarm is None:
        print(f"plan: profile {p.profile} runs on one Docker host (engine: docker); nothing to place", file=sys.stderr)
        return 2
    made = placement.plan(p)
    print(report(p, made, containers))
    return 0 if made.fits else 1
