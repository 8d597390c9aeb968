"""manifest: `run_manifest.json`, written before the first task starts and rewritten at the end.

`start` records the provenance (profile and its hash, project and Agensh checkout revisions with a dirty
flag, the checkout contract's version, ProgramBench version, image ids, host resources, requested tasks, the
scheduled and the actual start) and refuses a dirty Agensh checkout unless the profile's `allow_dirty` escape is
set. The actual start of a scheduled
launch is the time its systemd service began (its `launch.json`); a launch by hand began when the manifest was
first written. `finish` adds the completed/failed counts and the headline
from ProgramBench's `aggregate` (the denominator is the requested task list, never the index's line count).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

from model import steps
from model.checkout import VERSION as CHECKOUT_CONTRACT
from model.records import (
    Launch,
    Manifest,
    ManifestFinish,
    ManifestStart,
    PreserveResult,
    ShutdownResult,
    read_index,
    read_record,
)
from model.rundir import RunDir
from model.step_inputs import ManifestInputs
from scripts.lib.host import host_resources, revision
from scripts.lib.step import StepFailed, load_inputs, mode_of, now, run_step, write_atomic


def read_manifest(rd: RunDir) -> Manifest | None:
    return read_record(rd.manifest, Manifest)


def start(a: ManifestInputs) -> ManifestStart:
    rd = RunDir(Path(a.run_dir))
    checkout = revision(Path(a.checkout))
    if checkout.dirty and not a.profile.get("allow_dirty"):
        raise StepFailed(
            f"the Agensh checkout {checkout.path} has uncommitted changes; commit them, or set "
            "agensh:allow_dirty true to record the dirty state and go on",
            checkout=checkout.model_dump(),
        )
    existing = read_manifest(rd)
    written = existing.written if existing else now()  # a resumed run keeps when it was first recorded
    launch = Launch.model_validate_json(rd.launch_record.read_text()) if rd.launch_record.exists() else None
    manifest = Manifest(
        written=written,
        state="running",
        profile=a.profile,
        profile_digest=a.profile_digest,
        project=revision(Path(a.project_dir)),
        checkout=checkout,
        checkout_contract=CHECKOUT_CONTRACT,
        programbench_version=version("programbench"),
        images=a.images,
        host=host_resources(),
        requested_task_ids=a.profile["tasks"],
        copy_dir=a.copy_dir,
        scheduled_start=a.start_at,
        actual_start=launch.started if launch else written,
        launched_by=launch.unit if launch else None,
    )
    write_atomic(rd.manifest, manifest)
    return ManifestStart(manifest=manifest)


def finish(a: ManifestInputs) -> ManifestFinish:
    from programbench.submission import aggregate, benchmark_instances

    rd = RunDir(Path(a.run_dir))
    manifest = read_manifest(rd)
    if manifest is None:
        raise StepFailed(f"no {rd.manifest}: the run never started")
    requested = manifest.requested_task_ids
    rows = read_index(rd.index)
    scores = {t: r.score for t, r in rows.items() if t in requested and r.status == "scored" and r.score is not None}
    failed = sorted(t for t in requested if t not in scores)
    copies = {t: steps.result_of(rd, steps.PRESERVE_TASK, t, PreserveResult) for t in requested}
    shutdowns = [r for t in requested if (r := steps.result_of(rd, steps.SHUTDOWN, t, ShutdownResult))]
    versions = {w: s.copilot_version for r in shutdowns for w, s in r.sessions.items() if s.copilot_version}
    manifest = manifest.model_copy(
        update={
            "preserved": {t: bool(c and c.verified) for t, c in copies.items()},
            "state": "finished",
            "finished": now(),
            "completed": len(scores),
            "failed": len(failed),
            "failed_task_ids": failed,
            "scores": scores,
            "copilot_versions": versions,
            "headline_requested": aggregate(scores, len(requested)).as_dict() if scores else None,
            "headline_benchmark": aggregate(scores, len(benchmark_instances())).as_dict() if scores else None,
        }
    )
    write_atomic(rd.manifest, manifest)
    return ManifestFinish(completed=len(scores), failed=len(failed), scores=scores, copilot_versions=versions)


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode = mode_of("manifest", argv, steps.MANIFEST_START.args, steps.MANIFEST_FINISH.args)
    a = load_inputs(ManifestInputs, env)
    rd = RunDir(Path(a.run_dir))
    if mode == steps.MANIFEST_START.args:
        return run_step(steps.MANIFEST_START, rd, None, a, lambda: start(a))
    # finishing again after more results must rewrite the counts
    return run_step(steps.MANIFEST_FINISH, rd, None, a, lambda: finish(a), reads={"index": rd.index})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
