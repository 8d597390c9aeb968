"""Run records: the run directory, receipts, the manifest, the append-only result index, checkpoints.

Layout (DESIGN.md, "Run directory"): `<data root>/<profile>/<run id>/` holds `run_manifest.json` (written
first), `result_index.jsonl` (append-only, also one per task directory), per task `submission.tar.gz`,
`<task>.eval.json`, `score.json`, `receipts/<step>.json`, and the failure markers `RUN_FAILED`, `EXPORT_FAILED`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

RUN_FAILED = "RUN_FAILED"
EXPORT_FAILED = "EXPORT_FAILED"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_atomic(path: Path, data: Any, mode: int = 0o644) -> None:
    """Write JSON so a reader never sees half a file: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def append_line(path: Path, row: dict[str, Any]) -> None:
    """Append one JSON line and make it durable before returning (a crash loses at most the line being written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":  # a torn line from a crash: close it so this row stays readable
                fh.write(b"\n")
        fh.write((json.dumps(row, sort_keys=True) + "\n").encode())
        fh.flush()
        os.fsync(fh.fileno())


def read_index(path: Path) -> dict[str, dict[str, Any]]:
    """Rows by task id, last row wins; a torn last line (crash mid-write) is ignored."""
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[row["task_id"]] = row
    return out


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RunDir:
    path: Path

    def task(self, task_id: str) -> Path:
        return self.path / task_id

    @property
    def manifest(self) -> Path:
        return self.path / "run_manifest.json"

    @property
    def index(self) -> Path:
        return self.path / "result_index.jsonl"

    def append_result(self, row: dict[str, Any]) -> None:
        """Append at the run root and in the task's directory (REQUIREMENTS 44)."""
        row = {"at": now(), **row}
        append_line(self.index, row)
        append_line(self.task(row["task_id"]) / "result_index.jsonl", row)

    def marker(self, task_id: str | None, name: str, reason: str) -> None:
        where = self.task(task_id) if task_id else self.path
        where.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(f"{now()} {reason}\n")

    def markers(self, task_id: str) -> list[str]:
        return [m for m in (RUN_FAILED, EXPORT_FAILED)
                if (self.task(task_id) / m).exists() or (self.path / m).exists()]

    def receipt_path(self, step: str, task_id: str | None) -> Path:
        return (self.task(task_id) if task_id else self.path) / "receipts" / f"{step}.json"


def run_step(step: str, run_dir: Path, task_id: str | None, inputs: dict[str, Any],
             body: Callable[[], dict[str, Any]], failure_marker: str | None = None) -> int:
    """Run a step once: a receipt with the same inputs means it is done (print it again, do nothing).

    A failure leaves a failed receipt and, for a task, its failure marker (`failure_marker`, or the `marker` a
    StepFailed names), which keeps the score from being reported as complete."""
    rd = RunDir(run_dir)
    path = rd.receipt_path(step, task_id)
    key = digest(inputs)
    old = read_json(path)
    if old and old.get("inputs_digest") == key and old.get("status") == "ok":
        print(json.dumps(old, sort_keys=True))
        return 0
    started = now()
    try:
        result = body()
        status = "ok"
    except StepFailed as err:
        result, status = {"error": str(err), **err.details}, "failed"
    except Exception as err:  # noqa: BLE001 - an unexpected failure is still recorded before the step fails
        result, status = {"error": f"{type(err).__name__}: {err}"}, "failed"
    marker = result.get("marker", failure_marker) if status != "ok" else None
    if marker and task_id:
        rd.marker(task_id, marker, f"{step}: {result['error']}")
    if status == "ok" and task_id:  # a retry that succeeds withdraws the marker this step left (unless it keeps it)
        for name in (RUN_FAILED, EXPORT_FAILED):
            left = rd.task(task_id) / name
            if name != result.get("marker") and left.exists() and f" {step}: " in left.read_text():
                left.unlink()
    receipt = {"step": step, "task_id": task_id, "inputs_digest": key, "started": started, "finished": now(),
               "status": status, **result}
    write_atomic(path, receipt)
    print(json.dumps(receipt, sort_keys=True))
    if status != "ok":
        print(f"{step}: {receipt['error']}", file=sys.stderr)
        return 1
    return 0


def step_main(step: str, env: Mapping[str, str], body: Callable[[dict[str, Any], str], dict[str, Any]],
              secret: str, failure_marker: str | None = None) -> int:
    """The `main()` of a step that needs one secret: its inputs from AGENSH_INPUT, the secret from its own variable."""
    a = json.loads(env["AGENSH_INPUT"])
    value = env.get(secret)
    if not value:
        print(f"{step}: {secret} is not set", file=sys.stderr)
        return 2
    return run_step(step, Path(a["run_dir"]), a.get("task_id"), a, lambda: body(a, value), failure_marker)


class StepFailed(Exception):
    """A step's own, explained failure (recorded in its receipt)."""

    def __init__(self, message: str, **details: Any):
        super().__init__(message)
        self.details = details


def progress(message: str) -> None:
    print(f"[{now()}] {message}", file=sys.stderr, flush=True)
