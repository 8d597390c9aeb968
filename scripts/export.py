"""export: at the task's deadline, export the committed HEAD of the team repository as the submission.

The deadline comes from the kickoff receipt, so a resumed `up` waits only for what remains. The submission
is `git archive` of `main`'s HEAD (committed work only) written atomically to `<run>/<task>/submission.tar.gz`,
ProgramBench's layout. When Gitea cannot be reached the step writes `EXPORT_FAILED` and recovers `main` from the
repository preserved in the profile's Gitea data (no inference is repeated); the receipt names the source.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from scripts.gitops import git, with_user
from scripts.kickoff import iso, wait_until
from scripts.records import EXPORT_FAILED, RunDir, StepFailed, progress, read_json, step_main


def export(a: dict[str, Any], password: str) -> dict[str, Any]:
    rd = RunDir(Path(a["run_dir"]))
    task = a["task_id"]
    kickoff = read_json(rd.receipt_path("kickoff", task))
    if not kickoff or kickoff.get("status") != "ok":
        raise StepFailed("no kickoff receipt: the task never started")
    wait_until(kickoff["deadline_epoch"], "export")
    remote = with_user(f"{a['gitea_url'].rstrip('/')}/{a['repo']}.git", a["gitea_user"])
    recovered_from = None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            git("clone", "-q", "--branch", "main", "--single-branch", remote, tmp, password=password)
            source = Path(tmp)
        except RuntimeError as err:
            # REQUIREMENTS 35: the committed source is recovered from the preserved Gitea data, never re-inferred
            rd.marker(task, EXPORT_FAILED, f"export: {err}")
            source = Path(a.get("gitea_repositories") or "/nonexistent") / f"{a['repo']}.git"
            if not source.is_dir():
                raise StepFailed(f"export failed and no preserved repository at {source}: {err}",
                                 marker=EXPORT_FAILED) from None
            progress(f"export: Gitea unreachable ({err}); recovering main from the preserved {source}")
            recovered_from = str(source)
        head = git("rev-parse", "main", cwd=source)
        files = git("ls-tree", "-r", "--name-only", head, cwd=source).splitlines()
        out = rd.task(task) / "submission.tar.gz"
        part = out.with_name(".submission.tar.gz.part")
        git("archive", "--format=tar.gz", "-o", str(part), head, cwd=source)
        part.replace(out)
    if "compile.sh" not in files:
        progress("export: warning: no compile.sh at the repository root; the evaluation will fail to compile")
    return {"submission": str(out), "commit": head, "files": len(files), "exported_at": iso(time.time()),
            "recovered_from": recovered_from, **({"marker": EXPORT_FAILED} if recovered_from else {})}


def main(env: Mapping[str, str] = os.environ) -> int:
    return step_main("export", env, export, "AGENSH_GITEA_PASSWORD", EXPORT_FAILED)


if __name__ == "__main__":
    sys.exit(main())
