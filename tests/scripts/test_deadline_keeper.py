"""The deadline without the launcher (scripts/lib/freeze.py): the export arms a keeper in a session of its own; the
launcher is killed mid-window; at the deadline the keeper records `main`'s HEAD and locks `main`, so an agent's later
push and merge are refused; the resumed export exports the deadline's HEAD and says the keeper froze it.

Against the real Gitea (agensh-gitea, on the real MariaDB: the image has no SQLite) on an internal network of its own,
with the data inside the containers; both and the network are removed at the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from model import contract
from model.project import ROOT
from model.records import Freeze, read_record
from model.rundir import RunDir
from model.step_inputs import ExportInputs
from scripts import export
from scripts.lib.freeze import arm, claim, keeper_alive, stop_unexported
from scripts.lib.gitops import git, with_user
from scripts.lib.http import HTTPFailure, request
from scripts.setup.service_images import GITEA_IMAGE, MARIADB_IMAGE
from tests.conftest import require
from tests.scripts.conftest import kicked_off

RUN = uuid.uuid4().hex[:8]
LABEL = f"agensh.test=deadline-keeper-{RUN}"
ADMIN, ADMIN_PW = "pbench-admin", f"admin-{RUN}-pw"
AGENT, AGENT_PW = "agent-one", f"agent-{RUN}-pw"
TASK = "testorg__calculator.abc1234"
REPO = "team/calc"
WINDOW_S = 20  # from the launch of the export to the deadline: time to kill the launcher and push
PROFILE = f"keeper-{RUN}"


def frozen(head: str, by: str = "keeper") -> Freeze:
    return Freeze(head=head, by=by, deadline="2026-01-01T00:00:00Z", frozen_at="2026-01-01T00:00:01Z", late_s=1.0)


def test_the_first_freeze_stays(tmp_path: Path):
    path = RunDir(tmp_path).freeze(TASK)
    path.parent.mkdir(parents=True)
    assert claim(path, frozen("a" * 40)).head == "a" * 40
    assert claim(path, frozen("b" * 40, "export")) == frozen("a" * 40)  # a later freeze never replaces it
    assert read_record(path, Freeze) == frozen("a" * 40) and frozen("a" * 40).on_time
    assert [p.name for p in path.parent.iterdir()] == ["freeze.json"]


def test_arming_a_frozen_task_starts_nothing(tmp_path: Path):
    a = ExportInputs(
        run_dir=str(tmp_path),
        task_id=TASK,
        gitea_url="http://127.0.0.1:9",
        gitea_user=ADMIN,
        repo=REPO,
        gitea_repositories=str(tmp_path / "none"),
        profile=PROFILE,
        grace_s=0,
    )
    RunDir(tmp_path).task(TASK).mkdir(parents=True)
    claim(RunDir(tmp_path).freeze(TASK), frozen("a" * 40))
    assert arm(a, "pw") == "not needed: main is frozen" and not keeper_alive(RunDir(tmp_path), TASK)


# ----------------------------------------------------------------------------------------- against real Gitea
def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and out.returncode:
        raise AssertionError(f"docker {' '.join(args[:3])} failed: {out.stderr.strip()[-800:]}")
    return out


@pytest.fixture(scope="module")
def gitea(docker_engine: None) -> Iterator[str]:
    """Gitea's URL: MariaDB and Gitea on an internal network, the administrator made by Gitea's entrypoint."""
    for image in (GITEA_IMAGE, MARIADB_IMAGE):
        require(docker("image", "inspect", image, check=False).returncode == 0, f"the image {image}")
    net, db, web = (f"agensh-keeper-{RUN}-{part}" for part in ("net", "db", "gitea"))
    run = ("run", "-d", "--network", net, "--label", LABEL)
    docker("network", "create", "--internal", "--label", LABEL, net)
    try:
        db_env = ("-e", f"MYSQL_ROOT_PASSWORD={ADMIN_PW}", "-e", "MYSQL_DATABASE=gitea")
        docker(*run, "--name", db, *db_env, MARIADB_IMAGE, "mysqld")
        env = {
            "GITEA__security__INSTALL_LOCK": "true",
            "GITEA__database__DB_TYPE": "mysql",
            "GITEA__database__HOST": f"{db}:3306",
            "GITEA__database__USER": "root",
            "GITEA__database__PASSWD": ADMIN_PW,
            "GITEA__database__NAME": "gitea",
            "GITEA__actions__ENABLED": "false",
            "GITEA_ADMIN_USER": ADMIN,
            "GITEA_ADMIN_PASSWORD": ADMIN_PW,
        }
        docker(*run, "--name", web, *[a for k, v in env.items() for a in ("-e", f"{k}={v}")], GITEA_IMAGE)
        ip = docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", web).stdout.strip()
        url = f"http://{ip}:3000"
        end = time.monotonic() + 240
        while docker("exec", web, "curl", "-fsS", "http://127.0.0.1:3000/api/healthz", check=False).returncode:
            assert time.monotonic() < end, docker("logs", web, check=False).stdout[-2000:]
            time.sleep(1)
        request("GET", f"{url}/api/v1/user", auth=(ADMIN, ADMIN_PW), attempts=60, pause=1)  # the admin exists
        yield url
    finally:
        docker("rm", "-f", "-v", web, db, check=False)
        docker("network", "rm", net, check=False)


def api(url: str, method: str, path: str, body: Any = None, user: tuple[str, str] = (ADMIN, ADMIN_PW)) -> Any:
    return request(method, f"{url}/api/v1{path}", body, auth=user, attempts=3)[1]


def commit(work: Path, name: str) -> str:
    (work / name).write_text(f"{name}\n")
    git("add", name, cwd=work)
    git("commit", "-q", "-m", name, cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def open_pull(url: str, head: str) -> int:
    """The agent's pull request of `head` into main (Gitea may take a moment to list a branch just pushed)."""
    end = time.monotonic() + 30
    while True:
        try:
            pull = {"head": head, "base": "main", "title": head}
            return int(api(url, "POST", f"/repos/{REPO}/pulls", pull, (AGENT, AGENT_PW))["number"])
        except HTTPFailure as err:
            if err.status != 404 or time.monotonic() > end:
                raise
            time.sleep(0.5)


def merge(url: str, number: int) -> None:
    """Merge a pull request as the agent, once Gitea has checked it."""
    end = time.monotonic() + 60
    while not api(url, "GET", f"/repos/{REPO}/pulls/{number}")["mergeable"]:
        assert time.monotonic() < end, "the pull request never became mergeable"
        time.sleep(0.5)
    api(url, "POST", f"/repos/{REPO}/pulls/{number}/merge", {"Do": "merge"}, (AGENT, AGENT_PW))


def team_repo(url: str, tmp: Path) -> tuple[Path, str]:
    """The team repository as the bootstrap and the seed leave it (main pushed by the administrator only), an agent
    with write access, and its clone; returns the clone and the remote as the agent."""
    api(url, "POST", "/orgs", {"username": "team"})
    api(url, "POST", "/orgs/team/repos", {"name": "calc", "default_branch": "main", "auto_init": False})
    user = {"username": AGENT, "email": f"{AGENT}@agensh.local", "password": AGENT_PW, "must_change_password": False}
    api(url, "POST", "/admin/users", user)
    api(url, "PUT", f"/repos/{REPO}/collaborators/{AGENT}", {"permission": "write"})
    work = tmp / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    commit(work, "compile.sh")
    git("push", "-q", with_user(f"{url}/{REPO}.git", ADMIN), "main", cwd=work, password=ADMIN_PW)
    rule = {
        "rule_name": "main",
        "enable_push": True,
        "enable_push_whitelist": True,
        "push_whitelist_usernames": [ADMIN],
    }
    api(url, "POST", f"/repos/{REPO}/branch_protections", rule)
    return work, with_user(f"{url}/{REPO}.git", AGENT)


def head_of_main(url: str) -> str:
    return str(api(url, "GET", f"/repos/{REPO}/branches/main")["commit"]["id"])


def test_launcher_killed_mid_window_exports_the_deadline_head(gitea: str, tmp_path: Path):
    work, agent = team_repo(gitea, tmp_path)
    run = tmp_path / "run"
    rd = RunDir(run)
    deadline = time.time() + WINDOW_S
    kicked_off(run, TASK, deadline)
    a = ExportInputs(
        run_dir=str(run),
        task_id=TASK,
        gitea_url=gitea,
        gitea_user=ADMIN,
        repo=REPO,
        gitea_repositories=str(tmp_path / "no-preserved-data"),
        profile=PROFILE,
        grace_s=0,  # the launcher is dead: the keeper stops the team at once (none here)
    ).model_dump_json()
    env = {**os.environ, "AGENSH_INPUT": a, "AGENSH_GITEA_PASSWORD": ADMIN_PW}
    # the launcher's export step, in a process group of its own as the engine starts it
    launcher = subprocess.Popen(
        [sys.executable, "-m", "scripts.export"], cwd=ROOT, env=env, start_new_session=True, stderr=subprocess.PIPE
    )
    keeper = None
    try:
        end = time.monotonic() + 30
        while not keeper_alive(rd, TASK):
            assert launcher.poll() is None and time.monotonic() < end, "the export armed no keeper"
            time.sleep(0.2)
        keeper = int(rd.keeper_lock(TASK).read_text().split()[1])
        assert os.getsid(keeper) not in (os.getsid(0), launcher.pid)  # its own session: out of the launcher's reach
        os.killpg(launcher.pid, signal.SIGKILL)  # the launcher dies mid-window
        launcher.wait()
        assert keeper_alive(rd, TASK)

        git("checkout", "-q", "-b", "in-time", cwd=work)  # in the window the team still merges work
        commit(work, "solution.sh")
        git("push", "-q", agent, "in-time", cwd=work, password=AGENT_PW)
        merge(gitea, open_pull(gitea, "in-time"))
        deadline_head = head_of_main(gitea)

        git("fetch", "-q", agent, "main", cwd=work, password=AGENT_PW)  # and goes on from main after the deadline
        git("checkout", "-q", "-b", "late", "FETCH_HEAD", cwd=work)
        commit(work, "late.txt")
        git("push", "-q", agent, "late", cwd=work, password=AGENT_PW)
        late_pull = open_pull(gitea, "late")

        end = time.monotonic() + WINDOW_S + 60
        while (record := read_record(rd.freeze(TASK), Freeze)) is None:
            assert time.monotonic() < end, rd.keeper_log(TASK).read_text()
            time.sleep(0.5)
        assert time.time() >= deadline and record.by == "keeper" and record.head == deadline_head and record.on_time

        with pytest.raises(HTTPFailure) as refused:  # after the deadline: no merge, no push to main
            merge(gitea, late_pull)
        assert refused.value.status == 405 and "not allowed to merge" in refused.value.body, refused.value
        with pytest.raises(RuntimeError, match="protected branch"):  # a fast-forward: only the lock refuses it
            git("push", "-q", agent, "late:main", cwd=work, password=AGENT_PW)
        assert head_of_main(gitea) == deadline_head

        assert export.main([], {"AGENSH_INPUT": a, "AGENSH_GITEA_PASSWORD": ADMIN_PW}) == 0  # the resumed launcher
        receipt = json.loads(rd.receipt("export", TASK).read_text())["result"]
        assert receipt["commit"] == deadline_head and receipt["freeze"] == record.model_dump(mode="json")
        with tarfile.open(receipt["submission"]) as tar:
            assert tar.pax_headers["comment"] == deadline_head
            assert sorted(tar.getnames()) == ["compile.sh", "solution.sh"]  # not late.txt
        end = time.monotonic() + 10
        while keeper_alive(rd, TASK):  # its work done, the keeper is gone
            assert time.monotonic() < end
            time.sleep(0.2)
        assert "keeper: main frozen at" in rd.keeper_log(TASK).read_text()
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
        if keeper is not None and keeper_alive(rd, TASK):
            os.kill(keeper, signal.SIGKILL)


def test_the_team_stopped_when_no_export_started_by_the_deadline_and_grace(base_image: str, tmp_path: Path):
    """The keeper's last watch: a worker of the task runs on while an export runs; with none by the deadline and the
    grace, it is stopped (given the grace to seal its archive); another task's worker is left alone."""
    run = tmp_path / "run"
    rd = RunDir(run)
    kicked_off(run, TASK, time.time())
    a = ExportInputs(
        run_dir=str(run),
        task_id=TASK,
        gitea_url="http://unused",
        gitea_user=ADMIN,
        repo=REPO,
        gitea_repositories=str(tmp_path),
        profile=PROFILE,
        grace_s=1,
    )

    def worker(task: str) -> str:
        labels = {contract.PROFILE_LABEL: PROFILE, contract.ROLE_LABEL: "worker", contract.TASK_LABEL: task}
        made = subprocess.run(
            ["docker", "run", "-d", "--network", "none", "--label", LABEL]
            + [arg for k, v in labels.items() for arg in ("--label", f"{k}={v}")]
            + [base_image, "sleep", "infinity"],
            capture_output=True,
            text=True,
            check=True,
        )
        return made.stdout.strip()

    def running(cid: str) -> bool:
        state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", cid], capture_output=True, text=True)
        return state.stdout.strip() == "true"

    ours, theirs = worker(TASK), worker("other__task.0000000")
    try:
        lock = rd.lock("export", TASK)
        lock.parent.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(  # the launcher's export, alive past the deadline
            [
                sys.executable,
                "-c",
                f"import fcntl,time; f=open({str(lock)!r},'a'); fcntl.flock(f, fcntl.LOCK_EX); "
                "print('held', flush=True); time.sleep(60)",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert "an export has started" in stop_unexported(a, time.time() - 1)
        assert running(ours)
        holder.kill()
        holder.wait()
        said = stop_unexported(a, time.time())  # the launcher died: nothing exports
        assert "1 worker(s) stopped" in said, said
        assert not running(ours) and running(theirs)
    finally:
        subprocess.run(["docker", "rm", "-f", ours, theirs], capture_output=True)
