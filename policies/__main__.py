"""Builds the agensh policy pack. Only this file constructs the PolicyPack (its constructor serves forever)."""

from pulumi_policy import PolicyPack

from policies.rules import POLICIES, stack_policy_config

PolicyPack(name="agensh", policies=POLICIES, initial_config=stack_policy_config())
