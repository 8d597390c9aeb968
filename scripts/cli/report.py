"""report: `report.html`, one self-contained page (no external fetch) of a run, or of several runs side by side.

    .venv/bin/python -m scripts.cli report RUN_DIR [RUN_DIR...] [-o OUT.html]

One run: written to `RUN_DIR/report.html` unless `-o` says otherwise; several runs need `-o`. What the page shows:
scripts/lib/report_page.py (the report step of every run renders the same page).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from scripts.cli import options
from scripts.lib.report_page import ReportError, report

cli = options.typer_app()


@cli.command()
def command(
    ctx: typer.Context,
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR", help="the run directories")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="the page (default: RUN_DIR/report.html for one run)"),
    ] = None,
) -> int:
    """Prints the page's path; exits 2 when a run directory cannot be read."""
    if len(run_dirs) > 1 and output is None:
        ctx.fail("a report across several runs needs -o OUT.html")
    try:
        out = report(run_dirs, output)
    except ReportError as err:
        print(f"report: {err}", file=sys.stderr)
        return 2
    print(out)
    return 0
