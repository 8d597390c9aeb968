"""The report step of a run (step `report`): `report.html` once the manifest is finished (and again whenever the results
change), rendered by scripts/lib/report_page.py; the operator's command for any runs is `python -m scripts.cli report`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from model import steps
from model.records import ReportResult
from model.rundir import RunDir
from model.step_inputs import Inputs
from scripts.lib.report_page import ReportError, report
from scripts.lib.step import StepFailed, load_inputs, mode_of, progress, run_step


def step(env: Mapping[str, str]) -> int:
    """The report step of a run (after the manifest is finished): `report.html`, again whenever the results change."""
    a = load_inputs(Inputs, env)
    rd = RunDir(Path(a.run_dir))

    def body() -> ReportResult:
        try:
            page = report([rd.path])
        except ReportError as err:
            raise StepFailed(str(err)) from None
        progress(f"report: {page.name} written")
        return ReportResult(page=str(page))

    return run_step(
        steps.REPORT,
        rd,
        None,
        a,
        body,
        reads={"index": rd.index, "manifest": rd.manifest},
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of(
        "run_report",
        argv,
        steps.REPORT.args,
        hint="; a report of run directories is `.venv/bin/python -m scripts.cli report RUN_DIR...`",
    )
    return step(env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
