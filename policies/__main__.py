"""Builds the agensh policy pack. Only this file constructs the PolicyPack (its constructor serves forever)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pulumi_policy import PolicyPack  # noqa: E402
from rules import POLICIES, stack_policy_config  # noqa: E402

PolicyPack(name="agensh", policies=POLICIES, initial_config=stack_policy_config())
