"""Builds the agensh policy pack. Only this file constructs the PolicyPack (its constructor serves forever).

The engine starts the pack in `policies/`; the project is found by name through the venv (model/project.py)."""

from pulumi_policy import PolicyPack

try:
    from policies.rules import POLICIES, stack_policy_config
except ModuleNotFoundError as err:  # a venv that `make setup` has not named the checkout in yet
    raise RuntimeError(f"the policy pack cannot import the project ({err}): run `make setup` once") from err

PolicyPack(name="agensh", policies=POLICIES, initial_config=stack_policy_config())
