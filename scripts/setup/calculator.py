"""ProgramBench's built-in fixture task, `testorg__calculator.abc1234`, made runnable offline.

Its cleanroom image is built from the local base image (`scripts/setup/base_image.sh`) under a local org, and its
test blob is packed from the package's own data into a `PROGRAMBENCH_BLOB_DIR` layout
(`<dir>/<task>/tests/<branch>.tar.gz`). The demo and the tests use it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

from programbench.constants import TASKS_DIR

from model import contract

TASK = "testorg__calculator.abc1234"
BASE_IMAGE = "agensh-base:bookworm"

# A correct program for the fixture: compile.sh at the submission's root produces ./executable.
SOLUTION = {
    "compile.sh": "#!/bin/sh\ncp calculator.sh executable\nchmod +x executable\n",
    "calculator.sh": "#!/bin/bash\n# calculator A OP B\necho $(( $1 $2 $3 ))\n",
}


def cleanroom_image(org: str) -> str:
    return contract.cleanroom_image(TASK, org)


def build_cleanroom(org: str, labels: dict[str, str]) -> str:
    """Build the fixture's cleanroom image (a workspace and the evaluator's tools) from the local base."""
    image = cleanroom_image(org)
    dockerfile = f"FROM {BASE_IMAGE}\nWORKDIR /workspace\n"
    subprocess.run(
        ["docker", "build", "-q", "-t", image, *contract.label_args(labels), "-"],
        input=dockerfile.encode(),
        check=True,
        capture_output=True,
        env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"},
    )
    return image


def blob_dir(dest: Path) -> Path:
    """Pack every test branch of the fixture as `<dest>/<task>/tests/<branch>.tar.gz` (tar root holds eval/)."""
    task_dir = TASKS_DIR / TASK
    for branch in json.loads((task_dir / "tests.json").read_text())["branches"]:
        out = dest / TASK / "tests" / f"{branch}.tar.gz"
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_name(f".{out.name}.{os.getpid()}.part")  # an evaluation beside may be reading `out`
        with tarfile.open(part, "w:gz") as tar:
            tar.add(
                task_dir / "tests" / branch / "eval",
                arcname="eval",
                filter=lambda ti: None if "__pycache__" in ti.name else ti,
            )
        part.replace(out)
    return dest


def submission(files: dict[str, str], dest: Path) -> Path:
    """A submission.tar.gz with `files` at its root (executable bits on scripts)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return dest
