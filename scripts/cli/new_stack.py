"""Create or update a profile stack: `stacks/Pulumi.<name>.yaml` plus its encrypted secrets.

    .venv/bin/python -m scripts.cli new-stack cohort-w8 --workers 8 --tasks jgm__pandoc.5caad90 \
        --port-base 24400 --subnet-octet 249

Plain settings go into the stack file (mode 600); passwords are generated once as encrypted config and kept
on re-runs; the gateway settings come from the environment or `~/.pbench-upstream.env` (the environment wins).
Every problem is reported before anything is written.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
import yaml

from model import contract, parts
from model.parts import Part
from model.profile import NAMESPACE, RETIRED, Profile, ProfileError, parse_profile
from model.project import ROOT
from model.stackfiles import plain_settings, policy_config_path, stack_file
from scripts.cli import options
from scripts.cli.destroy import destroy_order
from scripts.setup import copilot_cli

UPSTREAM_ENV = Path("~/.pbench-upstream.env").expanduser()
GATEWAY_KEYS = {"LLM_UPSTREAM": "llm_upstream", "REASONING_EFFORT": "reasoning_effort"}
TOKEN_KEY = "llm_upstream_token"

cli = options.typer_app()


def new_run_id() -> str:
    """`date -u +%Y%m%dt%H%M%Sz`."""
    return datetime.now(UTC).strftime("%Y%m%dt%H%M%Sz")


def read_env_file(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        print(f"warning: {path} is readable by others; it holds the gateway token: chmod 600 {path}", file=sys.stderr)
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip().strip("'\"")
    return out


def gateway(env_file: Path | None) -> dict[str, str]:
    """Gateway settings: the file first, exported values over it (docs/requirements.md R12)."""
    values = read_env_file(env_file) if env_file else {}
    for key in (*GATEWAY_KEYS, contract.MODEL_CREDENTIAL_ENV):
        if os.environ.get(key):
            values[key] = os.environ[key]
    return values


def setting(item: str) -> tuple[str, Any]:
    """A `--set KEY=VALUE`: the value read as JSON (numbers, booleans, lists and maps), else a string ("off" stays
    "off")."""
    if "=" not in item:
        raise ValueError(f"takes KEY=VALUE, got {item!r}")
    key, value = item.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def write_policy_config(stack: str, profile: Profile) -> None:
    """The policy pack's numbers from this profile (`stacks/<stack>.policy.json`, which the pack reads by itself),
    merged into what the file already holds (a user's relaxations stay)."""
    path = policy_config_path(stack)
    config = json.loads(path.read_text()) if path.exists() else {}
    for policy, values in profile.policy_config().items():
        config[policy] = {**(config.get(policy) or {}), **values}
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def pulumi(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pulumi", *args], cwd=ROOT, input=stdin, text=True, capture_output=True, check=check)


@cli.command(context_settings={"allow_extra_args": True})  # the tasks after the first of --tasks
def command(
    ctx: typer.Context,
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            callback=options.profile_stack,
            help="the stack's name; also the profile's unless --set profile=... says otherwise",
        ),
    ],
    kind: Annotated[
        Literal["team", "baseline"] | None, typer.Option(help="a team, or the single-agent baseline")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="the team's size")] = None,
    tasks: Annotated[str | None, typer.Option(metavar="TASK...", help="the task ids, one or more")] = None,
    hours: Annotated[float | None, typer.Option(help="the hours of work per task")] = None,
    port_base: Annotated[int | None, typer.Option(help="the first of the operator ports on 127.0.0.1")] = None,
    subnet_octet: Annotated[int | None, typer.Option(help="X of the profile's 10.X.0.0/16")] = None,
    checkout: Annotated[str | None, typer.Option(metavar="PATH", help="the Agensh checkout (agensh_checkout)")] = None,
    new_run: Annotated[bool, typer.Option("--new-run", help="start a new run id (a fresh launch)")] = False,
    sets: Annotated[
        list[Any] | None,  # (key, value) pairs: Typer takes no list of tuples
        typer.Option("--set", metavar="KEY=VALUE", parser=setting, help="any other profile setting (repeatable)"),
    ] = None,
    env_file: Annotated[str, typer.Option(metavar="FILE", help="the gateway's env file ('none' to ignore it)")] = str(
        UPSTREAM_ENV
    ),
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="PROFILE_FILE",
            help="the settings of this file's `config:` (e.g. stacks/demo.profile.yaml)",
        ),
    ] = None,
) -> int:
    """Validates everything first: a bad argument exits 2 with every problem listed and writes nothing. Plain settings
    go to the stack file (mode 600); passwords are generated once as encrypted config and kept on re-runs; the gateway
    settings come from the environment or the env file (the environment wins)."""
    if ctx.args and tasks is None:
        ctx.fail(f"unexpected arguments: {' '.join(ctx.args)}")
    all_tasks = None if tasks is None else [tasks, *ctx.args]  # --tasks takes every argument after it
    path = stack_file(name)
    doc: dict[str, Any] = yaml.safe_load(path.read_text()) if path.exists() else {}
    doc = doc or {}
    config: dict[str, Any] = dict(doc.get("config") or {})
    prefix = f"{NAMESPACE}:"
    plain = plain_settings(config)
    for key in sorted(set(plain) & set(RETIRED)):  # the stack file of an earlier checkout: drop, and say why
        print(f"new-stack: dropped {key} from {path.name}: {RETIRED[key]}", file=sys.stderr)
        del plain[key], config[f"{NAMESPACE}:{key}"]
    if source:
        given = (yaml.safe_load(Path(source).read_text()) or {}).get("config") or {}
        plain.update({k[len(prefix) :]: v for k, v in given.items() if k.startswith(prefix)})

    gw = gateway(None if env_file == "none" else Path(env_file).expanduser())
    for env_key, key in GATEWAY_KEYS.items():
        if gw.get(env_key):
            plain[key] = gw[env_key]
    plain.setdefault("profile", name)
    for key, value in (
        ("kind", kind),
        ("workers", workers),
        ("tasks", all_tasks),
        ("hours", hours),
        ("port_base", port_base),
        ("subnet_octet", subnet_octet),
        ("agensh_checkout", checkout),
    ):
        if value is not None:
            plain[key] = value
    plain.update(sets or [])
    if new_run or "run_id" not in plain:
        plain["run_id"] = new_run_id()
    bad = sorted(k for k in plain if k in contract.SECRET_KEYS)
    if bad:
        print(
            f"new-stack: {', '.join(bad)} must be secret; it is read from the environment or generated", file=sys.stderr
        )
        return 2

    try:
        profile = parse_profile(plain)
    except ProfileError as err:
        print(f"new-stack: {err}", file=sys.stderr)
        return 2
    if copilot_cli.wanted_by(profile.checkout_dir):  # the pinned CLI, from npm: a version it lacks stops here
        try:
            copilot_cli.image(profile.copilot_version)
        except (copilot_cli.CopilotError, subprocess.CalledProcessError) as err:
            print(f"new-stack: copilot_version {profile.copilot_version}: {err}", file=sys.stderr)
            return 2
    has_token = f"{prefix}{TOKEN_KEY}" in config
    if not has_token and not gw.get(contract.MODEL_CREDENTIAL_ENV):
        print(
            f"new-stack: no gateway token: export {contract.MODEL_CREDENTIAL_ENV} or put it in ~/.pbench-upstream.env "
            "(mode 600)",
            file=sys.stderr,
        )
        return 2

    listed = {s["name"]: s for s in json.loads(pulumi("stack", "ls", "--json").stdout or "[]")}
    before = config.get(f"{prefix}stacks", "one")
    if plain.get("stacks", "one") != before:  # the resources of the one layout would collide with the other's
        holding = [n for n in destroy_order(name, set(listed)) if listed[n].get("resourceCount")]
        if holding:
            print(
                f"new-stack: stacks {before} -> {plain.get('stacks', 'one')}: {', '.join(holding)} still hold "
                f"resources; destroy them first (`make destroy STACK={name}`)",
                file=sys.stderr,
            )
            return 2

    # Everything is valid: write the plain settings, then the secrets through pulumi (encrypted).
    config.update({f"{prefix}{k}": v for k, v in sorted(plain.items())})
    doc["config"] = dict(sorted(config.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_stack_file(path, doc)
    write_policy_config(name, profile)

    if pulumi("stack", "select", name, check=False).returncode != 0:
        pulumi("stack", "init", name)
    generated = []
    for key in contract.GENERATED_SECRETS:
        if f"{prefix}{key}" not in config:
            pulumi("config", "set", "--secret", "-s", name, f"{prefix}{key}", stdin=secrets.token_urlsafe(24))
            generated.append(key)
    token = gw.get(contract.MODEL_CREDENTIAL_ENV)
    current = pulumi("config", "get", "-s", name, f"{prefix}{TOKEN_KEY}", check=False) if has_token else None
    if current is not None and current.returncode != 0:
        print(
            f"new-stack: cannot read the stack's secrets ({current.stderr.strip()}); this stack file was encrypted "
            "with another passphrase (PULUMI_CONFIG_PASSPHRASE / PULUMI_CONFIG_PASSPHRASE_FILE)",
            file=sys.stderr,
        )
        return 2
    if token and (current is None or current.stdout.strip() != token):
        pulumi("config", "set", "--secret", "-s", name, f"{prefix}{TOKEN_KEY}", stdin=token)
    os.chmod(path, 0o600)
    print(f"stack {name}: {path} (run {plain['run_id']}); generated: {', '.join(generated) or 'nothing (kept)'}")
    if profile.stacks == "per-task":
        for part_stack, part in parts.stacks_of(name, profile)[:-1]:
            write_part_stack(name, part_stack, part, part_stack in listed)
        print(f"  and its parts (model/parts.py): {', '.join(s for s, _ in parts.stacks_of(name, profile))}")
    return 0


def write_part_stack(stack: str, part_stack: str, part: Part, exists: bool) -> None:
    """A part stack of a per-task profile: its file names the part and holds the profile's secrets, copied by pulumi
    (encrypted for this stack); the settings stay in the profile's file alone."""
    if not exists:
        pulumi("stack", "init", "--no-select", part_stack)  # the profile's stack stays the selected one
    pulumi("config", "cp", "-s", stack, "-d", part_stack)
    path = stack_file(part_stack)
    doc = yaml.safe_load(path.read_text()) or {}
    secure = {k: v for k, v in (doc.get("config") or {}).items() if isinstance(v, dict) and set(v) == {"secure"}}
    prefix = f"{NAMESPACE}:"
    own = {f"{prefix}{parts.PART_OF_KEY}": stack, f"{prefix}{parts.PART_KEY}": part.task or parts.PLATFORM}
    doc["config"] = {**own, **dict(sorted(secure.items()))}
    write_stack_file(
        path, doc, f"# A part of profile {stack} (model/parts.py), written by new-stack: edit {stack}'s file.\n"
    )


def write_stack_file(path: Path, doc: dict[str, Any], header: str = "") -> None:
    """A stack file, mode 600 from its creation on (it holds encrypted secrets, and the profile's settings)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(header)
        yaml.safe_dump(doc, fh, sort_keys=False)
    os.chmod(path, 0o600)
