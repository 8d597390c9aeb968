"""Subnet claims hold across processes (scripts/lab/sandbox.py): the suite's processes and the fault harness's threads
make sandboxes at once, before any of them has a network to show, and never get the same subnet; a claim ends with
its process."""

from __future__ import annotations

import subprocess
import sys

from model.project import ROOT

# Each process claims from the same candidates, holds its claim until told to end, and prints what it got.
CLAIM = """
import ipaddress, sys
from scripts.lab.sandbox import claim_subnet
got = claim_subnet(ipaddress.IPv4Network(f"10.31.{y}.0/24") for y in range(230, 255))
print(got, flush=True)
sys.stdin.read()
"""


def claimer() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CLAIM], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_live_processes_never_share_a_subnet_and_a_dead_ones_claim_is_free_again(docker_engine: None):
    first, second = claimer(), claimer()
    try:
        got = [p.stdout.readline().strip() for p in (first, second)]  # type: ignore[union-attr]
        assert "None" not in got and got[0] != got[1], got
    finally:
        second.communicate("")
    third = claimer()
    try:
        again = third.stdout.readline().strip()  # type: ignore[union-attr]
        assert again != got[0], (got, again)  # the first still holds its claim
    finally:
        third.communicate("")
        first.communicate("")
