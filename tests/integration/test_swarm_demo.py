"""The demo team on a two-node swarm (scripts/swarm_lab.py), through the real engine: its workers split across the
nodes, score 1.0 from the real evaluator; a worker on node B reaches the proxy and the services on node A and nothing
else, and the model token is only in the proxy's swarm secret; destroy leaves nothing of the profile on any node."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from scripts import swarm_lab
from scripts.demo_images import STANDIN, THIRD_PARTY
from scripts.sandbox import free_octet, isolated_env, profile_config, project_copy

ROOT = Path(__file__).resolve().parents[2]
TASK = "testorg__calculator.abc1234"
CLEANROOM = "agensh-demo/testorg_1776_calculator.abc1234:task_cleanroom_v6"
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
        for kind, cmd in (("containers", ["ps", "-aq"]), ("networks", ["network", "ls", "-q"]),
                          ("volumes", ["volume", "ls", "-q"]), ("images", ["images", "-q"])):
            out[f"{node.name} {kind}"] = lab.docker(node, *cmd, "--filter", f, check=False).stdout.split()
    for kind in ("service", "secret", "config"):
        out[f"manager {kind}s"] = lab.docker(lab.manager, kind, "ls", "-q", "--filter", f, check=False).stdout.split()
    tags = json.loads(subprocess.run(["curl", "-fsS", f"http://{lab.registry}/v2/_catalog"], capture_output=True,
                                     text=True).stdout or "{}").get("repositories") or []
    out["registry tags"] = [f"{r}:{t}" for r in tags for t in json.loads(subprocess.run(
        ["curl", "-fsS", f"http://{lab.registry}/v2/{r}/tags/list"], capture_output=True, text=True).stdout or "{}"
    ).get("tags") or []]
    return out


@pytest.fixture
def swarm_demo(tmp_path: Path, pulumi_engine: str, swarm: swarm_lab.Lab):
    lab = swarm
    profile, octet = f"swarmit-{uuid.uuid4().hex[:4]}", free_octet()
    settings = lab.swarm_settings(**NODE) | SIZES
    settings["nodes"][1]["data_root"] = str(tmp_path / "data-n2")
    proj = project_copy(tmp_path, profile, profile_config(
        "demo.profile.yaml", profile=profile, subnet_octet=octet, data_root=str(tmp_path / "data"),
        llm_upstream=f"http://omcgitea-{profile}-model:8080", keep_pulled_images=True, engine="swarm", swarm=settings))
    env = isolated_env(tmp_path, "swarm-it", LLM_UPSTREAM_TOKEN="standin-" + uuid.uuid4().hex)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(args, cwd=proj, env=env, capture_output=True, text=True)
        assert not check or out.returncode == 0, f"{args}: {out.stdout[-4000:]}\n{out.stderr[-3000:]}"
        return out

    assert subprocess.run(["bash", str(ROOT / "scripts" / "base_image.sh")], capture_output=True).returncode == 0
    run(sys.executable, "-m", "scripts.demo_images")
    swarm_lab.load(lab, [STANDIN, *THIRD_PARTY.values(), CLEANROOM])  # what the manager would pull
    run(sys.executable, "scripts/new_stack.py", profile, "--from", f"stacks/{profile}.profile.yaml", "--env-file", "none",
        "--set", "host_units=off")
    yield proj, profile, env, run, tmp_path / "data" / profile
    run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile, check=False)
    run("pulumi", "stack", "rm", "--yes", "--force", "--non-interactive", "-s", profile, check=False)


def test_demo_on_two_nodes_scores_and_leaves_nothing(swarm_demo, swarm: swarm_lab.Lab):
    proj, profile, env, run, data = swarm_demo
    lab = swarm
    policy = ["--policy-pack", "policies", "--policy-pack-config", f"stacks/{profile}.policy.json"]
    plan = run(sys.executable, "-m", "scripts.plan", profile).stdout
    assert "hosts needed: 2" in plan

    up = run("pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "-s", profile, *policy)
    run_dir = data / "20261129t000000z"
    score = json.loads((run_dir / TASK / "score.json").read_text())
    assert score["score"] == 1.0 and score["complete"], (score, up.stdout[-3000:])

    # the workers ran one on each node, each beside its router
    services = json.loads(lab.docker(lab.manager, "service", "inspect", *lab.docker(
        lab.manager, "service", "ls", "-q", "--filter", f"label=agensh.profile={profile}").stdout.split()).stdout)
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

    again = run("pulumi", "up", "--yes", "--expect-no-changes", "--non-interactive", "-s", profile, *policy)
    assert "unchanged" in again.stdout

    run("pulumi", "destroy", "--yes", "--skip-preview", "--non-interactive", "-s", profile)
    left = profile_objects(lab, profile)
    assert all(v == [] for v in left.values()), left
    assert not data.exists()
