"""Create or update a profile stack: `stacks/Pulumi.<name>.yaml` plus its encrypted secrets.

    .venv/bin/python -m scripts.cli new-stack cohort-w8 --workers 8 --tasks jgm__pandoc.5caad90 \
        --port-base 24400 --subnet-octet 249

Plain settings go into the stack file (mode 600); passwords are generated once as encrypted config and kept
on re-runs; the gateway settings come from the environment or `~/.pbench-upstream.env` (the environment wins).
Every problem is reported before anything is written.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from model import contract, parts
from model.parts import Part
from model.profile import NAMESPACE, RETIRED, Profile, ProfileError, parse_profile
from model.project import ROOT
from model.stackfiles import plain_settings, policy_config_path, stack_file
from scripts.cli.destroy import destroy_order
from scripts.setup import copilot_cli

UPSTREAM_ENV = Path("~/.pbench-upstream.env").expanduser()
GATEWAY_KEYS = {"LLM_UPSTREAM": "llm_upstream", "REASONING_EFFORT": "reasoning_effort"}
TOKEN_KEY = "llm_upstream_token"


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


def parse_set(items: list[str]) -> dict[str, Any]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"new-stack: --set takes key=value, got {item!r}")
        key, value = item.split("=", 1)
        try:  # JSON for numbers, booleans, lists and maps; anything else is a string ("off" stays "off")
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m scripts.cli new-stack",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("name", help="stack name; also the profile suffix unless --set profile=... says otherwise")
    ap.add_argument("--kind", choices=["team", "baseline"])
    ap.add_argument("--workers", type=int)
    ap.add_argument("--tasks", nargs="+")
    ap.add_argument("--hours", type=float)
    ap.add_argument("--port-base", type=int)
    ap.add_argument("--subnet-octet", type=int)
    ap.add_argument("--checkout", help="the Agensh checkout (agensh_checkout)")
    ap.add_argument("--new-run", action="store_true", help="start a new run id (a fresh launch)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other profile setting")
    ap.add_argument("--env-file", default=str(UPSTREAM_ENV), help="gateway env file ('none' to ignore it)")
    ap.add_argument(
        "--from",
        dest="source",
        metavar="PROFILE_FILE",
        help="take the settings from this file's `config:` (e.g. stacks/demo.profile.yaml)",
    )
    args = ap.parse_args(argv)
    if not contract.PROFILE_RE.fullmatch(args.name):
        print(
            f"new-stack: stack name {args.name!r}: use lowercase letters, digits and hyphens, starting with a letter "
            "or digit",
            file=sys.stderr,
        )
        return 2

    path = stack_file(args.name)
    doc: dict[str, Any] = yaml.safe_load(path.read_text()) if path.exists() else {}
    doc = doc or {}
    config: dict[str, Any] = dict(doc.get("config") or {})
    prefix = f"{NAMESPACE}:"
    plain = plain_settings(config)
    for key in sorted(set(plain) & set(RETIRED)):  # the stack file of an earlier checkout: drop, and say why
        print(f"new-stack: dropped {key} from {path.name}: {RETIRED[key]}", file=sys.stderr)
        del plain[key], config[f"{NAMESPACE}:{key}"]
    if args.source:
        source = (yaml.safe_load(Path(args.source).read_text()) or {}).get("config") or {}
        plain.update({k[len(prefix) :]: v for k, v in source.items() if k.startswith(prefix)})

    gw = gateway(None if args.env_file == "none" else Path(args.env_file).expanduser())
    for env_key, key in GATEWAY_KEYS.items():
        if gw.get(env_key):
            plain[key] = gw[env_key]
    plain.setdefault("profile", args.name)
    for flag, key in (
        ("kind", "kind"),
        ("workers", "workers"),
        ("tasks", "tasks"),
        ("hours", "hours"),
        ("port_base", "port_base"),
        ("subnet_octet", "subnet_octet"),
        ("checkout", "agensh_checkout"),
    ):
        if getattr(args, flag) is not None:
            plain[key] = getattr(args, flag)
    plain.update(parse_set(args.set))
    if args.new_run or "run_id" not in plain:
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
        holding = [n for n in destroy_order(args.name, set(listed)) if listed[n].get("resourceCount")]
        if holding:
            print(
                f"new-stack: stacks {before} -> {plain.get('stacks', 'one')}: {', '.join(holding)} still hold "
                f"resources; destroy them first (`make destroy STACK={args.name}`)",
                file=sys.stderr,
            )
            return 2

    # Everything is valid: write the plain settings, then the secrets through pulumi (encrypted).
    config.update({f"{prefix}{k}": v for k, v in sorted(plain.items())})
    doc["config"] = dict(sorted(config.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_stack_file(path, doc)
    write_policy_config(args.name, profile)

    if pulumi("stack", "select", args.name, check=False).returncode != 0:
        pulumi("stack", "init", args.name)
    generated = []
    for key in contract.GENERATED_SECRETS:
        if f"{prefix}{key}" not in config:
            pulumi("config", "set", "--secret", "-s", args.name, f"{prefix}{key}", stdin=secrets.token_urlsafe(24))
            generated.append(key)
    token = gw.get(contract.MODEL_CREDENTIAL_ENV)
    current = pulumi("config", "get", "-s", args.name, f"{prefix}{TOKEN_KEY}", check=False) if has_token else None
    if current is not None and current.returncode != 0:
        print(
            f"new-stack: cannot read the stack's secrets ({current.stderr.strip()}); this stack file was encrypted "
            "with another passphrase (PULUMI_CONFIG_PASSPHRASE / PULUMI_CONFIG_PASSPHRASE_FILE)",
            file=sys.stderr,
        )
        return 2
    if token and (current is None or current.stdout.strip() != token):
        pulumi("config", "set", "--secret", "-s", args.name, f"{prefix}{TOKEN_KEY}", stdin=token)
    os.chmod(path, 0o600)
    print(f"stack {args.name}: {path} (run {plain['run_id']}); generated: {', '.join(generated) or 'nothing (kept)'}")
    if profile.stacks == "per-task":
        for part_stack, part in parts.stacks_of(args.name, profile)[:-1]:
            write_part_stack(args.name, part_stack, part, part_stack in listed)
        print(f"  and its parts (model/parts.py): {', '.join(s for s, _ in parts.stacks_of(args.name, profile))}")
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


if __name__ == "__main__":
    sys.exit(main())
