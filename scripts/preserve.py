"""preserve: copy a run's results and its agents' archives out of the profile's data, and verify both copies.

`task` (after a task is scored, or shut down when evaluation is off): the task's directory and its agents' archive
directories. `run` (last): the whole run directory and every archive of the run. Every file is copied and then
verified by the SHA-256 of the original and of the copy; `SHA256SUMS.json` in the copy lists them. Only regular
files are copied and nothing is followed: agents can write into their archive directories, so a symlink or a FIFO
planted there is skipped (and listed), never read.
The copying and verifying is scripts/lib/copies.py's. `pulumi destroy` refuses to delete a profile's data while a
run's copy is missing or differs (profile_data uses its `problems()`). By hand, `python -m scripts.cli save
PROFILE_DIR TRAJ_ROOT` copies and verifies every run of a profile (e.g. before a destroy refused because a run never
reached its own copy step).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from model import steps
from model.records import PreserveResult
from model.rundir import CopyDir, RunDir
from model.step_inputs import PreserveInputs
from scripts.lib.copies import mirror
from scripts.lib.step import StepFailed, load_inputs, mode_of, progress, run_step


def preserve(a: PreserveInputs) -> PreserveResult:
    rd, copy = RunDir(Path(a.run_dir)), CopyDir(Path(a.copy_dir))
    archives = {agent: Path(d) for agent, d in a.archive_dirs.items()}
    what = a.task_id or "the run"
    progress(f"preserve: copying {'the task' if a.task_id else what} and {len(archives)} archives to {copy.path.name}")
    t = mirror(rd, archives, copy, a.task_id)
    if t.problems:
        raise StepFailed(f"copy of {what} not verified: {'; '.join(t.problems[:5])}", problems=t.problems)
    progress(
        f"preserve: {t.files} files ({t.bytes / 2**20:.1f} MiB) copied and verified"
        + (f"; {len(t.skipped)} links or special files skipped" if t.skipped else "")
    )
    return PreserveResult(copy_dir=str(copy.path), files=t.files, bytes=t.bytes, verified=True, skipped=t.skipped)


def guard(a: PreserveInputs, env: Mapping[str, str]) -> int:
    """At destroy (this step is deleted first): refuse while the profile's data may not be deleted."""
    from scripts.profile_data import refusal

    reason = refusal(a.guard, env) if a.guard else None
    if reason:
        print(f"preserve: {reason}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode = mode_of("preserve", argv, steps.PRESERVE_TASK.args, steps.PRESERVE_RUN.args, steps.PRESERVE_RUN.delete)
    a = load_inputs(PreserveInputs, env)
    if mode == steps.PRESERVE_RUN.delete:
        return guard(a, env)
    step = steps.PRESERVE_RUN if a.task_id is None else steps.PRESERVE_TASK
    return run_step(step, RunDir(Path(a.run_dir)), a.task_id, a, lambda: preserve(a))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
