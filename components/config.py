"""Reads the profile and its secrets from the stack's `agensh:` config (the Pulumi side of the model)."""

from __future__ import annotations

from pathlib import Path

import pulumi
from pulumi.runtime.config import get_config_env

from model import contract
from model.profile import NAMESPACE, Profile, from_config_strings, parse_profile


def load(project_dir: Path) -> tuple[Profile, dict[str, pulumi.Output[str]]]:
    """The validated profile (its checkout path made absolute), and each secret as a secret Output.

    A bad profile stops the program with every problem listed, before any resource is registered.
    """
    prefix = f"{NAMESPACE}:"
    secret_keys = set(contract.SECRET_KEYS)
    values = {k[len(prefix) :]: v for k, v in get_config_env().items() if k.startswith(prefix)}
    plain = {k: v for k, v in values.items() if k not in secret_keys}
    profile = parse_profile(from_config_strings(plain))
    profile = profile.model_copy(update={"agensh_checkout": str(profile.checkout_path(project_dir))})
    cfg = pulumi.Config(NAMESPACE)
    missing = [k for k in secret_keys if k not in values]
    if missing:
        raise pulumi.RunError(
            f"secret config {', '.join(sorted(prefix + k for k in missing))} missing; "
            f"run `.venv/bin/python -m scripts.cli new-stack {pulumi.get_stack()}` to generate passwords and read the "
            "gateway token"
        )
    secrets = {k: cfg.require_secret(k) for k in sorted(secret_keys)}
    return profile, secrets
