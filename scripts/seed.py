"""seed: create the task's repository in Gitea (REST API) and push the task's starting workspace over Git.

The workspace comes from the task's cleanroom image (`/workspace`); the reference binary is never copied
out. Idempotent: an existing repository with a `main` branch is left as it is. The bootstrap creates the
repository first and protects `main` (only the administrator may push it directly); the receipt records that rule.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from model import contract, steps
from model.records import BranchProtection, SeedResult
from model.rundir import RUN_FAILED
from model.step_inputs import CleanroomCopy, SeedInputs
from scripts.lib import privilege
from scripts.lib.gitops import git, with_user
from scripts.lib.http import request
from scripts.lib.step import StepFailed, mode_of, progress, step_main

NEVER_COPIED = ("executable",)  # a reference binary left in the workspace stays in the image


def workspace_from_image(c: CleanroomCopy, dest: Path) -> list[str]:
    """Copy /workspace out of the cleanroom image, minus the reference binary. The container is never started."""
    subprocess.run(["docker", "rm", "-f", c.container], capture_output=True)  # one a killed seed left
    create = ["docker", "create", "--name", c.container, *contract.label_args(c.labels), c.image]
    subprocess.run(create, capture_output=True, check=True)
    try:
        tar = subprocess.run(["docker", "cp", f"{c.container}:/workspace/.", "-"], capture_output=True, check=True)
    finally:
        subprocess.run(["docker", "rm", "-f", c.container], capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dest), "--no-same-owner"], input=tar.stdout, check=True)
    for name in NEVER_COPIED:
        (dest / name).unlink(missing_ok=True)
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())


def archive_dirs(paths: list[str]) -> None:
    """Workers (the contract's worker uid) seal their archives into these host directories at shutdown. The profile's
    data folder may be Docker's (it makes a missing bind source as root): then they are made as root too."""
    what = "making the workers' archive directories theirs"
    try:
        for path in paths:
            Path(path).mkdir(parents=True, exist_ok=True)
    except PermissionError:
        privilege.run(["mkdir", "-p", "--", *paths], what, check=True, capture_output=True, text=True)
    privilege.chown(paths, contract.WORKER_UID, contract.WORKER_UID, what)


def main_protection(gitea: str, repo: str, auth: tuple[str, str]) -> BranchProtection | None:
    """The branch protection rule of `main`, if any (a warning when there is none)."""
    org = contract.TEAM_ORG
    _, rules, _ = request("GET", f"{gitea}/api/v1/repos/{org}/{repo}/branch_protections", auth=auth)
    rule = next((r for r in rules or [] if r.get("rule_name") == "main"), None)
    if rule is None:
        progress("seed: warning: main has no branch protection: direct pushes are not refused")
        return None
    fields = {k: rule[k] for k in BranchProtection.model_fields if rule.get(k) is not None}  # Gitea sends null for []
    return BranchProtection.model_validate(fields)


def seed(a: SeedInputs, password: str) -> SeedResult:
    archive_dirs(a.archive_dirs)
    gitea, user, repo = a.gitea_url.rstrip("/"), a.gitea_user, a.repo.split("/")[-1]
    org = contract.TEAM_ORG
    auth = (user, password)
    progress(f"seed: creating {org}/{repo}")
    request("POST", f"{gitea}/api/v1/orgs", {"username": org}, auth=auth, ok=(409, 422))
    request(
        "POST",
        f"{gitea}/api/v1/orgs/{org}/repos",
        {"name": repo, "default_branch": "main", "auto_init": False},
        auth=auth,
        ok=(409,),
    )
    remote = with_user(f"{gitea}/{org}/{repo}.git", user)
    heads = git("ls-remote", remote, "refs/heads/main", password=password)
    if heads:
        return SeedResult(
            repo=f"{org}/{repo}",
            commit=heads.split()[0],
            seeded="already",
            main_protection=main_protection(gitea, repo, auth),
        )
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        files = workspace_from_image(a.cleanroom, ws)
        progress(f"seed: pushing {len(files)} files of the starting workspace")
        git("init", "-q", "-b", "main", cwd=ws)
        git("add", "-A", cwd=ws)
        git("commit", "-q", "--allow-empty", "-m", f"Task {a.task_id}: starting workspace", cwd=ws)
        git("push", "-q", remote, "main", cwd=ws, password=password)
        commit = git("rev-parse", "HEAD", cwd=ws)
    return SeedResult(
        repo=f"{org}/{repo}",
        commit=commit,
        seeded="now",
        files=files,
        main_protection=main_protection(gitea, repo, auth),
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode_of("seed", argv, steps.SEED.args)

    def body(a: SeedInputs, password: str) -> SeedResult:
        try:
            return seed(a, password)
        except (RuntimeError, subprocess.CalledProcessError) as err:
            raise StepFailed(str(err)) from None

    return step_main(steps.SEED, env, body, "AGENSH_GITEA_PASSWORD", RUN_FAILED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
