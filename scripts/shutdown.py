"""shutdown: after the export, give workers up to the archive grace to seal their archives, verify them,
then stop the routers. Nothing done here can enter the submission: it was exported before this step runs.

Workers get SIGTERM and up to `grace_s` seconds (`docker stop -t`); each must leave `state.tar.gz` in its
archive directory. The receipt says which archives are complete; `archives_complete: false` makes the score
step refuse a complete score and keeps cleanup from deleting anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any, Mapping

from scripts.records import progress, run_step


def stop(names: list[str], grace_s: int) -> None:
    if names:
        subprocess.run(["docker", "stop", "-t", str(grace_s), *names], capture_output=True, text=True)


def verify(archive_dir: Path) -> str:
    archive = archive_dir / "state.tar.gz"
    if not archive.exists():
        return "missing"
    try:
        with tarfile.open(archive) as tar:
            tar.getmembers()
    except (tarfile.TarError, OSError, EOFError):
        return "corrupt"
    return "ok"


def shutdown(a: dict[str, Any]) -> dict[str, Any]:
    workers: dict[str, str] = a["workers"]  # container name -> archive directory
    progress(f"shutdown: {len(workers)} workers get up to {a['grace_s']} s to seal their archives")
    stop(list(workers), a["grace_s"])
    archives = {name: verify(Path(d)) for name, d in workers.items()}
    stop(a["routers"], 10)
    return {"archives": archives, "archives_complete": all(v == "ok" for v in archives.values())}


def main(env: Mapping[str, str] = os.environ) -> int:
    a = json.loads(env["AGENSH_INPUT"])
    return run_step("shutdown", Path(a["run_dir"]), a["task_id"], a, lambda: shutdown(a))


if __name__ == "__main__":
    sys.exit(main())
