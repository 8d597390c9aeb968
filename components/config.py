"""Reads the profile, its secrets and the part this stack declares from the stack's `agensh:` config (the Pulumi side
of the model). A part stack of a per-task profile (model/parts.py) holds only its part and the secrets; its profile
is the profile stack's file, so the settings live in one place."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi
from pulumi.runtime.config import get_config_env

from model import checkout, contract, parts
from model.parts import Part
from model.profile import NAMESPACE, Profile, ProfileError, from_config_strings, parse_profile
from model.stackfiles import load_profile


def load(project_dir: Path) -> tuple[Profile, dict[str, pulumi.Output[str]], Part]:
    """The validated profile (its checkout path made absolute), each secret as a secret Output, and the part.

    A bad profile stops the program with every problem listed, before any resource is registered.
    """
    prefix = f"{NAMESPACE}:"
    secret_keys = set(contract.SECRET_KEYS)
    values = {k[len(prefix) :]: v for k, v in get_config_env().items() if k.startswith(prefix)}
    stack = pulumi.get_stack()
    if parts.PART_OF_KEY in values:
        part_of = values[parts.PART_OF_KEY]
        if not contract.PROFILE_RE.fullmatch(part_of):
            raise pulumi.RunError(
                f"stack {stack}: {prefix}{parts.PART_OF_KEY} {part_of!r} is not a profile stack's name"
            )
        try:
            profile = load_profile(part_of)
            part = parts.of_part_config(stack, part_of, values.get(parts.PART_KEY, ""), profile.tasks)
        except (FileNotFoundError, ProfileError, ValueError) as err:
            raise pulumi.RunError(f"stack {stack}: {err}") from None
        if profile.stacks != "per-task":
            raise pulumi.RunError(f"stack {stack}: profile {part_of} runs as one stack (stacks: one); destroy this one")
    else:
        plain = {k: v for k, v in values.items() if k not in secret_keys}
        profile = parse_profile(from_config_strings(plain))
        whole = profile.stacks == "one" or os.environ.get(parts.WHOLE_PREVIEW_ENV) == "1"
        if whole and profile.stacks != "one" and not pulumi.runtime.is_dry_run():
            raise pulumi.RunError(f"{parts.WHOLE_PREVIEW_ENV} is for the launch's preview; unset it for an update")
        part = parts.WHOLE if whole else Part("record")
    profile = profile.model_copy(update={"agensh_checkout": str(profile.checkout_path(project_dir))})
    # the images are declared from the checkout's files: one that does not meet the contract stops the program here,
    # with every miss, rather than as a traceback halfway through the images
    if problem := checkout.refusal(profile.checkout_dir, profile.kind == "baseline", profile.checkout_convention):
        raise pulumi.RunError(f"{prefix}agensh_checkout: {problem}")
    cfg = pulumi.Config(NAMESPACE)
    missing = [k for k in secret_keys if k not in values]
    if missing:
        raise pulumi.RunError(
            f"secret config {', '.join(sorted(prefix + k for k in missing))} missing; "
            f"run `.venv/bin/python -m scripts.cli new-stack {values.get(parts.PART_OF_KEY, stack)}` to generate "
            "passwords and read the gateway token"
        )
    secrets = {k: cfg.require_secret(k) for k in sorted(secret_keys)}
    return profile, secrets, part
