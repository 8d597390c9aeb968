"""`scripts.cli check`, the live preflight alone, on the demo profile in a copy of the project with its own backend: it
passes and leaves nothing behind (no container, network or volume, the same stacks and state files); a checkout
missing a Dockerfile, a subnet another Docker network holds and a missing test blob each fail with their message, and
still nothing is left; a check terminated mid-way removes what it made; the host units' status mode reads a systemd
host without changing it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from model import contract
from model.profile import parse_profile
from model.project import DEMO_CHECKOUT, ROOT
from scripts.cli import check as check_command
from scripts.lib import checks
from tests.integration.test_demo import demo_sandbox

BOARD_DOCKERFILE = "board-service/Dockerfile"


def docker_objects(profile: str) -> dict[str, set[str]]:
    """The containers, networks and volumes labelled with the profile or named after it (the check names and labels
    all it makes so; other tests run beside this one, so the engine's other objects may come and go)."""
    kinds = {
        "containers": ["ps", "-aq", "--no-trunc"],
        "networks": ["network", "ls", "-q"],
        "volumes": ["volume", "ls", "-q"],
    }
    return {
        kind: {
            oid
            for f in (f"label={contract.PROFILE_LABEL}={profile}", f"name={profile}")
            for oid in subprocess.run(["docker", *cmd, "--filter", f], capture_output=True, text=True).stdout.split()
        }
        for kind, cmd in kinds.items()
    }


def state_digest(state: Path) -> dict[str, str]:
    """Each file of the state backend, by its content's digest (locks and history included)."""
    return {
        str(f.relative_to(state)): hashlib.sha256(f.read_bytes()).hexdigest() for f in state.rglob("*") if f.is_file()
    }


class Sandbox:
    def __init__(self, proj: Path, profile: str, env: dict[str, str], state: Path, tmp: Path):
        self.proj, self.profile, self.env, self.state, self.tmp = proj, profile, env, state, tmp

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=self.proj, env=self.env, capture_output=True, text=True)

    def stacks(self) -> list[dict]:
        out = self.run("pulumi", "stack", "ls", "--json", "--non-interactive")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def check(self) -> tuple[subprocess.CompletedProcess[str], float]:
        """The command as a user runs it, with what it left behind compared: nothing."""
        before, stacks, state = docker_objects(self.profile), self.stacks(), state_digest(self.state)
        t0 = time.monotonic()
        out = self.run(sys.executable, "-m", "scripts.cli", "check", self.profile)
        took = time.monotonic() - t0
        after = docker_objects(self.profile)
        assert after == before == {k: set() for k in after}, out.stderr[-2000:]
        assert self.stacks() == stacks and state_digest(self.state) == state
        return out, took


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, pulumi_cli: str, base_image: str) -> Iterator[Sandbox]:
    """The demo profile in a sandbox of its own, its stack made by new-stack as `make demo` makes it
    (tests/integration/test_demo.py's demo_sandbox: everything labelled with the profile removed at the end)."""
    tmp = tmp_path_factory.mktemp("check")
    with demo_sandbox(tmp, "checkit") as (proj, profile, env, *_, state):
        yield Sandbox(proj, profile, env, state, tmp)


@pytest.mark.slow(80)
def test_the_demo_passes_and_leaves_nothing(sandbox: Sandbox):
    out, took = sandbox.check()
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    for check in (
        "docker",
        "checkout",
        "limits",
        "state",
        "subnets",
        "ports",
        "host-units",
        "images",
        "workers",
        "fresh-images",
        "blobs",
        "model-list",
        "model",
    ):
        assert f"check: {check} ok: " in out.stderr, check
    assert f"1 worker images: board=True copilot=yes, Copilot CLI {contract.OFFLINE_ACP_COPILOT_VERSION}" in out.stderr
    assert f"{contract.PINNED_MODEL} is one of the" in out.stderr and "answered through the egress proxy" in out.stderr
    assert "every live check passed" in out.stdout
    # what the uncached profile built under its run's private tag is gone with the rest
    private = subprocess.run(
        ["docker", "images", "-q", "--filter", f"label={contract.PROFILE_LABEL}={sandbox.profile}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert private == []
    print(f"check on the demo: {took:.1f} s")


@pytest.mark.slow(55)
def test_broken_inputs_fail_with_their_messages_and_leave_nothing(sandbox: Sandbox):
    """A Dockerfile missing from the checkout, the profile's internal subnet held by another Docker network, and the
    task's test blobs missing: each named with what to do, in one run; the rest still checked."""
    dockerfile = sandbox.proj / DEMO_CHECKOUT / BOARD_DOCKERFILE
    kept = dockerfile.read_bytes()
    stack_file = sandbox.proj / "stacks" / f"Pulumi.{sandbox.profile}.yaml"
    settings = stack_file.read_text()
    octet = yaml.safe_load(settings)["config"]["agensh:subnet_octet"]
    squatter = f"agensh-test-squatter-{uuid.uuid4().hex[:6]}"
    empty_blobs = sandbox.tmp / "no-blobs"
    empty_blobs.mkdir(exist_ok=True)
    try:
        dockerfile.unlink()
        net = subprocess.run(
            ["docker", "network", "create", "--internal", "--subnet", f"10.{octet}.0.0/24", squatter],
            capture_output=True,
            text=True,
        )
        assert net.returncode == 0, net.stderr
        stack_file.write_text(
            settings.replace("agensh:eval_blob_dir: ~/.cache/agensh/demo/blobs", f"agensh:eval_blob_dir: {empty_blobs}")
        )
        assert str(empty_blobs) in stack_file.read_text()
        out, _ = sandbox.check()
    finally:
        dockerfile.write_bytes(kept)
        stack_file.write_text(settings)
        subprocess.run(["docker", "network", "rm", squatter], capture_output=True)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-4000:]
    failures = out.stderr.split("check check(s) failed:", 1)[1]
    assert "checkout: " in failures and f"{BOARD_DOCKERFILE}: missing: the Dockerfile of the board image" in failures
    assert f"subnets: subnet 10.{octet}.0.0/" in failures and f"collides with Docker network {squatter}" in failures
    assert "blobs: testorg__calculator.abc1234: " in failures and f"test blobs missing in {empty_blobs}" in failures
    assert "images: " in failures and BOARD_DOCKERFILE in failures.split("images: ", 1)[1]
    assert "nothing was started; fix the above" in out.stderr
    assert "model-list: the temporary egress proxy did not start" in failures and "see the subnets check" in failures
    for passed in ("docker", "limits", "ports", "state", "host-units"):
        assert f"check: {passed} ok: " in out.stderr, passed


@pytest.mark.slow(70)
def test_a_terminated_check_removes_what_it_made(sandbox: Sandbox):
    """SIGTERM while its temporary egress proxy runs: the command ends (130) and its networks and containers go."""
    before, state = docker_objects(sandbox.profile), state_digest(sandbox.state)
    proc = subprocess.Popen(
        [sys.executable, "-m", "scripts.cli", "check", sandbox.profile],
        cwd=sandbox.proj,
        env=sandbox.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    made = f"{contract.PREFIX}-{sandbox.profile}-check-"
    try:
        seen: list[str] = []
        while proc.poll() is None and not seen:
            names = ["docker", "ps", "-a", "--format", "{{.Names}}", "--filter", f"name={made}"]
            seen = subprocess.run(names, capture_output=True, text=True).stdout.split()
            time.sleep(0.1)
        assert seen, "the check ended before its temporary containers were seen"
        proc.terminate()
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and "check: interrupted" in err, err[-2000:]
    assert docker_objects(sandbox.profile) == before == {k: set() for k in before}
    assert state_digest(sandbox.state) == state


def test_host_units_status_reads_without_changing_anything(systemd_host):
    """`host_units.sh status` on a systemd host: absent before an install and nothing written (no state directory);
    after it, the slice present with its memory limit and the guard reused, which the preflight's rule accepts; a slice
    without a limit it refuses."""
    name = systemd_host["name"]
    script = (ROOT / "scripts" / "host" / "host_units.sh").read_text()

    def sh(mode: str, settings: str) -> dict:
        out = subprocess.run(
            ["docker", "exec", "-i", name, "sh", "-s", mode], input=settings + script, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert sh("status", "OWNER=checkit\n") == {
        "slice": "absent",
        "guard": "absent",
        "guard_exec": "",
        "slice_memory_max": "infinity",
    }
    absent = subprocess.run(["docker", "exec", name, "test", "-e", "/var/lib/agensh"], capture_output=True)
    assert absent.returncode == 1  # status made no state directory and took no lock
    guard = "/usr/local/bin/pbench-guard-test"
    subprocess.run(["docker", "exec", name, "sh", "-c", f"printf '#!/bin/sh\\n' > {guard} && chmod 755 {guard}"])
    sh("install", f"SLICE_MEMORY_PERCENT=50\nOWNER=checkit\nGUARD_EXEC={guard}\n")
    found = sh("status", "OWNER=checkit\n")
    assert (found["slice"], found["guard"], found["guard_exec"]) == ("present", "reused", guard)
    assert checks.check_units_receipt(found).startswith(f"slice MemoryMax={found['slice_memory_max']}, guard reused")
    with pytest.raises(AssertionError, match="pbench.slice has no memory limit"):
        checks.check_units_receipt({**found, "slice_memory_max": "infinity"})


def test_remote_host_units_are_read_over_ssh(systemd_host, tmp_path: Path):
    """host_units=remote: the status is read on the profile's host over SSH with its key and pinned host key; units
    absent there pass (root installs them at `up`); another host key is refused before anything runs there."""
    settings = {
        "profile": "checkit-remote",
        "run_id": "20261129t000000z",
        "tasks": ["testorg__calculator.abc1234"],
        "llm_upstream": "http://m.example",
        "agensh_checkout": "/x",
        "host_units": "remote",
        "ssh_host": systemd_host["ip"],
        "ssh_host_key": systemd_host["host_key"],
        "ssh_key_path": systemd_host["key_path"],
    }
    p = parse_profile(settings)
    found = check_command.check_units(p)
    assert found.startswith("slice MemoryMax=")
    assert found.endswith("(up installs pbench.slice and pbench-reboot-guard.service)")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().rsplit(" ", 1)[0]  # a key the host does not have
    wrong = parse_profile({**settings, "ssh_host_key": other})
    with pytest.raises(
        AssertionError,
        match=r"cannot reach root@\S+ over SSH \(Host key verification failed.\): check ssh_host, ssh_port",
    ):
        check_command.check_units(wrong)
