"""The model-id check through the real engine: a copy of the demo profile whose model id the stand-in gateway does not
list (the policy pack is told to allow it, so only the gateway can tell) is refused by the model preflight, naming the
ids on offer and the fix, and no MySQL, Gitea, Mattermost, board, token service, bootstrap, router or worker
container is ever created: only the egress proxy and the stand-in model ran. Applying the fix (set agensh:model, run
`pulumi up` again) passes the check, and the rest of the platform follows.

Everything the stack uses is private to the test: the stand-in services image under a private tag (the copy's stand-in
Dockerfiles are pointed at it), the shared images under the profile's private tags (`uncached`), and a cleanroom
image of the calculator task under a private org; all are removed at the end."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from model import contract
from model.project import DEMO_CHECKOUT, ROOT
from scripts.lab.sandbox import free_octet, isolated_env, kill_session, profile_config, project_copy
from scripts.setup import calculator
from tests.integration.conftest import docker

WRONG = f"openai/{contract.PINNED_MODEL}"  # a provider/model id where the gateway wants the bare id
NEVER = ("mysql", "gitea", "mattermost", "board", "secret-service", "bootstrap", "router", "worker")


@pytest.fixture
def stack(tmp_path: Path, pulumi_engine: str, base_image: str):
    run = uuid.uuid4().hex[:6]
    profile, octet = f"modelit-{run}", free_octet()
    standin = f"omcgitea-standin:modelit-{run}"
    org = f"agensh-modelit-{run}"
    env = isolated_env(tmp_path, "model-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def run_(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(args, cwd=tmp_path / "project", env=env, capture_output=True, text=True)
        assert not check or out.returncode == 0, f"{args}: {out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return out

    try:
        subprocess.run(
            [
                "docker",
                "build",
                "-q",
                "-t",
                standin,
                "--label",
                f"agensh.test=modelit-{run}",
                str(ROOT / DEMO_CHECKOUT / "standin"),
            ],
            check=True,
            capture_output=True,
            env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"},
        )
        calculator.build_cleanroom(org, {"agensh.test": f"modelit-{run}"})
        proj = project_copy(
            tmp_path,
            profile,
            profile_config(
                "demo.profile.yaml",
                profile=profile,
                subnet_octet=octet,
                llm_upstream=f"http://10.{octet}.255.3:8080",
                data_root=str(tmp_path / "data"),
                eval_blob_dir=str(calculator.blob_dir(tmp_path / "blobs")),  # what the preflight checks first
                model=WRONG,
                uncached=True,
                cleanroom_org=org,
                mysql_image=standin,
                gitea_image=standin,
                mattermost_image=standin,
            ),
        )
        for dockerfile in (proj / DEMO_CHECKOUT).rglob("Dockerfile*"):
            dockerfile.write_text(dockerfile.read_text().replace("omcgitea-standin:demo", standin))
        policy = json.loads((ROOT / "policies" / "demo.json").read_text())
        policy["model-settings"] = {"allowedModels": [contract.PINNED_MODEL, WRONG]}
        (proj / "policy.json").write_text(json.dumps(policy))
        run_(
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
        yield proj, profile, run_, tmp_path / "data" / profile, env
    finally:
        if (tmp_path / "project").exists():
            run_("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile, check=False)
            run_("pulumi", "stack", "rm", "--yes", "--force", "--non-interactive", "-s", profile, check=False)
        for ls, rm in (
            (["ps", "-aq"], ["rm", "-f"]),
            (["network", "ls", "-q"], ["network", "rm"]),
            (["images", "-q"], ["rmi", "-f"]),
        ):
            left = docker(*ls, "--filter", contract.profile_filter(profile)).split()
            if left:
                docker(*rm, *left, check=False)
        docker("rmi", "-f", standin, calculator.cleanroom_image(org), check=False)


@pytest.mark.slow(100)
def test_a_model_the_gateway_does_not_list_stops_the_launch_before_the_platform(stack):
    proj, profile, run, data, env = stack
    since = int(time.time()) - 1
    up = run(
        "pulumi",
        "up",
        "--yes",
        "--skip-preview",
        "--non-interactive",
        "-s",
        profile,
        "--policy-pack",
        "policies",
        "--policy-pack-config",
        "policy.json",
        check=False,
    )
    until = int(time.time()) + 1
    output = up.stdout + up.stderr
    assert up.returncode != 0, output[-3000:]
    fix = f"model {WRONG} is not offered by the gateway, which lists: {contract.PINNED_MODEL}."
    assert fix in output and f"did you mean {contract.PINNED_MODEL}?" in output and "agensh:model" in output

    receipt = json.loads((data / "20261129t000000z" / "receipts" / "preflight-model.json").read_text())
    assert receipt["status"] == "failed"
    assert fix in receipt["details"]["checks"]["model-list"]["detail"]

    events = docker(
        "events",
        "--since",
        str(since),
        "--until",
        str(until),
        "--filter",
        "type=container",
        "--filter",
        "event=create",
        "--filter",
        contract.profile_filter(profile),
        "--format",
        "{{json .Actor}}",
    )
    created = {
        (a["Attributes"].get(contract.ROLE_LABEL), a["Attributes"]["name"])
        for a in map(json.loads, events.splitlines())
    }
    roles = {role for role, _ in created}
    assert {"egress-proxy", "model"} <= roles, created
    assert roles <= {"egress-proxy", "model", "worker-image"}, created  # worker-image: the preflight's image checks
    assert not [name for _, name in created if any(name == contract.resource_name(profile, r) for r in NEVER)]
    existing = docker(
        "ps", "-a", "--filter", contract.profile_filter(profile), "--format", f'{{{{.Label "{contract.ROLE_LABEL}"}}}}'
    ).split()
    assert sorted(existing) == ["egress-proxy", "model"]

    # the fix as the message gives it: the failed check runs again with the new model id, then MySQL and the rest
    run(
        sys.executable,
        "-m",
        "scripts.cli",
        "new-stack",
        profile,
        "--set",
        f"model={contract.PINNED_MODEL}",
        "--env-file",
        "none",
    )
    with open(proj / "up2.log", "w") as log:
        again = subprocess.Popen(
            [
                "pulumi",
                "up",
                "--yes",
                "--skip-preview",
                "--non-interactive",
                "-s",
                profile,
                "--policy-pack",
                "policies",
                "--policy-pack-config",
                "policy.json",
            ],
            cwd=proj,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    mysql = contract.resource_name(profile, "mysql")
    try:
        deadline = time.time() + 300
        while (
            again.poll() is None and time.time() < deadline and not docker("ps", "-aq", "--filter", f"name=^{mysql}$")
        ):
            time.sleep(2)
        receipt = json.loads((data / "20261129t000000z" / "receipts" / "preflight-model.json").read_text())
        assert receipt["status"] == "ok", (proj / "up2.log").read_text()[-3000:]
        assert receipt["result"]["checks"]["model-list"]["detail"].startswith(f"{contract.PINNED_MODEL} is one of")
        assert docker("ps", "-aq", "--filter", f"name=^{mysql}$"), (proj / "up2.log").read_text()[-3000:]
    finally:
        kill_session(again)  # the `up` if still running, and its plugins either way
        run("pulumi", "cancel", "--yes", "--non-interactive", "-s", profile, check=False)
