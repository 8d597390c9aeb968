"""export: the committed HEAD of main at the deadline; when Gitea is unreachable, EXPORT_FAILED and recovery of
main from the preserved repository, which the score then accepts (no inference repeated)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import programbench

from scripts import export, score
from scripts.gitops import git
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


def args(tmp_path: Path, repositories: str | None) -> dict:
    run = tmp_path / "run"
    kicked_off(run, TASK, time.time() - 1)
    return {"run_dir": str(run), "task_id": TASK, "gitea_url": "http://127.0.0.1:9", "gitea_user": "pbench-admin",
            "repo": "team/calc", "gitea_repositories": repositories}


def test_unreachable_gitea_recovers_from_preserved_data(tmp_path: Path):
    a = args(tmp_path, str(preserved_repo(tmp_path)))
    assert export.main({"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": "pw"}) == 0
    task_dir = tmp_path / "run" / TASK
    receipt = json.loads((task_dir / "receipts" / "export.json").read_text())["result"]
    assert receipt["recovered_from"].endswith("team/calc.git") and (task_dir / "EXPORT_FAILED").exists()
    assert "Connection refused" in (task_dir / "EXPORT_FAILED").read_text() or "failed" in (task_dir / "EXPORT_FAILED").read_text()
    with tarfile.open(task_dir / "submission.tar.gz") as tar:
        assert tar.getnames() == ["compile.sh"]  # committed HEAD only
    shutil.copy(BUNDLED, task_dir / f"{TASK}.eval.json")
    assert score.main({"AGENSH_INPUT": json.dumps({"run_dir": a["run_dir"], "task_id": TASK, "attempt": 1})}) == 0
    s = json.loads((task_dir / "score.json").read_text())
    assert s["complete"] and s["score"] == 0.5 and s["export_recovered_from"] == receipt["recovered_from"]


def test_nothing_preserved_fails_with_the_marker(tmp_path: Path):
    a = args(tmp_path, str(tmp_path / "nothing"))
    assert export.main({"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": "pw"}) == 1
    task_dir = tmp_path / "run" / TASK
    assert (task_dir / "EXPORT_FAILED").exists() and not (task_dir / "submission.tar.gz").exists()
    assert "no preserved repository" in json.loads((task_dir / "receipts" / "export.json").read_text())["error"]
