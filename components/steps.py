"""The experiment's steps as command resources: each runs one program of `scripts/` with its inputs as JSON.

Every step is idempotent and leaves a receipt (stdout, and a file in the run directory); later steps read
earlier receipts through resource outputs or the run directory. Nothing runs during preview. A failed step
fails the `up`; the next `up` re-runs only the steps that did not complete.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pulumi
from pulumi_command import local

PROJECT = Path(__file__).resolve().parent.parent


class Step(local.Command):
    """`python -m scripts.<program> [args]` with AGENSH_INPUT (JSON, no secrets) and secrets as their own env."""

    def __init__(self, name: str, program: str, inputs: dict[str, Any], opts: pulumi.ResourceOptions,
                 args: str = "", secrets: dict[str, pulumi.Input[str]] | None = None,
                 triggers: list[Any] | None = None, delete: str | None = None, once_per_run: str | None = None):
        """`once_per_run=<run id>`: a gate of the launch (preflight, the first manifest) runs once per run id;
        later profile edits do not re-run it (a new run id does)."""
        if once_per_run is not None:
            triggers = [*(triggers or []), once_per_run]
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["environment"]))
        super().__init__(
            name,
            create=f"{self.python()} -m scripts.{program} {args}".strip(),
            delete=delete,
            dir=str(PROJECT),
            environment={"AGENSH_INPUT": pulumi.Output.from_input(inputs).apply(lambda v: json.dumps(v, sort_keys=True)),
                         "PYTHONUNBUFFERED": "1", **(secrets or {})},
            triggers=triggers,
            opts=opts,
        )


    @staticmethod
    def python() -> str:
        """The project's interpreter (the program runs in its virtualenv)."""
        return sys.executable


def receipt(stdout: pulumi.Output[str]) -> pulumi.Output[dict[str, Any]]:
    """The JSON receipt a step printed last on stdout."""
    return stdout.apply(lambda s: json.loads(s.strip().splitlines()[-1]) if s and s.strip() else {})
