"""The real Pulumi engine against the real Docker engine: preview, up, a second up, destroy, and a policy refusal."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from model.project import ROOT


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True).stdout.strip()


def labelled(run: str) -> dict[str, str]:
    f = f"label=agensh.test={run}"
    return {
        "containers": docker("ps", "-aq", "--filter", f),
        "networks": docker("network", "ls", "-q", "--filter", f),
        "images": docker("images", "-q", "--filter", f),
    }


def purge(run: str) -> None:
    left = labelled(run)
    for kind, cmd in (("containers", ["rm", "-f"]), ("networks", ["network", "rm"]), ("images", ["rmi", "-f"])):
        if left[kind]:
            docker(*cmd, *left[kind].split())


@pytest.fixture
def project(tmp_path: Path, pulumi_engine: str):
    """A copy of engine_project with its own backend, passphrase and build context; cleaned up even on failure."""
    run = uuid.uuid4().hex[:8]
    proj = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "engine_project", proj)
    yaml_path = proj / "Pulumi.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("VIRTUALENV", str(ROOT / ".venv")))
    context = tmp_path / "context"
    context.mkdir()
    busybox = shutil.which("busybox") or "/bin/busybox"
    shutil.copy(busybox, context / "busybox")
    (context / "Dockerfile").write_text(
        'FROM scratch\nCOPY busybox /bin/busybox\nCMD ["/bin/busybox", "sleep", "3600"]\n'
    )
    (tmp_path / "state").mkdir()
    env = dict(os.environ, PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}", PULUMI_CONFIG_PASSPHRASE="engine-test")
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)

    def pulumi(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(["pulumi", *args, "--non-interactive"], cwd=proj, env=env, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
        return out

    def configure(stack: str, **extra: str) -> None:
        pulumi("stack", "init", stack)
        subnet = f"10.254.{random.randint(1, 250)}.0/28"
        for key, value in {"run": run, "subnet": subnet, "context": str(context), **extra}.items():
            pulumi("config", "set", "-s", stack, key, value)

    yield pulumi, configure, run
    for stack in ("engine", "broken"):
        pulumi("destroy", "--yes", "-s", stack, check=False)
        pulumi("stack", "rm", "--yes", "--force", "-s", stack, check=False)
    purge(run)


def test_preview_up_again_destroy(project):
    pulumi, configure, run = project
    configure("engine")
    preview = pulumi("preview", "-s", "engine")
    assert "+ 5 to create" in preview.stdout or "5 to create" in preview.stdout
    assert labelled(run) == {"containers": "", "networks": "", "images": ""}  # preview changes nothing

    pulumi("up", "--yes", "--skip-preview", "-s", "engine")
    outputs = json.loads(pulumi("stack", "output", "--json", "-s", "engine").stdout)
    net = json.loads(docker("network", "inspect", outputs["network"]))[0]
    assert net["Internal"] is True
    subnet = net["IPAM"]["Config"][0]["Subnet"]
    assert outputs["ip"] == subnet.rsplit(".", 1)[0] + "." + str(int(subnet.split(".")[3].split("/")[0]) + 5)
    state = docker("inspect", "-f", "{{.State.Running}}", f"agensh-enginetest-{run}")
    assert state == "true"
    assert docker("images", "-q", f"agensh-enginetest:{run}")

    again = pulumi("up", "--yes", "--expect-no-changes", "-s", "engine")
    assert "5 unchanged" in again.stdout

    pulumi("destroy", "--yes", "--skip-preview", "-s", "engine")
    assert labelled(run) == {"containers": "", "networks": "", "images": ""}


def test_policy_pack_refuses_a_broken_stack(project):
    pulumi, configure, run = project
    configure("broken", breakPolicy="true", port=str(random.randint(30000, 39000)))
    out = pulumi("preview", "-s", "broken", "--policy-pack", str(ROOT / "policies"), check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "loopback-ports-only" in text and "on 0.0.0.0" in text
    assert labelled(run) == {"containers": "", "networks": "", "images": ""}
