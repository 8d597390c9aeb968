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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from model import contract, steps
from model.project import ROOT
from model.records import Freeze, Receipt, Record, ShutdownResult, read_record
from model.rundir import RunDir
from model.step_inputs import ExportInputs
from scripts import export
from scripts.lib import launcher, transient
from scripts.lib.freeze import QUIET_S, SECRET_ENV, WATCH_S, arm, claim, keeper_alive, stop_abandoned, unit_name
from scripts.lib.gitops import git, with_user
from scripts.lib.http import HTTPFailure, request
from scripts.lib.step import StepFailed, now, run_step, write_atomic
from scripts.setup.service_images import GITEA_IMAGE, MARIADB_IMAGE
from tests.conftest import require
from tests.integration.conftest import docker as host_docker
from tests.integration.conftest import systemd_host  # noqa: F401 (a fixture of some of these tests)
from tests.scripts.conftest import kicked_off

RUN = uuid.uuid4().hex[:8]
LABEL = f"agensh.test=deadline-keeper-{RUN}"
ADMIN, ADMIN_PW = "pbench-admin", f"admin-{RUN}-pw"
AGENT_PW = f"agent-{RUN}-pw"
TASK = "testorg__calculator.abc1234"
WINDOW_S = 30  # from the launch of the export to the deadline: time to kill the launcher and push
PROFILE = f"keeper-{RUN}"


def inputs(run: Path, **over: Any) -> ExportInputs:
    """The export's (and its keeper's) inputs for a run directory of the test's; no Gitea unless `over` names one."""
    base: dict[str, Any] = {
        "run_dir": str(run),
        "task_id": TASK,
        "gitea_url": "http://127.0.0.1:9",
        "gitea_user": ADMIN,
        "repo": "team/calc",
        "gitea_repositories": str(run / "no-preserved-data"),
        "profile": PROFILE,
        "grace_s": 0,
    }
    return ExportInputs(**{**base, **over})


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
    a = inputs(tmp_path)
    RunDir(tmp_path).task(TASK).mkdir(parents=True)
    claim(RunDir(tmp_path).freeze(TASK), frozen("a" * 40))
    assert arm(a, "pw") == "not needed: main is frozen" and not keeper_alive(RunDir(tmp_path), TASK)


def test_the_export_undo_and_make_down_stop_the_keepers(tmp_path: Path):
    """A keeper armed far from its deadline is stopped by the export's undo (`pulumi destroy`); `make down` stops a
    profile's keepers, found by their command line, and no other profile's."""
    run = tmp_path / "run"
    rd = RunDir(run)
    kicked_off(run, TASK, time.time() + 3600)
    a = inputs(run)
    assert arm(a, "pw").startswith("armed (pid ")
    end = time.monotonic() + 30
    while not keeper_alive(rd, TASK):
        assert time.monotonic() < end, rd.keeper_log(TASK).read_text()
        time.sleep(0.2)
    assert arm(a, "pw") == "already armed"
    undo = subprocess.run(
        [sys.executable, "-m", "scripts.export", "disarm"],
        cwd=ROOT,
        env={**os.environ, "AGENSH_INPUT": a.model_dump_json()},
        capture_output=True,
        text=True,
    )
    assert undo.returncode == 0 and "keeper (pid" in undo.stderr + undo.stdout, undo.stderr
    end = time.monotonic() + 10
    while keeper_alive(rd, TASK):
        assert time.monotonic() < end
        time.sleep(0.2)

    sleep = "import time; time.sleep(120)"
    ours, theirs = (
        subprocess.Popen([sys.executable, "-c", sleep, "-m", "scripts.export", "keep", profile])
        for profile in (PROFILE, f"{PROFILE}-other")
    )
    try:
        down = subprocess.run(["bash", "scripts/host/down.sh", PROFILE], cwd=ROOT, capture_output=True, text=True)
        assert down.returncode == 0 and "stopped the deadline keepers" in down.stdout, down.stdout + down.stderr
        assert ours.wait(timeout=10) == -signal.SIGTERM and theirs.poll() is None
        bad = subprocess.run(["bash", "scripts/host/down.sh", ".*"], cwd=ROOT, capture_output=True, text=True)
        assert bad.returncode == 2 and "not a profile name" in bad.stderr and theirs.poll() is None
    finally:
        for proc in (ours, theirs):
            proc.kill()
            proc.wait()


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


class Team:
    """A team's repository in the module's Gitea (an organisation of its own per test) and its one agent."""

    def __init__(self, url: str, org: str):
        self.url, self.repo, self.agent = url, f"{org}/calc", (f"{org}-agent", AGENT_PW)

    def open_pull(self, head: str) -> int:
        """The agent's pull request of `head` into main (Gitea may take a moment to list a branch just pushed)."""
        end = time.monotonic() + 30
        while True:
            try:
                pull = {"head": head, "base": "main", "title": head}
                return int(api(self.url, "POST", f"/repos/{self.repo}/pulls", pull, self.agent)["number"])
            except HTTPFailure as err:
                if err.status != 404 or time.monotonic() > end:
                    raise
                time.sleep(0.5)

    def merge(self, number: int) -> None:
        """Merge a pull request as the agent, once Gitea has checked it."""
        end = time.monotonic() + 60
        while not api(self.url, "GET", f"/repos/{self.repo}/pulls/{number}")["mergeable"]:
            assert time.monotonic() < end, "the pull request never became mergeable"
            time.sleep(0.5)
        api(self.url, "POST", f"/repos/{self.repo}/pulls/{number}/merge", {"Do": "merge"}, self.agent)

    def create(self, tmp: Path) -> tuple[Path, str]:
        """The repository as the bootstrap and the seed leave it (main pushed by the administrator only), the agent
        with write access, and its clone; returns the clone and the remote as the agent."""
        org, name = self.repo.split("/")
        api(self.url, "POST", "/orgs", {"username": org})
        api(self.url, "POST", f"/orgs/{org}/repos", {"name": name, "default_branch": "main", "auto_init": False})
        user = {"username": self.agent[0], "email": f"{self.agent[0]}@agensh.local", "password": AGENT_PW}
        api(self.url, "POST", "/admin/users", {**user, "must_change_password": False})
        api(self.url, "PUT", f"/repos/{self.repo}/collaborators/{self.agent[0]}", {"permission": "write"})
        work = tmp / "work"
        work.mkdir()
        git("init", "-q", "-b", "main", cwd=work)
        commit(work, "compile.sh")
        git("push", "-q", with_user(f"{self.url}/{self.repo}.git", ADMIN), "main", cwd=work, password=ADMIN_PW)
        rule = {
            "rule_name": "main",
            "enable_push": True,
            "enable_push_whitelist": True,
            "push_whitelist_usernames": [ADMIN],
        }
        api(self.url, "POST", f"/repos/{self.repo}/branch_protections", rule)
        return work, with_user(f"{self.url}/{self.repo}.git", self.agent[0])

    def head_of_main(self) -> str:
        return str(api(self.url, "GET", f"/repos/{self.repo}/branches/main")["commit"]["id"])


class SessionLauncher:
    """The launcher's export step on this host, in a process group of its own as the engine starts it; killed."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scripts.export"], cwd=ROOT, env=env, start_new_session=True, stderr=subprocess.PIPE
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def end(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class UnitLauncher:
    """The launcher's export step in a transient systemd service with the detached launch's properties, on a host
    whose init is systemd; ended with `systemctl <how>` (`kill --signal=KILL`, or `stop`)."""

    UNIT = "agensh-up-keepertest"

    def __init__(self, host: dict[str, Any], env: dict[str, str], how: str):
        self.host, self.how = host, how
        argv = [sys.executable, "-m", "scripts.export"]
        log = Path(host["shared"]) / "launch.log"
        cmd = transient.service(self.UNIT, "test launcher", argv, env, log, props=launcher.UNIT_PROPS)
        host_docker("exec", host["name"], *cmd)

    def state(self) -> str:
        return host_docker("exec", self.host["name"], "systemctl", "is-active", self.UNIT, check=False)

    def alive(self) -> bool:
        return self.state() in ("active", "activating")

    def end(self) -> None:
        if self.alive():
            host_docker("exec", self.host["name"], "systemctl", *self.how.split(), f"{self.UNIT}.service")
        end = time.monotonic() + 30
        while self.alive():
            assert time.monotonic() < end, f"{self.UNIT} still {self.state()}"
            time.sleep(0.5)


@pytest.mark.slow(35)
@pytest.mark.parametrize("how", ["session", "kill --signal=KILL", "stop"])
def test_launcher_killed_mid_window_exports_the_deadline_head(gitea: str, tmp_path: Path, request, how: str):
    """`session`: the launcher on this host; otherwise in a systemd unit on a host whose init is systemd, ended with
    `systemctl <how>`, where the keeper runs as a service of its own: the end of the launcher's unit does not end it."""
    org = {"session": "session", "kill --signal=KILL": "killed", "stop": "stopped"}[how]
    team = Team(gitea, org)
    work, agent = team.create(tmp_path)
    host = None if how == "session" else request.getfixturevalue("systemd_host")
    run = Path(host["shared"] if host else tmp_path) / "run"
    rd = RunDir(run)
    deadline = time.time() + WINDOW_S
    kicked_off(run, TASK, deadline)
    a = inputs(run, gitea_url=gitea, repo=team.repo).model_dump_json()  # grace 0: the team stopped at once (none)
    env = {"PATH": os.environ["PATH"], "AGENSH_INPUT": a, "AGENSH_GITEA_PASSWORD": ADMIN_PW}
    if host:
        host_docker("network", "connect", f"agensh-keeper-{RUN}-net", host["name"])  # Gitea, for the keeper
    launch: SessionLauncher | UnitLauncher = SessionLauncher(env) if host is None else UnitLauncher(host, env, how)
    keeper = None
    try:
        end = time.monotonic() + 30
        while not keeper_alive(rd, TASK):
            assert launch.alive() and time.monotonic() < end, "the export armed no keeper"
            time.sleep(0.2)
        keeper = int(rd.keeper_lock(TASK).read_text().split()[1])
        if isinstance(launch, SessionLauncher):
            assert os.getsid(keeper) not in (os.getsid(0), launch.proc.pid)  # a session of its own
            environ = dict(v.split("=", 1) for v in Path(f"/proc/{keeper}/environ").read_text().split("\0") if v)
            assert ADMIN_PW not in str(environ) and not Path(environ[SECRET_ENV]).exists()  # read and deleted
        launch.end()  # the launcher dies mid-window
        assert keeper_alive(rd, TASK)
        if isinstance(launch, UnitLauncher):  # a service of its own, which outlived the launcher's
            unit = unit_name(ExportInputs.model_validate_json(a))
            said = host_docker("exec", launch.host["name"], "systemctl", "show", "-p", "MainPID,Environment", unit)
            assert f"MainPID={keeper}" in said and ADMIN_PW not in said
        assert time.time() < deadline, "the window was too short for this host"

        git("checkout", "-q", "-b", "in-time", cwd=work)  # in the window the team still merges work
        commit(work, "solution.sh")
        git("push", "-q", agent, "in-time", cwd=work, password=AGENT_PW)
        team.merge(team.open_pull("in-time"))
        deadline_head = team.head_of_main()

        git("fetch", "-q", agent, "main", cwd=work, password=AGENT_PW)  # and goes on from main after the deadline
        git("checkout", "-q", "-b", "late", "FETCH_HEAD", cwd=work)
        commit(work, "late.txt")
        git("push", "-q", agent, "late", cwd=work, password=AGENT_PW)
        late_pull = team.open_pull("late")

        end = time.monotonic() + WINDOW_S + 60
        while (record := read_record(rd.freeze(TASK), Freeze)) is None:
            assert time.monotonic() < end, rd.keeper_log(TASK).read_text()
            time.sleep(0.5)
        assert time.time() >= deadline and record.by == "keeper" and record.head == deadline_head and record.on_time

        with pytest.raises(HTTPFailure) as refused:  # after the deadline: no merge, no push to main
            team.merge(late_pull)
        assert refused.value.status == 405 and "not allowed to merge" in refused.value.body, refused.value
        with pytest.raises(RuntimeError, match="protected branch"):  # a fast-forward: only the lock refuses it
            git("push", "-q", agent, "late:main", cwd=work, password=AGENT_PW)
        assert team.head_of_main() == deadline_head

        assert export.main([], {"AGENSH_INPUT": a, "AGENSH_GITEA_PASSWORD": ADMIN_PW}) == 0  # the resumed launcher
        receipt = json.loads(rd.receipt("export", TASK).read_text())["result"]
        assert receipt["commit"] == deadline_head and receipt["freeze"] == record.model_dump(mode="json")
        with tarfile.open(receipt["submission"]) as tar:
            assert tar.pax_headers["comment"] == deadline_head
            assert sorted(tar.getnames()) == ["compile.sh", "solution.sh"]  # not late.txt
        end = time.monotonic() + QUIET_S + 10
        while keeper_alive(rd, TASK):  # its work done, the keeper is gone
            assert time.monotonic() < end
            time.sleep(0.2)
        assert "keeper: main frozen at" in rd.keeper_log(TASK).read_text()
    finally:
        launch.end()
        if keeper is not None and host is None and keeper_alive(rd, TASK):  # on the systemd host: removed with it
            os.kill(keeper, signal.SIGKILL)


def test_the_team_stopped_unless_a_launch_stops_it(base_image: str, tmp_path: Path):
    """The keeper's last watch: a worker of the task runs on while an export runs, even one whose earlier run failed;
    once no launch is at work by the deadline and the grace it is stopped (given the grace to seal its archive),
    another task's worker left alone; a launch whose shutdown completed is left to itself."""
    run = tmp_path / "run"
    rd = RunDir(run)
    kicked_off(run, TASK, time.time())
    a = inputs(run, grace_s=1)

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

    def failed() -> Record:
        raise StepFailed("Gitea unreachable")

    ours, theirs = worker(TASK), worker("other__task.0000000")
    try:
        assert run_step(steps.EXPORT, rd, TASK, a, failed) == 1  # the export failed: its receipt says so
        lock = rd.lock("export", TASK)
        holder = subprocess.Popen(  # the export, run again, alive past the deadline
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
        with ThreadPoolExecutor(1) as pool:
            watch = pool.submit(stop_abandoned, a, time.time() - 1)
            time.sleep(3 * WATCH_S)
            assert not watch.done() and running(ours)  # the export at work: the keeper waits
            holder.kill()  # the launcher dies with its export: nothing will stop the team
            holder.wait()
            said = watch.result(timeout=60)
        assert "1 worker(s) stopped" in said, said
        assert not running(ours) and running(theirs)

        subprocess.run(["docker", "start", ours], capture_output=True, check=True)
        write_atomic(
            rd.receipt("shutdown", TASK),
            Receipt[ShutdownResult](
                step="shutdown",
                task_id=TASK,
                inputs_digest="test",
                started=now(),
                finished=now(),
                status="ok",
                result=ShutdownResult(archives={}, archives_complete=True),
            ),
        )
        assert stop_abandoned(a, time.time() - 1) == "the launch's shutdown stopped the team"
        assert running(ours)
    finally:
        subprocess.run(["docker", "rm", "-f", ours, theirs], capture_output=True)
