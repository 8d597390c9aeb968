"""check checkout: an Agensh checkout against the checkout contract (docs/checkout.md), before anything is created.

    .venv/bin/python -m scripts.cli check-checkout /opt/agensh [--convention NAME] [--baseline] [--json]

Reads the checkout's files only (nothing of it runs) and names every miss with the file and the line or file
expected there: the same check, with the same messages, as the preflight's. `--baseline` checks what a baseline
profile builds; `--convention` the checkout's conventions (the profile's checkout_convention, default
demo). Exits 0 when the checkout meets the contract, 1 with every miss listed, 2 when PATH is no directory.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from model import checkout
from scripts.cli import options

cli = options.typer_app()


@cli.command()
def command(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="the Agensh checkout (a profile's agensh_checkout)")],
    baseline: Annotated[bool, typer.Option("--baseline", help="check what a baseline profile builds")] = False,
    convention: Annotated[
        checkout.Convention,
        typer.Option(
            metavar="NAME",
            parser=checkout.convention,
            help="the checkout's conventions, activity report and self-check (the profile's checkout_convention: "
            f"{', '.join(sorted(checkout.CONVENTIONS))})",
        ),
    ] = checkout.DEFAULT_CONVENTION,  # type: ignore[assignment]  # parsed as a given name is
    as_json: options.Json = False,
) -> int:
    """Reads the checkout's files only and names every miss. Exits 0 when it meets the contract, 1 with every miss
    listed, 2 when PATH is no directory."""
    if not path.is_dir():
        print(f"check-checkout: {path} is not a directory", file=sys.stderr)
        return 2
    misses = checkout.check(path, baseline, convention)
    meets = f"the checkout contract v{checkout.VERSION} with the {convention.name} convention"
    if as_json:
        doc = {
            "checkout": str(path),
            "contract": checkout.VERSION,
            "convention": convention.name,
            "misses": [asdict(m) for m in misses],
        }
        print(json.dumps(doc, indent=2))
    elif misses:
        print(f"{path} misses {len(misses)} thing(s) of {meets}:")
        print("\n".join(f"  {m}" for m in misses))
    else:
        print(f"{path} meets {meets}")
    return 1 if misses else 0
