"""The shutdown keeps a worker's session events as `activity.jsonl` in the worker's own archive folder, through
Docker and as the worker's uid: an operator who is not root could not write that folder (the worker's), and a link
the agent planted there resolves inside the container, never on the host."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

from model import contract
from scripts import shutdown


def test_the_events_land_in_the_stopped_workers_archive_folder_as_its_uid(base_image: str, tmp_path: Path):
    archive, outside = tmp_path / "archive", tmp_path / "operator-file"
    archive.mkdir()
    outside.write_text("the operator's\n")
    (archive / shutdown.KEPT).symlink_to(outside)  # what an agent could leave in its archive folder
    os.chown(archive, contract.WORKER_UID, contract.WORKER_UID)
    name = f"agensh-test-keep-{uuid.uuid4().hex[:8]}"
    create = ["docker", "create", "--name", name, "--label", f"agensh.test={name}", "--network", "none"]
    subprocess.run([*create, "-v", f"{archive}:/archive", base_image, "true"], check=True, capture_output=True)
    try:
        shutdown.keep(name, archive, b'{"event": "turn"}\n')
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    kept = archive / shutdown.KEPT
    assert not kept.is_symlink() and kept.read_text() == '{"event": "turn"}\n'
    assert (kept.stat().st_uid, kept.stat().st_gid) == (contract.WORKER_UID, contract.WORKER_UID)
    assert outside.read_text() == "the operator's\n"
