"""check checkout: an Agensh checkout against the checkout contract (docs/checkout.md), before anything is created.

    .venv/bin/python -m scripts.cli check-checkout /opt/agensh [--convention NAME] [--baseline] [--json]

Reads the checkout's files only (nothing of it runs) and names every miss with the file and the line or file
expected there: the same check, with the same messages, as the preflight's. `--baseline` checks what a baseline
profile builds; `--convention` the checkout's conventions (the profile's checkout_convention, default
demo). Exits 0 when the checkout meets the contract, 1 with every miss listed, 2 when PATH is no directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from model import checkout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.cli check-checkout", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the Agensh checkout (a profile's agensh_checkout)")
    parser.add_argument("--baseline", action="store_true", help="check what a baseline profile builds")
    parser.add_argument(
        "--convention",
        choices=sorted(checkout.CONVENTIONS),
        default=checkout.DEFAULT_CONVENTION,
        help="the checkout's conventions: activity report and self-check (the profile's checkout_convention)",
    )
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    args = parser.parse_args(argv)
    if not args.path.is_dir():
        print(f"check-checkout: {args.path} is not a directory", file=sys.stderr)
        return 2
    misses = checkout.check(args.path, args.baseline, checkout.CONVENTIONS[args.convention])
    meets = f"the checkout contract v{checkout.VERSION} with the {args.convention} convention"
    if args.json:
        doc = {
            "checkout": str(args.path),
            "contract": checkout.VERSION,
            "convention": args.convention,
            "misses": [asdict(m) for m in misses],
        }
        print(json.dumps(doc, indent=2))
    elif misses:
        print(f"{args.path} misses {len(misses)} thing(s) of {meets}:")
        print("\n".join(f"  {m}" for m in misses))
    else:
        print(f"{args.path} meets {meets}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
