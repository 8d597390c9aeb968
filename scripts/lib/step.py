"""How a step program runs: its one `main(argv)` given its step's word (`mode_of`), its typed inputs from AGENSH_INPUT,
a secret from its own variable, the work done once, a typed receipt written to the run directory and printed as the
last stdout line, progress lines on stderr.

A receipt with the same inputs digest and status `ok` means the step is done: running it again prints that
receipt and does nothing (Pulumi re-runs a step only when its inputs change or it failed; see
components/step_resources.py).
"""

from __future__ import annotations

import calendar
import errno
import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from model.records import IndexRow, KickoffResult, Receipt, Record, receipt_model
from model.rundir import DATA_ROOT_FULL, MARKERS, RunDir
from model.step_inputs import Inputs
from model.steps import KICKOFF, StepDef, receipt_path, result_of

InputsT = TypeVar("InputsT", bound=BaseModel)


TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # every time a step records, in UTC


def now() -> str:
    return time.strftime(TIME_FORMAT, time.gmtime())


def iso(t: float) -> str:
    return time.strftime(TIME_FORMAT, time.gmtime(t))


def epoch(text: str) -> float:
    """The epoch seconds of a time `now` or `iso` wrote (receipts' `started`, `finished`, ...)."""
    return float(calendar.timegm(time.strptime(text, TIME_FORMAT)))


def write_atomic(path: Path, data: BaseModel | dict[str, Any], mode: int = 0o644) -> None:
    """Write JSON so a reader never sees half a file: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    payload = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    with open(tmp, "w") as fh:
        json.dump(payload, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def held(lock: Path) -> bool:
    """Whether a live process holds this lock file (a dead one's lock is released with its process)."""
    if not lock.exists():
        return False
    with open(lock) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def append_line(path: Path, line: str) -> None:
    """Append one line and make it durable before returning (a crash loses at most the line being written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":  # a torn line from a crash: close it so this row stays readable
                fh.write(b"\n")
        fh.write((line + "\n").encode())
        fh.flush()
        os.fsync(fh.fileno())


def append_result(rd: RunDir, row: IndexRow) -> None:
    """Append at the run root and in the task's directory (docs/requirements.md R44)."""
    line = row.model_dump_json()
    append_line(rd.index, line)
    append_line(rd.task_index(row.task_id), line)


def write_marker(rd: RunDir, task_id: str | None, name: str, reason: str) -> None:
    path = rd.marker(task_id, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{now()} {reason}\n")


def mark_data_root_full(rd: RunDir, task_id: str, reason: str) -> None:
    """The task marked DATA_ROOT_FULL (scored incomplete; no step withdraws it): while the data root is full Gitea and
    MariaDB take no writes, the team cannot push, and no resumed run brings that work back. A full filesystem still
    takes the marker's directory entry when its text finds no room."""
    try:
        write_marker(rd, task_id, DATA_ROOT_FULL, f"{reason}: it could not push")
    except OSError:
        rd.marker(task_id, DATA_ROOT_FULL).touch()
    progress(
        f"ERROR: the data root ({rd.path}) is full: Gitea and MariaDB take no writes and the team cannot push, so "
        f"task {task_id} is marked {DATA_ROOT_FULL} and will be scored incomplete. Make room now; if this `up` then "
        "fails, run `pulumi cancel` and the same `make up`"
    )


def team_at_work(rd: RunDir, task_id: str) -> bool:
    """Kicked off, and its deadline not passed."""
    kickoff = result_of(rd, KICKOFF, task_id, KickoffResult)
    return kickoff is not None and time.time() < kickoff.deadline_epoch


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def file_digest(path: Path) -> str | None:
    """Content digest of a file another step wrote (`run_step`'s `reads`)."""
    if not path.exists():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


class StepFailed(Exception):
    """A step's own, explained failure (recorded in its receipt); `marker` names the failure marker it leaves."""

    def __init__(self, message: str, marker: str | None = None, **details: Any):
        super().__init__(message)
        self.marker, self.details = marker, details


def progress(message: str) -> None:
    """One human line on stderr: what the console of `pulumi up` shows of a step."""
    print(message, file=sys.stderr, flush=True)


def run_step(
    step: StepDef,
    rd: RunDir,
    task_id: str | None,
    inputs: BaseModel,
    body: Callable[[], Record],
    failure_marker: str | None = None,
    reads: Mapping[str, Path] | None = None,
    keep_marker: Callable[[Record], str | None] = lambda _: None,
) -> int:
    """Run a step once. A failure leaves a failed receipt and, for a task, its failure marker (`failure_marker`, or
    the one a StepFailed names), which keeps the score from being reported as complete. A success withdraws the
    markers this step left earlier, except the one `keep_marker` names (a recovered export keeps EXPORT_FAILED).
    `reads`: the files another step wrote that this one reads, by a name of their own: the step runs again when one
    changes (their content digests are in its inputs digest)."""
    path = receipt_path(rd, step, task_id)
    files = {name: file_digest(read) for name, read in (reads or {}).items()}
    key = digest({"inputs": inputs.model_dump(mode="json"), **files})
    try:
        with exclusive(rd.lock(step.name, task_id), step.name):
            return _run_locked(step.name, rd, task_id, path, key, body, failure_marker, keep_marker)
    except OSError as err:  # no room for its lock or receipt: the step fails and runs again later
        no_room(err, rd, task_id, step.name)
        raise


def no_room(err: Exception, rd: RunDir, task_id: str | None, step: str) -> None:
    """A step that fails for want of room while the team works marks the task DATA_ROOT_FULL: the watchdog may not
    see it first (this failure can end the `up`, and the watchdog with it)."""
    if isinstance(err, OSError) and err.errno == errno.ENOSPC and task_id and team_at_work(rd, task_id):
        mark_data_root_full(rd, task_id, f"the data root was full while the team worked ({step} step)")


@contextmanager
def exclusive(lock: Path, step: str) -> Iterator[None]:
    """One run of a step at a time: a run left over from an interrupted `up` (its step programs outlive the engine)
    finishes first, and the new run then finds its receipt."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().split(" since ")[0].strip() or "unknown"
            progress(f"{step}: waiting for its earlier run ({holder}) to finish")
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} since {now()}\n")
        fh.flush()
        yield


def _run_locked(
    step: str,
    rd: RunDir,
    task_id: str | None,
    path: Path,
    key: str,
    body: Callable[[], Record],
    failure_marker: str | None,
    keep_marker: Callable[[Record], str | None],
) -> int:
    if path.exists():
        old = Receipt[Any].model_validate_json(path.read_text())
        if old.inputs_digest == key and old.status == "ok":
            progress(f"{step}: done before ({old.finished}); nothing to do")
            print(old.model_dump_json())
            return 0
    started, t0 = now(), time.monotonic()
    result: Record | None = None
    error, marker, details = None, None, {}
    try:
        result = body()
        marker = keep_marker(result)
    except StepFailed as err:
        error, marker, details = str(err), err.marker or failure_marker, err.details
    except Exception as err:  # noqa: BLE001 - an unexpected failure is still recorded before the step fails
        error, marker = f"{type(err).__name__}: {err}", failure_marker
        no_room(err, rd, task_id, step)
    if error is not None and marker and task_id:
        write_marker(rd, task_id, marker, f"{step}: {error}")
    if error is None and task_id:  # a retry that succeeds withdraws the marker this step left
        for name in MARKERS:
            left = rd.marker(task_id, name)
            if name not in (marker, DATA_ROOT_FULL) and left.exists() and f" {step}: " in left.read_text():
                left.unlink()
    receipt = receipt_model(type(result) if result is not None else Record)(
        step=step,
        task_id=task_id,
        inputs_digest=key,
        started=started,
        finished=now(),
        status="ok" if error is None else "failed",
        result=result,
        error=error,
        marker=marker,
        details=details,
    )
    write_atomic(path, receipt)
    if error is None:  # the receipt is the step's output; a failure's is in its file (the console shows stderr only)
        print(receipt.model_dump_json())
    took = f"{time.monotonic() - t0:.0f} s"
    if error is not None:
        lines = error.splitlines() or [""]
        more = "..." if len(lines[0]) > 100 or len(lines) > 1 else ""
        progress(f"{step}: FAILED after {took}: {lines[0][:100]}{more} (receipt: {path.parent.name}/{path.name})")
        return 1
    progress(f"{step}: done in {took}")
    return 0


def load_inputs(model: type[InputsT], env: Mapping[str, str]) -> InputsT:
    return model.model_validate_json(env["AGENSH_INPUT"])


def mode_of(program: str, argv: Sequence[str], *modes: str, hint: str = "") -> str:
    """The one word a step program's `main(argv)` is given (its step's `args` or `delete` in model/steps.py), refused
    as a usage error (exit 2, with `hint`) unless it is one of `modes`; "" is no word (a program of one step takes
    none)."""
    word = " ".join(argv)
    if len(argv) <= 1 and word in modes:
        return word
    takes = " or ".join(f"`{m}`" if m else "no argument" for m in modes)
    got = f"`{word}`" if argv else "no argument"
    print(f"{program}: takes {takes}; got {got}{hint}", file=sys.stderr)
    raise SystemExit(2)


def step_main(
    step: StepDef,
    env: Mapping[str, str],
    body: Callable[[Any, str], Record],
    secret: str,
    failure_marker: str | None = None,
    **kw: Any,
) -> int:
    """The `main()` of a task step that needs one secret: typed inputs from AGENSH_INPUT, the secret from its own
    variable."""
    a = load_inputs(step.inputs, env)
    value = env.get(secret)
    if not value:
        print(f"{step.name}: {secret} is not set", file=sys.stderr)
        return 2
    assert isinstance(a, Inputs)
    return run_step(
        step, RunDir(Path(a.run_dir)), getattr(a, "task_id", None), a, lambda: body(a, value), failure_marker, **kw
    )


def wait_until(t: float, what: str, every: float = 600) -> None:
    """Sleep until epoch `t`, saying once how long and then every `every` seconds how much is left."""
    if (left := t - time.time()) > 0:
        progress(f"{what} at {iso(t)} (in {left:.0f} s)")
    while (left := t - time.time()) > 0:
        time.sleep(min(left, every))
        if (left := t - time.time()) > 1:
            progress(f"{what} in {left:.0f} s")
