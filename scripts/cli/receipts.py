"""host-units (scripts/cli/receipts.py): the host units' receipts on this host, and the stale ones removed (`--prune`).

    .venv/bin/python -m scripts.cli host-units [--prune]

Every profile that installs or reuses pbench.slice and the reboot guard keeps a receipt in /var/lib/agensh, named by
its profile and owner (scripts/host/host_units.sh). A receipt is stale when its profile's state is gone while the
receipt stayed (the state lost, `pulumi stack rm --force`): its checkout's stack file is gone and no container of the
profile exists. `--prune` removes each stale receipt as that profile's destroy would (the units go with the last
receipt, never while the slice holds a task or a container), as root; a receipt whose profile still has a container
is never removed. A receipt from before owners were recorded (named by its profile alone) is stale when no container
of its profile exists; one installed from another host is judged there.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from model import contract
from model.project import ROOT
from model.stackfiles import stack_file
from scripts.cli import options
from scripts.lib import privilege

cli = options.typer_app()
SCRIPT = ROOT / "scripts" / "host" / "host_units.sh"
# `<profile>[.<uid>-<hash>]` (components/host_units.py owner; a receipt of an earlier version: the profile alone)
OWNER_RE = re.compile(rf"{contract.PROFILE_RE.pattern}(\.[0-9]+-[0-9a-f]{{12}})?")


@dataclass(frozen=True)
class Receipt:
    owner: str
    profile: str
    user: str
    checkout: str
    from_host: str
    containers: int
    verdict: str  # live, stale, or unknown (installed from another host)

    @classmethod
    def judge(cls, fields: dict[str, Any]) -> Receipt:
        owner = str(fields["owner"])
        profile = str(fields.get("profile") or owner)  # an old receipt is named by its profile alone
        checkout, from_host = str(fields.get("checkout", "")), str(fields.get("from_host", ""))
        listed = subprocess.run(
            ["docker", "ps", "-aq", "--filter", contract.profile_filter(profile)], capture_output=True, text=True
        )
        if listed.returncode:
            raise RuntimeError(f"docker ps: {listed.stderr.strip()}")
        containers = len(listed.stdout.split())
        if containers:
            verdict = "live"
        elif from_host and from_host != socket.gethostname():
            verdict = "unknown"
        elif checkout and stack_file(profile, Path(checkout)).exists():
            verdict = "live"
        else:
            verdict = "stale"
        return cls(owner, profile, str(fields.get("user", "")), checkout, from_host, containers, verdict)

    def line(self) -> str:
        who = f"{self.user or 'an earlier version'}, {self.checkout or 'checkout not recorded'}"
        where = f" on {self.from_host}" if self.from_host else ""
        return f"{self.verdict:7} {self.owner}  (profile {self.profile}, {who}{where}; {self.containers} container(s))"


def receipts() -> list[Receipt]:
    out = subprocess.run(["sh", "-s", "receipts"], input=SCRIPT.read_text(), capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"host_units.sh receipts: {out.stderr.strip()}")
    return [Receipt.judge(json.loads(line)) for line in out.stdout.splitlines() if line.strip()]


@cli.command()
def command(
    prune: Annotated[bool, typer.Option("--prune", help="remove the stale receipts (as root)")] = False,
) -> int:
    """List the host units' receipts on this host with their verdict; with --prune remove the stale ones."""
    try:
        found = receipts()
    except RuntimeError as err:
        print(f"host-units: {err}", file=sys.stderr)
        return 1
    if not found:
        print("host-units: no receipts on this host")
    for r in found:
        print(r.line())
    code = 0
    for r in (r for r in found if prune and r.verdict == "stale"):
        if not OWNER_RE.fullmatch(r.owner):
            print(f"host-units: {r.owner}: not a receipt's name; left alone", file=sys.stderr)
            code = 1
            continue
        try:
            removed = privilege.run(
                ["sh", "-s", "remove"],
                f"removing the stale receipt {r.owner} (/var/lib/agensh)",
                input=f"OWNER={shlex.quote(r.owner)}\n" + SCRIPT.read_text(),
                capture_output=True,
                text=True,
            )
        except privilege.NotRoot as err:
            print(f"host-units: {err}", file=sys.stderr)
            return 1
        print(f"host-units: {r.owner}: {(removed.stdout + removed.stderr).strip()}")
        code |= removed.returncode
    return code
