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

from model.project import ROOT
from model.root_powers import as_root
from scripts.setup import demo_images
from tests.integration.conftest import docker, venv_mounts
from tests.integration.test_demo import TASK, demo_sandbox, labelled

USER, UID = "researcher", 4242  # not root, not the workers' uid
IMAGE = "agensh-systemd-host:bookworm"  # the test host's image, here without its init


def user_image() -> str:
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup" / "base_image.sh"), "systemd"], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return IMAGE


@pytest.fixture
def user_host(tmp_path: Path, pulumi_engine: str, base_image: str) -> Iterator[tuple[str, Path, str]]:
    """The user's host: a container with USER (passwordless sudo, in the group of this host's Docker socket) whose
    home is in the sandbox. Yields the container, the project copy and the profile; all is removed after."""
    image = user_image()
    blobs = str(demo_images.BLOBS)  # made by the sandbox (demo_images), read by the evaluation at this path
    with demo_sandbox(tmp_path, "notroot", eval_blob_dir=blobs) as (proj, profile, *_):
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
            yield name, proj, profile
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


def test_the_demo_runs_and_is_destroyed_by_a_user_with_passwordless_sudo(user_host, tmp_path):
    host, proj, profile = user_host
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
    up = as_user(host, proj, env, f"bash scripts/host/launch.sh up {profile} --yes --foreground")
    took_up = time.monotonic() - t0
    run_dir = tmp_path / "data" / profile / "20261129t000000z"
    assert up.returncode == 0, failed(up, run_dir)
    assert json.loads((run_dir / TASK / "score.json").read_text())["score"] == 1.0
    archives = list((tmp_path / "data" / profile / "data" / "agents").rglob("state.tar.gz"))
    assert archives and all(a.stat().st_uid != UID for a in archives)  # the containers' own files, to be deleted
    assert all((a.parent / "activity.jsonl").stat().st_uid != UID for a in archives)  # kept in the workers' folders

    t1 = time.monotonic()
    down = as_user(host, proj, env, f".venv/bin/python -m scripts.cli destroy {profile} --yes")
    took_destroy = time.monotonic() - t1
    assert down.returncode == 0, failed(down, run_dir)
    assert not (tmp_path / "data" / profile).exists()
    assert labelled(profile) == {"containers": [], "networks": [], "volumes": [], "images": []}
    assert json.loads((tmp_path / "traj" / f"{profile}.20261129t000000z" / TASK / "score.json").read_text())["score"]
    print(f"as {USER}: launch to 1.0 in {took_up:.0f} s, destroy in {took_destroy:.0f} s")


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
