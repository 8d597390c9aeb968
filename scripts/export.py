"""export: at the task's deadline, export the committed HEAD of the team repository as the submission.

The deadline comes from the kickoff receipt, so a resumed `up` waits only for what remains. As it starts (right after
the kickoff) the step arms the task's deadline keeper (scripts/lib/freeze.py; this program with the argument `keep` is
the keeper), which freezes `main` at the deadline even when the launcher is dead then; the submission is `git archive`
of the frozen HEAD (committed work only, never a later commit) written atomically to `<run>/<task>/submission.tar.gz`,
ProgramBench's layout. When no keeper froze `main`, the export freezes it itself and its receipt says how late. When
Gitea cannot be reached the step writes `EXPORT_FAILED` and recovers the frozen HEAD (or `main`, when nothing froze it)
from the repository preserved in the profile's Gitea data (no inference is repeated); the receipt names the source. It
finds out quickly: a TCP connect probe with a short timeout before freezing and cloning (a vanished host would otherwise
hold git's connect for a minute or more), and a freeze or a clone that receives nothing for STALL_S is given up.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from model import steps
from model.records import ExportResult, Freeze, KickoffResult, read_record
from model.rundir import EXPORT_FAILED, RunDir
from model.step_inputs import ExportInputs, GiteaInputs
from scripts.lib.freeze import KEEP, arm, disarm, freeze, keep
from scripts.lib.gitops import git, with_user
from scripts.lib.http import HTTPFailure
from scripts.lib.step import (
    StepFailed,
    iso,
    load_inputs,
    mode_of,
    progress,
    step_main,
    wait_until,
    write_marker,
)

CONNECT_TIMEOUT_S = 10.0  # Gitea accepts in milliseconds; a host that is gone leaves a TCP connect hanging
STALL_S = 60  # a connected Gitea that sends nothing for this long counts as unreachable


def unreachable(url: str) -> str | None:
    """Why nothing accepts a TCP connection at the URL's host and port within CONNECT_TIMEOUT_S, or None."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as err:
        return f"no connection to {host}:{port} within {CONNECT_TIMEOUT_S:g} s ({err or type(err).__name__})"


def clone_main(url: str, user: str, password: str, dest: str) -> None:
    """Clone `main` of the repository at `url`; RuntimeError, quickly, when Gitea cannot give it."""
    down = unreachable(url)
    if down:
        raise RuntimeError(down)
    git(
        "-c",
        "http.lowSpeedLimit=1",
        "-c",
        f"http.lowSpeedTime={STALL_S}",
        "clone",
        "-q",
        "--branch",
        "main",
        "--single-branch",
        with_user(url, user),
        dest,
        password=password,
    )


def freeze_now(a: GiteaInputs, password: str, deadline: float) -> Freeze:
    """The task's freeze, made by the export when no keeper made it; RuntimeError, quickly, when Gitea cannot."""
    down = unreachable(a.gitea_url)
    if down:
        raise RuntimeError(down)
    try:
        return freeze(a, password, deadline, "export", attempts=1, timeout=STALL_S)
    except HTTPFailure as err:
        raise RuntimeError(f"freezing main: {err}") from None


def export(a: ExportInputs, password: str) -> ExportResult:
    rd = RunDir(Path(a.run_dir))
    kickoff = steps.result_of(rd, steps.KICKOFF, a.task_id, KickoffResult)
    if kickoff is None:
        raise StepFailed("no kickoff receipt: the task never started")
    if time.time() < kickoff.deadline_epoch:
        progress(f"export: deadline keeper {arm(a, password)}")
    wait_until(kickoff.deadline_epoch, "export")
    frozen = read_record(rd.freeze(a.task_id), Freeze)
    recovered_from = None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            frozen = frozen or freeze_now(a, password, kickoff.deadline_epoch)
            clone_main(f"{a.gitea_url.rstrip('/')}/{a.repo}.git", a.gitea_user, password, tmp)
            source = Path(tmp)
        except RuntimeError as err:
            # docs/requirements.md R35: the committed source is recovered from the preserved Gitea data, never
            # re-inferred
            write_marker(rd, a.task_id, EXPORT_FAILED, f"export: {err}")
            source = Path(a.gitea_repositories) / f"{a.repo}.git"
            if not source.is_dir():
                raise StepFailed(
                    f"export failed and no preserved repository at {source}: {err}", marker=EXPORT_FAILED
                ) from None
            progress("export: Gitea unreachable; recovering main from its preserved repository")
            recovered_from = str(source)
        head = frozen.head if frozen else git("rev-parse", "main", cwd=source)
        files = git("ls-tree", "-r", "--name-only", head, cwd=source).splitlines()
        out = rd.submission(a.task_id)
        part = out.with_name(f".{out.name}.part")
        git("archive", "--format=tar.gz", "-o", str(part), head, cwd=source)
        part.replace(out)
    if "compile.sh" not in files:
        progress("export: warning: no compile.sh at the root; the evaluation will fail to compile")
    if frozen is None or not frozen.on_time:
        late = f"{frozen.late_s:.0f} s" if frozen else "an unknown time"
        progress(f"export: warning: main was not frozen at the deadline: work of up to {late} after it may be in it")
    progress(f"export: main {head[:12]} ({len(files)} files) exported")
    return ExportResult(
        submission=str(out),
        commit=head,
        files=len(files),
        exported_at=iso(time.time()),
        recovered_from=recovered_from,
        freeze=frozen,
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    if argv[:1] == [KEEP]:
        return keep(env, argv[1:])
    if mode_of("export", argv, steps.EXPORT.args, steps.EXPORT.delete) == steps.EXPORT.delete:
        progress(f"export: deadline keeper: {disarm(load_inputs(ExportInputs, env))}")
        return 0
    return step_main(
        steps.EXPORT,
        env,
        export,
        "AGENSH_GITEA_PASSWORD",
        EXPORT_FAILED,
        keep_marker=lambda r: EXPORT_FAILED if r.recovered_from else None,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
