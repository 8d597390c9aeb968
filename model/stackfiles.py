"""A profile stack's files: `stacks/Pulumi.<stack>.yaml` (its plain settings; the secrets stay encrypted and are not
read here) and `stacks/<stack>.policy.json`, and the stack's profile read from them without the passphrase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from model.profile import NAMESPACE, Profile, parse_profile
from model.project import ROOT


def stack_file(stack: str, root: Path | None = None) -> Path:
    return (root or ROOT) / "stacks" / f"Pulumi.{stack}.yaml"


def plain_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The plain `agensh:` settings of a stack file's `config:` without the prefix; secrets (`{secure: ...}`) are
    left out, structured settings (cleanroom_digests) kept."""
    prefix = f"{NAMESPACE}:"
    return {
        k[len(prefix) :]: v
        for k, v in config.items()
        if k.startswith(prefix) and not (isinstance(v, dict) and set(v) == {"secure"})
    }


def load_profile(stack: str, root: Path | None = None) -> Profile:
    """A stack's profile from its file in the project at `root`, without the passphrase (the secrets are not part of
    it); ProfileError or FileNotFoundError when there is none."""
    path = stack_file(stack, root)
    if not path.is_file():
        raise FileNotFoundError(
            f"no stack file {path}; create the stack with `.venv/bin/python -m scripts.cli new-stack {stack}` first"
        )
    p = parse_profile(plain_settings((yaml.safe_load(path.read_text()) or {}).get("config") or {}))
    return p.model_copy(update={"agensh_checkout": str(p.checkout_path(root or ROOT))})


def policy_config_path(stack: str) -> Path:
    return ROOT / "stacks" / f"{stack}.policy.json"
