"""The demo pipeline through the real engine, in a copy of the project with its own backend and profile:
the policy pack passes it; the documented launch, detached from a terminal that hangs up, killed during the export
wait, resumes detached and finishes on its own with score 1.0 without re-running completed steps, `status` following
it and a second launch refused while one runs; the real Gitea refuses a direct push to `main` and the merged pull
request's merge commit is the exported HEAD; MariaDB runs with the profile's max_connections; a further `up` changes
nothing; destroy leaves nothing labelled behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from model import contract
from model.profile import parse_profile
from model.project import ROOT
from model.roles import ROLES
from model.rundir import ProfileDir
from model.services import secret_key, spec
from model.topology import Layout
from scripts.lab.sandbox import PREVIEW_ENV, free_octet, isolated_env, profile_config, project_copy
from scripts.lib.gitops import git, with_user
from scripts.lib.http import request
from scripts.setup import demo_images, service_images

TASK = "testorg__calculator.abc1234"
SLUG = "testorg-calculator-abc1234"
MAX_CONNECTIONS = 321  # not the profile's default nor MariaDB's, so the query shows the profile's value arrived
# The task budget of the tests' demo-shaped runs (the demo, the swarm demo, the fault cells): 144 s, not the demo's
# 180. The kickoff comes 70 s after the first wake (the 5 s stagger, the 5 s settle, the 60 s least wait the profile
# allows), the 1-minute reminder 14 s after it (still sent, not skipped as passed) and the deadline 74 s after it; the
# scripted solver has merged its pull request about 5 s after the kickoff, and the team only idles until the
# deadline: each run waits 36 s less, on the same path.
BUDGET_HOURS = 0.04


def reach_from_worker_1(profile: str, proj: Path) -> None:
    """From inside worker 1, while the team works: the services it needs and its own router answer; worker 2's token,
    the database, the model, the egress network's gateway and any address outside do not."""
    raw = yaml.safe_load((proj / "stacks" / f"{profile}.profile.yaml").read_text())["config"]
    p = parse_profile({k.split(":", 1)[1]: v for k, v in raw.items()})
    by_role = {(c.role, c.index): c for c in Layout.of(p).placements}
    worker = by_role[("worker", 1)].name

    def code(url: str) -> str:
        out = subprocess.run(
            ["docker", "exec", worker, "curl", "-s", "-o", "/dev/null", "-m", "3", "-w", "%{http_code}", url],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() or "000"

    answer = {
        role: f"http://{by_role[(role, None)].internal_ip}:{ROLES[role].port}{path}"
        for role, path in (
            ("egress-proxy", "/healthz"),
            ("gitea", "/api/healthz"),
            ("mattermost", "/api/v4/system/ping"),
            ("board", "/healthz"),
            ("secret-service", "/healthz"),
        )
    }
    answer["own router"] = f"http://{by_role[('worker', 1)].router_ip}:{ROLES['router'].port}/healthz"
    answer["own token"] = f"http://{by_role[('secret-service', None)].internal_ip}:8080/token/{TASK}-1"
    for what, url in answer.items():
        assert code(url) == "200", what
    refused = {
        "worker 2's token": f"http://{by_role[('secret-service', None)].internal_ip}:8080/token/{TASK}-2",
        "the database": f"http://{by_role[('mysql', None)].data_ip}:3306/",
        "the model": f"http://{by_role[('model', None)].egress_ip}:8080/v1/models",
        "the egress gateway": f"http://{p.egress_network.network_address + 1}/",
        "outside": "http://192.0.2.1/",
    }  # TEST-NET-1: nothing leaves an internal network anyway
    for what, url in refused.items():
        assert code(url) in ("000", "403"), what


def check_report_in_chromium(page: Path, run_dir: Path, tmp: Path) -> None:
    """The demo's own report.html, opened in headless Chromium: the score, the timeline with the ramp's wakes, the
    provenance; nothing fetched; the screenshot kept as a test artifact."""
    from tests.conftest import require
    from tests.scripts.test_report import assert_timeline, browse, card

    exe = shutil.which("chromium") or "/usr/bin/chromium"
    require(Path(exe).exists(), "Debian's chromium (apt-get install chromium)")
    artifacts = Path(os.environ.get("AGENSH_TEST_ARTIFACTS", ROOT / ".test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    seen = browse(exe, page, tmp, artifacts / "report-demo-run.png")
    assert seen.requests == []
    c = card(seen.dom, TASK)
    assert (c.field("score"), c.field("status")) == ("1.0000", "scored")
    assert_timeline(
        c, ("ramp start", "wake", "kickoff", "reminder", "deadline", "export", "archive grace", "evaluation")
    )
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    provenance = seen.dom.find("section", **{"class": "provenance"})[0]
    assert provenance.field("profile-digest") == manifest["profile_digest"]
    assert {n.text() for n in provenance.find(data_field="image-id")} == set(manifest["images"].values())


def assert_no_secret(values, *roots: Path) -> None:
    """No file under `roots` (state and its backups and history, receipts, logs, copies) holds a secret's value."""
    for root in roots:
        for path in (f for f in root.rglob("*") if f.is_file() and not f.is_symlink()):
            data = path.read_bytes()
            assert not any(v.encode() in data for v in values), path


def labelled(profile: str) -> dict[str, list[str]]:
    f = f"label=agensh.profile={profile}"
    kinds = {
        "containers": ["ps", "-aq"],
        "networks": ["network", "ls", "-q"],
        "volumes": ["volume", "ls", "-q"],
        "images": ["images", "-q"],
    }
    return {
        k: subprocess.run(["docker", *cmd, "--filter", f], capture_output=True, text=True).stdout.split()
        for k, cmd in kinds.items()
    }


class Detached:
    """A detached launcher, known by its pid (it leads a session of its own)."""

    def __init__(self, pid: int):
        self.pid = pid

    def alive(self) -> bool:
        try:  # a zombie (not reaped yet) has ended
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def kill_session(self) -> None:
        subprocess.run(["pkill", "-KILL", "-s", str(self.pid)], capture_output=True)
        for _ in range(100):
            if not self.alive():
                return
            time.sleep(0.1)


def worker_logs(profile: str) -> str:
    """The scripted workers' logs (what they did against Gitea), for a failure's message."""
    names = subprocess.run(
        [
            "docker",
            "ps",
            "-a",
            "--format",
            "{{.Names}}",
            "--filter",
            f"label={contract.PROFILE_LABEL}={profile}",
            "--filter",
            f"label={contract.ROLE_LABEL}=worker",
        ],
        capture_output=True,
        text=True,
    ).stdout.split()
    return "\n".join(
        f"--- {n}\n" + subprocess.run(["docker", "logs", n], capture_output=True, text=True).stdout[-2000:]
        for n in sorted(names)
    )


Sandbox = tuple[Path, str, dict[str, str], Callable[..., subprocess.CompletedProcess[str]], Path, Path, Path]


@contextmanager
def demo_sandbox(
    tmp_path: Path, name: str, checkout: Callable[[Path], object] | None = None, **settings: Any
) -> Iterator[Sandbox]:
    """A copy of the project whose stack is the demo profile under its own name, octet and data root, and with
    private image tags (stand-ins and uncached builds), so runs beside each other never rebuild or remove the images
    of another (the real Gitea and MariaDB images are keyed by their content and kept). `checkout` makes another
    checkout in the copy (given the project's folder) before the stack is made; `settings` are the profile's own.
    Everything labelled with the profile is removed after, also when the test failed."""
    profile, octet = f"{name}-{uuid.uuid4().hex[:4]}", free_octet()
    standin, mattermost = demo_images.standin_images(profile)
    proj = project_copy(
        tmp_path,
        profile,
        profile_config(
            "demo.profile.yaml",
            profile=profile,
            subnet_octet=octet,
            llm_upstream=f"http://10.{octet}.255.3:8080",
            data_root=str(tmp_path / "data"),
            traj_root=str(tmp_path / "traj"),
            uncached=True,
            mattermost_image=mattermost,
            **settings,
        ),
        standin_image=standin,
    )
    if checkout:
        checkout(proj)
    env = isolated_env(tmp_path, f"{name}-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def run(*args: str, check: bool = True, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(args, cwd=proj, env={**env, **(extra or {})}, capture_output=True, text=True)
        assert not check or out.returncode == 0, f"{args}: {out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return out

    try:
        run(sys.executable, "-m", "scripts.setup.demo_images", "--standin-tag", profile)
        shutil.copy(
            proj / "policies" / "demo.json", proj / "stacks" / f"{profile}.policy.json"
        )  # as scripts/setup/demo.sh does
        run(
            sys.executable,
            "-m",
            "scripts.cli",
            "new-stack",
            profile,
            "--from",
            f"stacks/{profile}.profile.yaml",
            "--env-file",
            "none",
            "--set",
            "host_units=off",
        )
        yield proj, profile, env, run, tmp_path / "data" / profile, tmp_path / "traj", tmp_path / "state"
    finally:
        subprocess.run(["pkill", "-f", str(proj)], capture_output=True)  # any step program a failed test left running
        run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile, check=False)
        run("pulumi", "stack", "rm", "--yes", "--force", "--non-interactive", "-s", profile, check=False)
        left = labelled(profile)
        for kind, cmd in (
            ("containers", ["rm", "-f"]),
            ("networks", ["network", "rm"]),
            ("volumes", ["volume", "rm"]),
            ("images", ["rmi", "-f"]),
        ):
            if left[kind]:
                subprocess.run(["docker", *cmd, *left[kind]], capture_output=True)
        subprocess.run(["docker", "rmi", mattermost, standin], capture_output=True)


@pytest.fixture
def demo(tmp_path: Path, pulumi_engine: str, base_image: str) -> Iterator[Sandbox]:
    with demo_sandbox(tmp_path, "demoit", mysql_max_connections=MAX_CONNECTIONS, hours=BUDGET_HOURS) as sandbox:
        yield sandbox


@pytest.mark.slow(365)
def test_demo_resumes_scores_and_cleans_up(demo):
    proj, profile, env, run, data, traj, state = demo
    policy = ["--policy-pack", "policies", "--policy-pack-config", f"stacks/{profile}.policy.json"]

    def steps_in_state() -> dict[str, tuple[str, str]]:
        """Each step resource in the stack's state, by step name: (its id, when the engine created it)."""
        state = json.loads(run("pulumi", "stack", "export", "--non-interactive", "-s", profile).stdout)
        steps = {}
        for r in state["deployment"].get("resources") or []:
            if r["type"] == "command:local:Command" and "-" in r["urn"]:
                name = r["urn"].rsplit("::", 1)[1].removeprefix("experiment-").removeprefix(f"{SLUG}-")
                steps[name] = (r.get("id"), r.get("created"))
        return steps

    # as typed after `. scripts/env.sh` (the pack attached by PULUMI_OPTION_POLICY_PACK), with `make preview`'s
    # settings: the pack finds the stack's own numbers (the demo's relaxation of image-pins) by itself
    pack_by_env = {**PREVIEW_ENV, "PULUMI_OPTION_POLICY_PACK": str(proj / "policies")}
    preview = run("pulumi", "preview", "--non-interactive", "-s", profile, extra=pack_by_env)
    assert "agensh@v0.0.1" in preview.stdout and "mandatory" not in preview.stdout

    # First, the documented launch (`make up`), detached, from a terminal's session that then hangs up: the launch goes
    # on without it, and a second launch of the stack is refused while it runs. It is killed (its whole session:
    # the launcher, `pulumi`, its plugins, the step programs) while the export step waits for the deadline.
    run_dir = data / "20261129t000000z"
    terminal = subprocess.Popen(
        ["bash", "scripts/host/launch.sh", "up", profile, "--yes"],
        cwd=proj,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        said, _ = terminal.communicate(timeout=300)  # it returns once the update has begun
    finally:
        subprocess.run(["pkill", "-HUP", "-s", str(terminal.pid)], capture_output=True)  # the terminal hangs up
    assert terminal.returncode == 0 and "make stop STACK=" in said, said
    record = json.loads((run_dir / "launch.lock").read_text())
    assert record["how"] == "session" and record["ended"] is None, record
    first = Detached(record["pid"])
    refused = run("bash", "scripts/host/launch.sh", "up", profile, "--yes", check=False)
    assert refused.returncode == 2 and "is being launched" in refused.stderr, refused.stdout + refused.stderr
    try:
        kickoff = run_dir / TASK / "receipts" / "kickoff.json"
        deadline = time.time() + 400
        seen: list[tuple[str, float | None]] = []  # `status --json` while the up runs: (phase, time to the deadline)

        def status() -> None:
            view = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)["tasks"][0]
            seen.append((view["phase"], view["time_to_deadline_s"]))

        while not kickoff.exists() and first.alive() and time.time() < deadline:
            status()
            time.sleep(0.5)
        assert kickoff.exists(), (run_dir / "launch.log").read_text()[-3000:]
        for _ in range(3):  # the export step is now waiting for the task's deadline
            status()
            time.sleep(3)
        reach_from_worker_1(profile, proj)
        assert first.alive() and not (run_dir / TASK / "submission.tar.gz").exists()
        launch = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)["launch"]
        assert launch["running"] and launch["launcher_alive"] and launch["log"] == str(run_dir / "launch.log")
        phases = [phase for phase, _ in seen]
        assert "ramp" in phases and phases.index("ramp") < phases.index("working"), phases
        left = [t for phase, t in seen if phase == "working"]
        assert len(left) >= 2 and left == sorted(left, reverse=True) and left[-1] < left[0], seen
    finally:  # also when an assertion above failed
        first.kill_session()  # the launcher, `pulumi`, its plugins and the step programs they run
    kicked = json.loads(kickoff.read_text())["result"]
    done = steps_in_state()
    assert {"seed", "wake", "kickoff", "preflight-host", "manifest-start"} <= set(done), done

    # The next `make up` resumes (after `pulumi cancel` drops the killed run's lock), detached again, and finishes on
    # its own while `status` follows it: completed steps stay done (the engine does not create them again), the
    # export waits only for what remains.
    run("pulumi", "cancel", "--yes", "--non-interactive", "-s", profile)
    resumed = run("bash", "scripts/host/launch.sh", "up", profile, "--yes")  # returns once its update has begun
    assert "make stop STACK=" in resumed.stdout, resumed.stdout
    ends = time.time() + 600
    while (launch := json.loads((run_dir / "launch.lock").read_text()))["ended"] is None and time.time() < ends:
        following = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)
        assert following["launch"]["running"] or json.loads((run_dir / "launch.lock").read_text())["ended"]
        time.sleep(5)
    assert launch["exit"] == 0, (run_dir / "launch.log").read_text()[-3000:]
    ended = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)["launch"]
    assert (ended["running"], ended["exit"]) == (False, 0), ended
    launch_log = (run_dir / "launch.log").read_bytes()  # the launcher added its whole log to the verified copy
    assert (traj / f"{profile}.20261129t000000z" / "launch.log").read_bytes() == launch_log
    after = steps_in_state()
    for step in ("seed", "wake", "kickoff", "preflight-host", "manifest-start"):
        assert after[step] == done[step], step  # the same resource, never created again
    assert json.loads(kickoff.read_text())["result"] == kicked
    score = json.loads((run_dir / TASK / "score.json").read_text())
    assert score["score"] == 1.0 and score["complete"], (score, worker_logs(profile))
    export = json.loads((run_dir / TASK / "receipts" / "export.json").read_text())["result"]
    assert export["exported_at"] >= kicked["deadline"]
    assert export["freeze"]["head"] == export["commit"] and export["freeze"]["late_s"] <= 60, export  # main frozen
    final = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)["tasks"][0]
    assert (final["phase"], final["score"], final["repo"]["merged_pull_requests"]) == ("scored", 1.0, 1)
    # the steps print one short human line per event: no receipt JSON on the console, no line wider than 160
    console = (run_dir / "launch.log").read_text().splitlines()  # both launches
    from_steps = [
        line
        for line in console
        if re.match(r"^ [+~-] +command:local:Command \S+ \w+ \(\S+\) \S", line)
        and "error: signal: killed" not in line  # the engine's own line for a step the test's kill ended
    ]
    too_long = [line for line in from_steps if '{"' in line or len(line) > 160]
    assert from_steps and not too_long, too_long
    assert any("wake: worker 2 of 2 awake" in line for line in from_steps)
    outputs = json.loads(run("pulumi", "stack", "output", "--json", "--non-interactive", "-s", profile).stdout)
    assert outputs["provenance"]["scores"][TASK]["score"] == 1.0
    check_report_in_chromium(Path(outputs["report"]), run_dir, proj.parent)
    assert outputs["provenance"]["manifest"]["requested_task_ids"] == [TASK]
    # every worker was a real Copilot CLI session at the pin; the report shows each one's turns and tool calls
    assert (
        sorted(outputs["provenance"]["result"]["copilot_versions"].values())
        == [contract.OFFLINE_ACP_COPILOT_VERSION] * 2
    )
    sessions = json.loads((run_dir / TASK / "receipts" / "shutdown.json").read_text())["result"]["sessions"]
    assert len(sessions) == 2 and all(s["turns"] >= 1 and s["tool_calls"] >= 5 for s in sessions.values()), sessions
    assert Path(outputs["report"]).read_text().count('data-field="turns"') == 2
    assert env["LLM_UPSTREAM_TOKEN"] not in json.dumps(outputs)
    stats = subprocess.run(
        ["docker", "exec", f"omcgitea-{profile}-model", "curl", "-s", "http://127.0.0.1:8080/stats"],
        capture_output=True,
        text=True,
    ).stdout
    assert json.loads(stats)["ok"] >= 3  # preflight and both workers reached the stand-in model through the proxy

    gitea = f"http://{outputs['addresses'][contract.resource_name(profile, 'gitea')]['internal']}:{ROLES['gitea'].port}"
    gitea_proves_the_pull_request_flow(gitea, ProfileDir(data), export["commit"], proj.parent)
    query = (
        "SELECT @@max_connections, COUNT(*) FROM information_schema.tables "
        f"WHERE table_schema = '{contract.GITEA_DATABASE}'"
    )
    mysql = subprocess.run(
        [
            "docker",
            "exec",
            contract.resource_name(profile, "mysql"),
            "sh",
            "-c",
            f'MYSQL_PWD="$MYSQL_ROOT_PASSWORD" mariadb -uroot -h 127.0.0.1 -N -B -e "{query}"',
        ],
        capture_output=True,
        text=True,
    )  # the password stays inside the container
    connections, gitea_tables = map(int, mysql.stdout.split())
    assert connections == MAX_CONNECTIONS and gitea_tables > 50, mysql.stderr  # Gitea's data is in MariaDB

    again = run("pulumi", "up", "--yes", "--expect-no-changes", "--non-interactive", "-s", profile, *policy)
    assert "unchanged" in again.stdout

    # Secrets stay where the contract puts them: each container holds only the secrets its role is given (the model
    # token: the proxy and the demo's stand-in model, as a hash), no receipt or log holds one
    secrets = {
        k.split(":", 1)[1]: v["value"]
        for k, v in json.loads(
            run("pulumi", "config", "--show-secrets", "--json", "--non-interactive", "-s", profile).stdout
        ).items()
        if v.get("secret")
    }
    assert set(secrets) == set(contract.SECRET_KEYS)
    raw = yaml.safe_load((proj / "stacks" / f"{profile}.profile.yaml").read_text())["config"]
    p = parse_profile({k.split(":", 1)[1]: v for k, v in raw.items()})
    given: dict[str, set[str]] = {}
    for c in Layout.of(p).placements:
        given.setdefault(c.role, set()).update(map(secret_key, spec(p, c).secret_env.values()))
    assert given["worker"] == {"worker_proxy_token"} and "llm_upstream_token" in given["egress-proxy"]
    for name in labelled(profile)["containers"]:
        info = json.loads(subprocess.run(["docker", "inspect", name], capture_output=True, text=True).stdout)[0]
        role = info["Config"]["Labels"][contract.ROLE_LABEL]
        held = {k for k, v in secrets.items() if any(v in e for e in info["Config"]["Env"])}
        assert held <= given[role], (role, held - given[role])
    assert_no_secret(secrets.values(), run_dir, traj)

    # Results are kept: the run's verified copy is outside the data; a destroy refuses while it is not whole
    copy = traj / f"{profile}.20261129t000000z"
    submission = copy / TASK / "submission.tar.gz"
    assert submission.read_bytes() == (run_dir / TASK / "submission.tar.gz").read_bytes()
    assert json.loads((run_dir / "run_manifest.json").read_text())["preserved"] == {TASK: True}
    good = submission.read_bytes()
    submission.write_bytes(b"corrupted")
    refused = run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile, check=False)
    assert refused.returncode != 0 and "submission.tar.gz differs" in refused.stdout + refused.stderr
    assert labelled(profile)["containers"] and (run_dir / TASK / "score.json").exists()  # nothing was deleted
    submission.write_bytes(good)
    run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile)
    assert labelled(profile) == {"containers": [], "networks": [], "volumes": [], "images": []}
    assert not data.exists()
    assert json.loads((copy / TASK / "score.json").read_text())["score"] == 1.0  # the copy stays
    assert_no_secret(secrets.values(), state, traj)  # the state, its backups and history: only ciphertext


def gitea_proves_the_pull_request_flow(gitea: str, pd: ProfileDir, exported: str, tmp: Path) -> None:
    """Against the demo's real Gitea, as worker 2 (its token from the bootstrap): the real server, worker 1's merged
    pull request whose merge commit is the exported HEAD, and a direct push to `main` refused."""
    token = pd.data("tokens", f"{contract.agent_id(TASK, 2)}.token").read_text().strip()
    repo = f"{gitea}/api/v1/repos/{contract.team_repo(TASK)}"
    assert request("GET", f"{gitea}/api/v1/version", token=token)[1]["version"] == service_images.GITEA_VERSION
    user = request("GET", f"{gitea}/api/v1/user", token=token)[1]["login"]
    pulls = request("GET", f"{repo}/pulls?state=closed", token=token)[1]
    merged = [pr for pr in pulls if pr["merged"]]
    assert [(pr["head"]["ref"], pr["base"]["ref"]) for pr in merged] == [("agent-1", "main")], pulls
    assert merged[0]["merge_commit_sha"] == exported
    remote = with_user(f"{gitea}/{contract.team_repo(TASK)}.git", user)
    clone = tmp / "direct"
    git("clone", "-q", "--branch", "main", remote, str(clone), password=token)
    assert git("rev-parse", "HEAD", cwd=clone) == exported
    (clone / "direct.txt").write_text("must not land on main\n")
    git("add", "-A", cwd=clone)
    git("commit", "-q", "-m", "a direct push", cwd=clone)
    with pytest.raises(RuntimeError, match="protected branch"):
        git("push", remote, "HEAD:main", cwd=clone, password=token)
    assert git("ls-remote", remote, "refs/heads/main", password=token).split()[0] == exported
