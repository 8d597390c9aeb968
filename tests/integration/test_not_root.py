"""The demo's pipeline run by a user who is not root but has passwordless sudo and the docker group, as the seed's
operators run: the documented launch to a score of 1.0, then the documented destroy, which deletes the data the
containers own and leaves nothing labelled. This host runs the tests as root and keeps its users as they are, so the
user lives in a container of its own (the systemd test host's image, scripts/setup/base_image.sh systemd, started with
a shell) on this host's network, with this host's Docker socket and client, the venv, the toolchain and the sandbox
mounted at their own paths: a bind mount names a host path, so the data root is at the same path inside and outside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from model import contract
from model.checkout import CONVENTIONS
from model.project import DEMO_CHECKOUT, ROOT
from model.root_powers import as_root
from model.rundir import ProfileDir
from scripts.setup import demo_images
from tests.checkouts import cc_log
from tests.integration.conftest import docker, venv_mounts
from tests.integration.test_demo import BUDGET_HOURS, TASK, demo_sandbox, labelled, worker_logs

USER, UID = "researcher", 4242  # not root, not the workers' uid
IMAGE = "agensh-systemd-host:bookworm"  # the test host's image, here without its init
CONVENTION = CONVENTIONS["cc-log"]
STUCK_MS = 15_000  # the routers' silence limit: a hung model request of agent 1 is cancelled after it
RUN_ID = "20261129t000000z"  # the demo profile's


def user_image() -> str:
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup" / "base_image.sh"), "systemd"], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return IMAGE


@pytest.fixture
def user_host(tmp_path: Path, pulumi_engine: str, base_image: str) -> Iterator[tuple[str, Path, str, dict[str, str]]]:
    """The user's host: a container with USER (passwordless sudo, in the group of this host's Docker socket) whose
    home is in the sandbox, and the demo's profile with the second test checkout (tests/checkouts, the cc-log
    convention: one pipeline run proves both). Yields the container, the project copy, the profile and the sandbox's
    environment (root's, for the test's own looks); all is removed after."""
    image = user_image()
    blobs = str(demo_images.BLOBS)  # made by the sandbox (demo_images), read by the evaluation at this path
    with demo_sandbox(
        tmp_path,
        "notroot",
        lambda proj: cc_log(proj / "demo" / "cc-log", proj / DEMO_CHECKOUT),
        agensh_checkout="demo/cc-log",
        checkout_convention="cc-log",
        mini_router_stuck_ms=STUCK_MS,
        eval_blob_dir=blobs,
        hours=BUDGET_HOURS,  # the hang armed at the kickoff is cancelled STUCK_MS later, in a 74 s work window
    ) as (proj, profile, sandbox_env, *_):
        home = tmp_path / "home"
        home.mkdir()
        subprocess.run(["chown", "-R", f"{UID}:{UID}", str(tmp_path)], check=True)  # the sandbox is the user's
        toolchain = os.environ["AGENSH_TOOLCHAIN"]
        name = f"agensh-test-user-{uuid.uuid4().hex[:8]}"
        sock = "/var/run/docker.sock"
        try:
            docker(
                "run",
                "-d",
                "--name",
                name,
                "--label",
                f"agensh.test={name}",
                "--network",
                "host",  # the steps reach the profile's services on its bridge networks, as on the host
                "-v",
                f"{sock}:{sock}",
                "-v",
                f"{shutil.which('docker')}:/usr/local/bin/docker:ro",
                *venv_mounts(),
                "-v",
                f"{toolchain}:{toolchain}:ro",
                "-v",
                f"{blobs}:{blobs}:ro",
                "-v",
                f"{tmp_path}:{tmp_path}",
                image,
                "sleep",
                "infinity",
            )
            gid = os.stat(sock).st_gid
            made = (
                "chmod 755 /root"  # the venv's Python and the toolchain are mounted under it, as on this host
                f" && groupadd -g {gid} dockersock && useradd -u {UID} -U -G dockersock -d {home} -M {USER}"
                f" && echo '{USER} ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/{USER}"
            )
            docker("exec", name, "sh", "-c", made)
            yield name, proj, profile, sandbox_env
        finally:
            docker("rm", "-f", name, check=False)


def as_user(host: str, proj: Path, env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    """`command` in the user's login-less shell at the project copy, after `. scripts/env.sh`."""
    pairs = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
    return subprocess.run(
        ["docker", "exec", "-u", USER, "-w", str(proj), *pairs, host, "bash", "-c", f". scripts/env.sh && {command}"],
        capture_output=True,
        text=True,
    )


def failed(out: subprocess.CompletedProcess[str], run_dir: Path) -> str:
    """What a failed command said, with the errors its steps recorded in their receipts."""
    receipts = sorted(run_dir.rglob("receipts/*.json")) if run_dir.exists() else []
    errors = [f"{r.name}: {e}" for r in receipts if (e := json.loads(r.read_text()).get("error"))]
    return "\n".join([*errors, out.stdout[-3000:], out.stderr[-3000:]])


@pytest.mark.slow(270)
def test_the_demo_runs_and_is_destroyed_by_a_user_with_passwordless_sudo(user_host, tmp_path):
    """As the user: the documented launch to 1.0 and the destroy. Through the second test checkout (cc-log): the
    kickoff, `status`, the shutdown and the report read its sessions through the profile's convention, never the
    demo's log lines; its preflight ran its own self-check; a model request made to hang is cancelled by the
    router's watchdog and the work goes on."""
    host, proj, profile, sandbox_env = user_host
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": f"{os.environ['AGENSH_TOOLCHAIN']}/bin:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "AGENSH_TOOLCHAIN": os.environ["AGENSH_TOOLCHAIN"],
        "PULUMI_HOME": str(tmp_path / "home" / ".pulumi"),  # the user's own, as `make setup` registers them
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "notroot-it",  # demo_sandbox's
        "PYTHONPATH": str(proj),
    }
    who = as_user(host, proj, env, "id -u && sudo -n true && docker info --format '{{.ServerVersion}}'")
    assert who.returncode == 0 and who.stdout.split()[0] == str(UID), who.stdout + who.stderr
    plugins = " && ".join(
        f"pulumi plugin install resource {p} ${v} --file $AGENSH_TOOLCHAIN/plugins/pulumi-resource-{p} >/dev/null"
        for p, v in (("command", "PULUMI_COMMAND_VERSION"), ("docker", "PULUMI_DOCKER_VERSION"))
    )
    registered = as_user(host, proj, env, f". scripts/setup/versions.env && {plugins}")
    assert registered.returncode == 0, registered.stderr

    t0 = time.monotonic()
    pairs = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
    launch = f". scripts/env.sh && bash scripts/host/launch.sh up {profile} --yes --foreground"
    log = tmp_path / "up.log"
    with open(log, "w") as out:  # a file, not a pipe: the whole run's output would fill a pipe and stop the launch
        up = subprocess.Popen(
            ["docker", "exec", "-u", USER, "-w", str(proj), *pairs, host, "bash", "-c", launch],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    run_dir = tmp_path / "data" / profile / RUN_ID
    receipts = run_dir / TASK / "receipts"
    try:
        while not (receipts / "kickoff.json").exists() and up.poll() is None and time.monotonic() - t0 < 600:
            time.sleep(1)
        assert (receipts / "kickoff.json").exists(), log.read_text()[-3000:]
        hang = subprocess.run(  # agent 1's next model request hangs (the stand-in model's fault, for an hour)
            ["docker", "exec", contract.resource_name(profile, "model"), "curl", "-s", "-X", "POST"]
            + ["-H", f"Authorization: Bearer {sandbox_env['LLM_UPSTREAM_TOKEN']}", "-d", '{"faults": ["hang@1"]}']
            + ["http://127.0.0.1:8080/faults"],
            capture_output=True,
            text=True,
        )
        assert '"pending": ["hang@1"]' in hang.stdout, hang
        # while the team works, `status` reads each session from its cc.log
        shown = subprocess.run(
            [sys.executable, "-m", "scripts.cli", "status", profile, "--json"],
            cwd=proj,
            env=sandbox_env,
            capture_output=True,
            text=True,
        )
        view = json.loads(shown.stdout)["tasks"][0]
        assert [w["session"]["copilot_version"] for w in view["workers"]] == [contract.OFFLINE_ACP_COPILOT_VERSION] * 2
        assert all(w["last_activity"] for w in view["workers"]), view
        up.wait(timeout=900)
    finally:
        if up.poll() is None:
            up.kill()
            docker("exec", host, "pkill", "-KILL", "-u", USER, check=False)
    took_up = time.monotonic() - t0
    assert up.returncode == 0, failed(subprocess.CompletedProcess([], up.returncode, log.read_text(), ""), run_dir)
    assert json.loads((run_dir / TASK / "score.json").read_text())["score"] == 1.0, worker_logs(profile)
    archives = list((tmp_path / "data" / profile / "data" / "agents").rglob("state.tar.gz"))
    assert archives and all(a.stat().st_uid != UID for a in archives)  # the containers' own files, to be deleted
    assert all((a.parent / "activity.jsonl").stat().st_uid != UID for a in archives)  # kept in the workers' folders
    cc_log_checkout_was_read_by_its_convention(profile, run_dir, tmp_path / "data" / profile)

    t1 = time.monotonic()
    down = as_user(host, proj, env, f".venv/bin/python -m scripts.cli destroy {profile} --yes")
    took_destroy = time.monotonic() - t1
    assert down.returncode == 0, failed(down, run_dir)
    assert not (tmp_path / "data" / profile).exists()
    assert labelled(profile) == {"containers": [], "networks": [], "volumes": [], "images": []}
    assert json.loads((tmp_path / "traj" / f"{profile}.20261129t000000z" / TASK / "score.json").read_text())["score"]
    print(f"as {USER}: launch to 1.0 in {took_up:.0f} s, destroy in {took_destroy:.0f} s")


def cc_log_checkout_was_read_by_its_convention(profile: str, run_dir: Path, data: Path) -> None:
    """The second test checkout's run: its self-check in the preflight, its sessions from cc.log (kickoff, shutdown,
    the report), no demo-log line in any worker's log, and the hung request cancelled by its router's watchdog."""
    preflight = json.loads((run_dir / "receipts" / "preflight-host.json").read_text())["result"]["checks"]
    assert "with the cc-log convention" in preflight["checkout"]["detail"]
    assert CONVENTION.selfcheck.line in preflight["workers"]["detail"]
    receipts = run_dir / TASK / "receipts"
    kicked = json.loads((receipts / "kickoff.json").read_text())["result"]["sessions"]
    assert sorted(kicked.values()) == [contract.OFFLINE_ACP_COPILOT_VERSION] * 2
    sessions = json.loads((receipts / "shutdown.json").read_text())["result"]["sessions"]
    assert len(sessions) == 2 and all(s["turns"] >= 1 and s["tool_calls"] >= 5 for s in sessions.values()), sessions
    for agent in kicked:  # the events the shutdown kept are the checkout's own (cc.log's shape)
        kept = ProfileDir(data).archive_dir(agent, RUN_ID) / "activity.jsonl"
        events = [json.loads(line) for line in kept.read_text().splitlines()]
        assert events[0]["type"] == CONVENTION.report.version_event and "kind" not in events[0], events[0]
    assert "activity {" not in worker_logs(profile)
    router = subprocess.run(
        ["docker", "logs", contract.member_name(profile, TASK, "router", 1)], capture_output=True, text=True
    ).stdout
    assert f"mini-router: ACP silence watchdog MINI_ROUTER_STUCK_MS={STUCK_MS}" in router
    decided = router.count(f"mini-router: watchdog: {TASK}-1 silent")  # each cancel was the router's answer
    assert decided >= 1 and "cancel its prompt" in router, router
    assert sessions[contract.member_name(profile, TASK, "worker", 1)]["watchdog"] == decided, (sessions, router)
    report = run_dir / "report.html"
    assert report.read_text().count('data-field="turns"') == 2


def test_a_sudo_that_asks_for_a_password_is_refused_at_once_with_what_is_missing(docker_engine: None):
    """A real sudo that wants a password (the user may run anything, with their password): the steps' helper and the
    host units' wrapper fail at once, saying what needs root and how to give it; nothing waits for a prompt."""
    name = f"agensh-test-user-{uuid.uuid4().hex[:8]}"
    mounts = [arg for part in ("model", "scripts") for arg in ("-v", f"{ROOT / part}:/opt/agensh/{part}:ro")]
    made = f"chmod 755 /root && useradd -m {USER} && echo '{USER} ALL=(ALL) ALL' > /etc/sudoers.d/{USER}"
    helper = "from scripts.lib import privilege; privilege.run(['true'], 'deleting a test folder')"
    wrapped = as_root("sh -s install", "installing the host units")
    try:
        docker("run", "-d", "--name", name, "--label", f"agensh.test={name}", "--network", "none", *mounts,
               *venv_mounts(), user_image(), "sleep", "infinity")  # fmt: skip
        docker("exec", name, "sh", "-c", made)
        said = {}
        for what, argv in (
            ("helper", [str(ROOT / ".venv" / "bin" / "python"), "-c", helper]),
            ("units", ["sh", "-c", wrapped]),
        ):
            out = subprocess.run(
                ["docker", "exec", "-i", "-u", USER, "-w", "/opt/agensh", name, *argv],
                input="echo installed\n",
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 1 and "installed" not in out.stdout, out.stdout + out.stderr
            said[what] = out.stderr
    finally:
        docker("rm", "-f", name, check=False)
    for what in ("deleting a test folder", "installing the host units"):
        text = said["helper" if what.startswith("deleting") else "units"]
        assert f"{what} needs root; {USER} is not root and `sudo -n` cannot run" in text, text
        assert "give this user passwordless sudo" in text
    assert "sudo: a password is required" in said["helper"]  # sudo's own word, passed on
