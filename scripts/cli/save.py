"""save: copy and verify every run of a profile's data by hand, e.g. before a destroy that refused because a run never
reached its own copy step (the guard names this command, with the profile's paths).

    .venv/bin/python -m scripts.cli save <data root>/<profile> <traj root>
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from model.rundir import CopyDir, ProfileDir
from scripts.cli import options
from scripts.lib.copies import mirror

cli = options.typer_app()


def profile_dir(value: Path) -> Path:
    """A directory agensh made for a profile's data (its marker), never any directory."""
    pd = ProfileDir(value.resolve())
    if not pd.created_marker.is_file():
        raise typer.BadParameter(f"{value}: not a profile's data directory (no {pd.created_marker.name} in it)")
    return pd.path


@cli.command()
def command(
    data: Annotated[
        Path,
        typer.Argument(
            metavar="PROFILE_DIR",
            callback=profile_dir,
            help="the profile's data: <data root>/<profile>",
            show_default=False,
        ),
    ],
    traj_root: Annotated[
        Path,
        typer.Argument(
            metavar="TRAJ_ROOT", help="the copies' root (the profile's traj_root)", show_default=False, file_okay=False
        ),
    ],
) -> int:
    """Each run of the profile copied to <traj root>/<profile>.<run id> and verified file by file (SHA-256), one line
    per run. Exits 1 when a copy has problems (listed)."""
    if traj_root.resolve().is_relative_to(data):
        raise typer.BadParameter(f"{traj_root} lies in the profile's data it copies", param_hint="TRAJ_ROOT")
    pd = ProfileDir(data)
    failed = 0
    for rd in pd.runs():
        copy = CopyDir.of(str(traj_root), pd.path.name, rd.path.name)
        t = mirror(rd, pd.run_archives(rd.path.name), copy, None)
        failed += bool(t.problems)
        print(f"{rd.path.name}: {t.files} files to {copy.path}: " + ("; ".join(t.problems) or "verified"))
    return 1 if failed else 0
