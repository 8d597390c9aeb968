"""report: `report.html`, one self-contained page (no external fetch) of a run, or of several runs side by side.

    .venv/bin/python -m scripts.cli report RUN_DIR [RUN_DIR...] [-o OUT.html]

One run: written to `RUN_DIR/report.html` unless `-o` says otherwise; several runs need `-o`. What the page shows:
scripts/lib/report.py (the report step of every run renders the same page).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scripts.lib.report import ReportError, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.cli report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("-o", "--output", type=Path, help="the page (default: RUN_DIR/report.html for one run)")
    args = parser.parse_args(argv)
    if len(args.run_dirs) > 1 and args.output is None:
        parser.error("a report across several runs needs -o OUT.html")
    try:
        out = report(args.run_dirs, args.output)
    except ReportError as err:
        print(f"report: {err}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
