"""manifest: `run_manifest.json`, written before the first task starts and rewritten at the end.

`start` records the provenance (profile and its hash, project and Agensh checkout revisions with a dirty
flag, ProgramBench version, image ids, host resources, requested tasks) and refuses a dirty Agensh checkout
unless the profile's `allow_dirty` escape is set. `finish` adds the completed/failed counts and the headline
from ProgramBench's `aggregate` (the denominator is the requested task list, never the index's line count).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from scripts.records import RunDir, StepFailed, now, read_index, read_json, run_step, write_atomic


def revision(path: Path) -> dict[str, Any]:
    """Git revision of the repository holding `path`, and whether `path` has uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True).stdout.strip()
    rev = git("rev-parse", "HEAD")
    if not rev:
        return {"path": str(path), "revision": None, "dirty": None}
    return {"path": str(path), "revision": rev, "dirty": bool(git("status", "--porcelain", "--", "."))}


def host_resources() -> dict[str, Any]:
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return {"cpus": os.cpu_count(), "memory_gib": round(pages * size / 2**30, 1), "load": os.getloadavg()}


def start(args: dict[str, Any]) -> dict[str, Any]:
    rd = RunDir(Path(args["run_dir"]))
    checkout = revision(Path(args["checkout"]))
    if checkout["dirty"] and not args["profile"].get("allow_dirty"):
        raise StepFailed(f"the Agensh checkout {checkout['path']} has uncommitted changes; commit them, or set "
                         "agensh:allow_dirty true to record the dirty state and go on", checkout=checkout)
    from importlib.metadata import version
    manifest = {
        "written": now(), "state": "running", "profile": args["profile"], "profile_digest": args["profile_digest"],
        "project": revision(Path(args["project_dir"])), "checkout": checkout,
        "programbench_version": version("programbench"), "images": args.get("images", {}),
        "host": host_resources(), "requested_task_ids": args["profile"]["tasks"],
    }
    existing = read_json(rd.manifest)
    if existing:  # a resumed run keeps what it first recorded
        manifest = {**manifest, **{k: existing[k] for k in ("written",) if k in existing}}
    write_atomic(rd.manifest, manifest)
    return {"manifest": str(rd.manifest), "manifest_content": manifest}


def finish(args: dict[str, Any]) -> dict[str, Any]:
    from programbench.submission import aggregate, benchmark_instances

    rd = RunDir(Path(args["run_dir"]))
    manifest = read_json(rd.manifest) or {}
    requested = manifest.get("requested_task_ids") or args["profile"]["tasks"]
    rows = read_index(rd.index)
    scores = {t: r["score"] for t, r in rows.items() if t in requested and r.get("status") == "scored"}
    completed = sorted(scores)
    failed = sorted(t for t in requested if t not in scores)
    manifest.update(state="finished", finished=now(), completed=len(completed), failed=len(failed),
                    failed_task_ids=failed, scores=scores)
    if scores:
        manifest["headline_requested"] = aggregate(scores, len(requested)).as_dict()
        manifest["headline_benchmark"] = aggregate(scores, len(benchmark_instances())).as_dict()
    write_atomic(rd.manifest, manifest)
    return {"completed": len(completed), "failed": len(failed), "scores": scores}


def main(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> int:
    mode = (argv if argv is not None else sys.argv[1:])[0]
    args = json.loads(env["AGENSH_INPUT"])
    body = {"start": start, "finish": finish}[mode]
    inputs = dict(args)
    if mode == "finish":  # finishing again after more results must rewrite the counts
        inputs["index"] = RunDir(Path(args["run_dir"])).index.stat().st_size if RunDir(Path(args["run_dir"])).index.exists() else 0
    return run_step(f"manifest-{mode}", Path(args["run_dir"]), None, inputs, lambda: body(args))


if __name__ == "__main__":
    sys.exit(main())
