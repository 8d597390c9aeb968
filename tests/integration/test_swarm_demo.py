"""The demo team on a two-node swarm (scripts/lab/swarm_lab.py), through the real engine: its workers split across the
nodes, score 1.0 from the real evaluator; a worker on node B reaches the proxy and the services on node A and nothing
else, and the model token is only in the proxy's swarm secret; destroy leaves nothing of the profile on any node."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from model.project import ROOT
from scripts.lab import swarm_lab
from scripts.lab.sandbox import free_octet, isolated_env, profile_config, project_copy
from scripts.setup import demo_images
from tests.integration.test_demo import BUDGET_HOURS

TASK = "testorg__calculator.abc1234"
# The lab's nodes as the profile declares them: 4 GiB and 2 CPUs each; a pair (1 GiB worker + 1 GiB router) counts
# 2 GiB and 0.75 CPUs, the platform 1 GiB and 0.5 CPUs: one pair beside the platform on n1, one pair on n2.
NODE = {"memory_gib": 4, "cpus": 2}
SIZES = {"platform_memory_gib": 1, "platform_cpus": 0.5, "worker_cpus": 0.5, "router_cpus": 0.25}

REACH = """
import json, socket, sys, urllib.request
out = {}
for name, url in json.loads(sys.argv[1]).items():
    try:
        out[name] = urllib.request.urlopen(url, timeout=4).status
    except urllib.error.HTTPError as err:
        out[name] = err.code
    except OSError as err:
        out[name] = type(err).__name__
print(json.dumps(out))
"""


def profile_objects(lab: swarm_lab.Lab, profile: str) -> dict[str, list[str]]:
    """Every object labelled with the profile, on every node (services, secrets and configs live on the manager)."""
    f = f"label=agensh.profile={profile}"
    out: dict[str, list[str]] = {}
    for node in lab.nodes:
        for kind, cmd in (
            ("containers", ["ps", "-aq"]),
            ("networks", ["network", "ls", "-q"]),
            ("volumes", ["volume", "ls", "-q"]),
            ("images", ["images", "-q"]),
        ):
            out[f"{node.name} {kind}"] = lab.docker(node, *cmd, "--filter", f, check=False).stdout.split()
    for kind in ("service", "secret", "config"):
        out[f"manager {kind}s"] = lab.docker(lab.manager, kind, "ls", "-q", "--filter", f, check=False).stdout.split()
    tags = (
        json.loads(
            subprocess.run(
                ["curl", "-fsS", f"http://{lab.registry}/v2/_catalog"], capture_output=True, text=True
            ).stdout
            or "{}"
        ).get("repositories")
        or []
    )
    out["registry tags"] = [
        f"{r}:{t}"
        for r in tags
        for t in json.loads(
            subprocess.run(
                ["curl", "-fsS", f"http://{lab.registry}/v2/{r}/tags/list"], capture_output=True, text=True
            ).stdout
            or "{}"
        ).get("tags")
        or []
    ]
    return out


@pytest.fixture(scope="module")
def lab_images(swarm: swarm_lab.Lab, base_image: str) -> Iterator[str]:
    """The demo's images, the stand-ins under a private tag (so no other run's images are rebuilt), made once and
    loaded into the lab's manager and registry for the module's stacks; the tag."""
    tag = f"swarmit-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(
        [sys.executable, "-m", "scripts.setup.demo_images", "--standin-tag", tag],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    try:
        assert made.returncode == 0, made.stdout + made.stderr
        swarm_lab.load(swarm, swarm_lab.demo_images(tag))  # what the manager would pull
        yield tag
    finally:
        subprocess.run(["docker", "rmi", *demo_images.standin_images(tag)], capture_output=True)


@pytest.fixture
def stack(tmp_path: Path, pulumi_engine: str, swarm: swarm_lab.Lab, lab_images: str):
    """`make(**settings)`: a copy of the project whose stack is the demo profile with engine: swarm on the lab (its
    own name, octet and data roots; n2 keeps its data apart; the lab's images), destroyed after the test."""
    made = []
    standin, mattermost = demo_images.standin_images(lab_images)

    def make(**settings):
        lab = swarm
        profile, octet = f"swarmit-{uuid.uuid4().hex[:4]}", free_octet()
        root = tmp_path / profile
        root.mkdir()
        swarm_settings = lab.swarm_settings(**NODE) | SIZES
        swarm_settings["nodes"][1]["data_root"] = str(root / "data-n2")
        proj = project_copy(
            root,
            profile,
            profile_config(
                "demo.profile.yaml",
                profile=profile,
                subnet_octet=octet,
                data_root=str(root / "data"),
                traj_root=str(root / "traj"),
                llm_upstream=f"http://omcgitea-{profile}-model:8080",
                engine="swarm",
                swarm=swarm_settings,
                mattermost_image=mattermost,
                **settings,
            ),
            standin_image=standin,
        )
        env = isolated_env(root, "swarm-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

        def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            out = subprocess.run(args, cwd=proj, env=env, capture_output=True, text=True)
            # pulumi's diagnostics stand before its outputs, which alone fill the tail
            said = out.stdout[out.stdout.find("Diagnostics:") :][:6000] if "Diagnostics:" in out.stdout else ""
            assert not check or out.returncode == 0, f"{args}: {said}\n{out.stdout[-4000:]}\n{out.stderr[-3000:]}"
            return out

        # the demo's relaxation (its cleanroom is built here, not pinned), which new_stack adds the profile's numbers to
        (proj / "stacks" / f"{profile}.policy.json").write_text((proj / "policies" / "demo.json").read_text())
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
        made.append((profile, run))
        return proj, profile, env, run, root / "data" / profile

    yield make
    for profile, run in made:
        run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile, check=False)
        run("pulumi", "stack", "rm", "--yes", "--force", "--non-interactive", "-s", profile, check=False)


@pytest.mark.slow(600)
def test_demo_on_two_nodes_scores_and_leaves_nothing(stack, swarm: swarm_lab.Lab):
    proj, profile, env, run, data = stack(hours=BUDGET_HOURS)  # the tests' budget: the same run, 36 s less waiting
    lab = swarm
    policy = ["--policy-pack", "policies", "--policy-pack-config", f"stacks/{profile}.policy.json"]
    plan = run(sys.executable, "-m", "scripts.cli", "plan", profile).stdout
    assert "hosts needed: 2" in plan

    up = run("pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "-s", profile, *policy)
    run_dir = data / "20261129t000000z"
    score = json.loads((run_dir / TASK / "score.json").read_text())
    assert score["score"] == 1.0 and score["complete"], (score, up.stdout[-3000:])

    # the workers ran one on each node, each beside its router
    services = json.loads(
        lab.docker(
            lab.manager,
            "service",
            "inspect",
            *lab.docker(
                lab.manager, "service", "ls", "-q", "--filter", f"label=agensh.profile={profile}"
            ).stdout.split(),
        ).stdout
    )
    where = {s["Spec"]["Name"]: s["Spec"]["Labels"]["agensh.node"] for s in services}
    workers = {n: node for n, node in where.items() if "-worker-" in n}
    assert sorted(workers.values()) == ["n1", "n2"], where
    for name, node in workers.items():
        assert where[name.replace("-worker-", "-router-")] == node
    assert {node for n, node in where.items() if "-worker-" not in n and "-router-" not in n} == {"n1"}

    # the images came from the manager's registry, by digest, and the manifest records the digests
    outputs = json.loads(run("pulumi", "stack", "output", "--json", "--non-interactive", "-s", profile).stdout)
    digests = outputs["registry_digests"]
    assert all(ref.startswith(f"{lab.registry}/") and "@sha256:" in ref for ref in digests.values()), digests
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert set(digests.values()) <= set(json.dumps(manifest).split('"')), "digests missing from the manifest"
    assert env["LLM_UPSTREAM_TOKEN"] not in json.dumps(outputs)

    # the archive of the worker on n2 was collected to the manager
    shutdown = json.loads((run_dir / TASK / "receipts" / "shutdown.json").read_text())["result"]
    assert shutdown["archives_complete"] and set(shutdown["archives"].values()) == {"ok"}

    # the wake step scaled each worker to its task at its ramp offset (none ran before), the nudges watched the
    # services' logs until the deadline, the run was copied and verified and its report written
    wake = json.loads((run_dir / TASK / "receipts" / "wake.json").read_text())["result"]
    assert [w["already_awake"] for w in wake["wakes"]] == [False, False], wake
    assert all(w["at_epoch"] >= w["due_epoch"] for w in wake["wakes"]), wake
    assert json.loads((run_dir / TASK / "receipts" / "nudges.json").read_text())["status"] == "ok"
    copy = data.parent.parent / "traj" / f"{profile}.20261129t000000z"
    assert (copy / TASK / "submission.tar.gz").read_bytes() == (run_dir / TASK / "submission.tar.gz").read_bytes()
    assert json.loads((run_dir / "run_manifest.json").read_text())["preserved"] == {TASK: True}
    assert Path(outputs["report"]).is_file()
    # status asks the manager: the task is scored and its workers' services were scaled to 0 by the shutdown
    view = json.loads(run(sys.executable, "-m", "scripts.cli", "status", profile, "--json").stdout)
    assert view["tasks"][0]["phase"] == "scored", view
    assert [w["state"] for w in view["tasks"][0]["workers"]] == ["stopped", "stopped"], view

    again = run("pulumi", "up", "--yes", "--expect-no-changes", "--non-interactive", "-s", profile, *policy)
    assert "unchanged" in again.stdout

    run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile)
    left = profile_objects(lab, profile)
    assert all(v == [] for v in left.values()), left
    assert not data.exists()


@pytest.mark.slow(300)
def test_a_worker_on_node_b_reaches_only_the_proxy_and_the_services(stack, swarm: swarm_lab.Lab):
    """The bare topology (no steps): worker 2 runs on n2. From inside it the proxy and the platform services on n1
    answer; the stand-in model (egress network), the manager's published ports, the registry and the host do not.
    The model token is in no container's or service's configuration on any node and not in the worker's
    environment; only the proxy's task holds it, as its swarm secret file."""
    lab = swarm
    proj, profile, env, run, data = stack(run_steps=False)
    run(
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
        f"stacks/{profile}.policy.json",
    )
    prefix = f"omcgitea-{profile}"
    service = f"{prefix}-testorg-calculator-abc1234-worker-2"
    other = service.replace("-worker-2", "-worker-1")
    # a worker has no task before its wake; both woken here by hand as the wake step does (the bare topology has none)
    assert lab.docker(lab.manager, "service", "ps", "-q", service, other).stdout.split() == []
    lab.docker(lab.manager, "service", "scale", "--detach=false", f"{service}=1", f"{other}=1")
    worker = lab.docker(
        lab.nodes[1], "ps", "-q", "--filter", f"label=com.docker.swarm.service.name={service}"
    ).stdout.split()
    assert len(worker) == 1, "worker 2 runs on n2"
    caps = lab.docker(lab.nodes[1], "inspect", "-f", "{{.HostConfig.CapDrop}} {{.Config.User}}", worker[0]).stdout
    assert "ALL" in caps and "10000" in caps, caps
    base = {
        "proxy": f"http://{prefix}-egress-proxy:8080/healthz",
        "gitea": f"http://{prefix}-gitea:3000/api/healthz",
        "mattermost": f"http://{prefix}-mattermost:8065/api/v4/system/ping",
        "board": f"http://{prefix}-board:8080/healthz",
        "tokens": f"http://{prefix}-secret-service:8080/healthz",
        "router": f"http://{prefix}-testorg-calculator-abc1234-router-2:8080/healthz",
        "own token": f"http://{prefix}-secret-service:8080/token/{TASK}-2",
    }
    denied = {
        "model": f"http://{prefix}-model:8080/healthz",
        "manager-ports": f"http://{lab.manager.address}:25400/",
        "registry": f"http://{lab.registry}/v2/",
        "host": f"http://{lab.host_address}:22/",
        "database": f"http://{prefix}-mysql:3306/",
    }  # on the data network only: no name, no route
    refused = {"worker 1's token": f"http://{prefix}-secret-service:8080/token/{TASK}-1"}
    got = json.loads(
        lab.docker(lab.nodes[1], "exec", worker[0], "python3", "-c", REACH, json.dumps(base | denied | refused)).stdout
    )
    assert {k: got[k] for k in base} == {k: 200 for k in base}, got
    assert {k: got[k] for k in refused} == {k: 403 for k in refused}, got  # the token service knows worker 2's name
    assert all(not isinstance(got[k], int) for k in denied), got  # no answer at all: no route or no name

    token = env["LLM_UPSTREAM_TOKEN"]
    for node in lab.nodes:
        ids = lab.docker(node, "ps", "-aq").stdout.split()
        assert ids and token not in lab.docker(node, "inspect", *ids).stdout, node.name
    services = lab.docker(
        lab.manager, "service", "ls", "-q", "--filter", f"label=agensh.profile={profile}"
    ).stdout.split()
    specs = json.loads(lab.docker(lab.manager, "service", "inspect", *services).stdout)
    assert token not in json.dumps(specs)
    with_secrets = {
        s["Spec"]["Name"]: [x["SecretName"] for x in s["Spec"]["TaskTemplate"]["ContainerSpec"].get("Secrets") or []]
        for s in specs
    }
    holders = {name: secrets for name, secrets in with_secrets.items() if secrets}
    assert list(holders) == [f"{prefix}-egress-proxy"] and len(holders[f"{prefix}-egress-proxy"]) == 1, holders
    assert token not in lab.docker(lab.nodes[1], "exec", worker[0], "env").stdout
    assert lab.docker(lab.nodes[1], "exec", worker[0], "ls", "/run/secrets", check=False).returncode != 0
    proxy = lab.docker(
        lab.manager, "ps", "-q", "--filter", f"label=com.docker.swarm.service.name={prefix}-egress-proxy"
    ).stdout.split()
    assert lab.docker(lab.manager, "exec", proxy[0], "cat", "/run/secrets/llm_upstream_token").stdout.strip() == token
    assert token not in lab.docker(lab.manager, "exec", proxy[0], "env").stdout
