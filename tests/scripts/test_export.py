"""export: the committed HEAD of main at the deadline; when Gitea is unreachable, EXPORT_FAILED and recovery of
main from the preserved repository, which the score then accepts (no inference repeated)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import programbench
import pytest

from scripts import export, score
from scripts.lib.gitops import git
from tests.scripts.conftest import kicked_off

TASK = "testorg__calculator.abc1234"
BUNDLED = Path(programbench.__file__).parent / "data" / "test_runs" / "correct" / TASK / f"{TASK}.eval.json"


def preserved_repo(root: Path) -> Path:
    """A bare repository like Gitea's, with `main` holding a commit and an uncommitted file left in a work tree."""
    work = root / "work"
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=work)
    (work / "compile.sh").write_text("#!/bin/sh\ncp calculator.sh executable\n")
    git("add", "compile.sh", cwd=work)
    git("commit", "-q", "-m", "solution", cwd=work)
    bare = root / "gitea" / "git" / "repositories" / "team" / "calc.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    (work / "uncommitted.txt").write_text("never exported")
    return root / "gitea" / "git" / "repositories"


def args(tmp_path: Path, repositories: str | None, gitea_url: str = "http://127.0.0.1:9") -> dict:
    run = tmp_path / "run"
    kicked_off(run, TASK, time.time() - 1)
    return {
        "run_dir": str(run),
        "task_id": TASK,
        "gitea_url": gitea_url,
        "gitea_user": "pbench-admin",
        "repo": "team/calc",
        "gitea_repositories": repositories,
        "profile": "export-test",
        "grace_s": 0,  # the deadline has passed: the export arms no keeper
    }


def test_unreachable_gitea_recovers_from_preserved_data(tmp_path: Path):
    a = args(tmp_path, str(preserved_repo(tmp_path)))
    assert export.main([], {"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": "pw"}) == 0
    task_dir = tmp_path / "run" / TASK
    receipt = json.loads((task_dir / "receipts" / "export.json").read_text())["result"]
    assert receipt["recovered_from"].endswith("team/calc.git") and (task_dir / "EXPORT_FAILED").exists()
    assert (
        "Connection refused" in (task_dir / "EXPORT_FAILED").read_text()
        or "failed" in (task_dir / "EXPORT_FAILED").read_text()
    )
    with tarfile.open(task_dir / "submission.tar.gz") as tar:
        assert tar.getnames() == ["compile.sh"]  # committed HEAD only
    shutil.copy(BUNDLED, task_dir / f"{TASK}.eval.json")
    assert score.main([], {"AGENSH_INPUT": json.dumps({"run_dir": a["run_dir"], "task_id": TASK, "attempt": 1})}) == 0
    s = json.loads((task_dir / "score.json").read_text())
    assert s["complete"] and s["score"] == 0.5 and s["export_recovered_from"] == receipt["recovered_from"]


def test_nothing_preserved_fails_with_the_marker(tmp_path: Path):
    a = args(tmp_path, str(tmp_path / "nothing"))
    assert export.main([], {"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": "pw"}) == 1
    task_dir = tmp_path / "run" / TASK
    assert (task_dir / "EXPORT_FAILED").exists() and not (task_dir / "submission.tar.gz").exists()
    assert "no preserved repository" in json.loads((task_dir / "receipts" / "export.json").read_text())["error"]


@pytest.fixture
def never_accepts() -> Iterator[str]:
    """A URL whose TCP connect hangs, like a vanished host's: a listener whose full accept queue drops new SYNs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        queued = [socket.socket() for _ in range(3)]
        for s in queued:
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
        time.sleep(0.3)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            for s in queued:
                s.close()


@pytest.fixture
def sends_nothing() -> Iterator[str]:
    """A URL whose server accepts connections and never answers (a Gitea that hangs)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def hold() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=hold, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for s in held:
            s.close()


@pytest.mark.parametrize("server", ["never_accepts", "sends_nothing"])
def test_a_gitea_that_does_not_answer_is_given_up_quickly(
    server: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
):
    """Gitea gone (a TCP connect that hangs) or hanging after the connect: the export falls back within its limits
    (shortened here: 1 s and 2 s) instead of waiting for the kernel's SYN retries or forever."""
    monkeypatch.setattr(export, "CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(export, "STALL_S", 2)
    a = args(tmp_path, str(preserved_repo(tmp_path)), request.getfixturevalue(server))
    t0 = time.monotonic()
    assert export.main([], {"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": "pw"}) == 0
    assert time.monotonic() - t0 < 8
    task_dir = tmp_path / "run" / TASK
    assert json.loads((task_dir / "receipts" / "export.json").read_text())["result"]["recovered_from"]
    why = (task_dir / "EXPORT_FAILED").read_text()
    assert (
        ("no connection to 127.0.0.1" in why and "within 1 s" in why)
        if server == "never_accepts"
        else ("freezing main" in why and "timed out" in why)  # the freeze's request, before the clone
    ), why
