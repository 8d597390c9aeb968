"""preflight and shutdown against real Docker, with small images and containers the tests make and remove."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from model.checkout import check
from model.project import DEMO_CHECKOUT, ROOT
from scripts import preflight, shutdown
from scripts.lib.checks import check_blobs
from scripts.setup import calculator
from scripts.setup.calculator import BASE_IMAGE
from tests.checkouts import cc_log

PIN = "1.0.78"


def docker(*args: str, check: bool = True, **kw) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, **kw).stdout.strip()


@pytest.fixture(scope="module")
def images(base_image: str):
    run = uuid.uuid4().hex[:6]
    good, bad, stale = (f"agensh-test-worker:{run}-{k}" for k in ("good", "bad", "stale"))
    common = (
        f"FROM {BASE_IMAGE}\nLABEL agensh.test={run}\n"
        "RUN printf '#!/bin/sh\\necho board=True copilot=yes\\n' > /usr/local/bin/pbench-selfcheck && "
        "chmod +x /usr/local/bin/pbench-selfcheck && mkdir -p /opt/pbench && "
        "printf '#!/bin/sh\\n' > /opt/pbench/executable\n"
    )
    # test doubles of the CLI's version line only (the real CLI's is checked in test_team_services)
    says = (
        "RUN printf '#!/bin/sh\\necho GitHub Copilot CLI %s.\\n' > /usr/local/bin/copilot "
        "&& chmod +x /usr/local/bin/copilot\n"
    )
    env = {"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
    docker(
        "build", "-q", "-t", good, "-", input=common + says % PIN + "RUN chmod 0111 /opt/pbench/executable\n", env=env
    )
    docker(
        "build", "-q", "-t", bad, "-", input=common + says % PIN + "RUN chmod 0755 /opt/pbench/executable\n", env=env
    )
    docker(
        "build",
        "-q",
        "-t",
        stale,
        "-",
        input=common + says % "9.9.9" + "RUN chmod 0111 /opt/pbench/executable\n",
        env=env,
    )
    yield run, good, bad, stale
    docker("rmi", "-f", good, bad, stale, check=False)


def inputs(tmp_path: Path, run: str, **over) -> dict:
    a = {
        "run_dir": str(tmp_path / "run"),
        "profile": f"t-{run}",
        "host_units": "off",
        "host_units_receipt": "",
        "images": [BASE_IMAGE],
        "worker_images": [],
        "copilot_version": PIN,
        "revisioned_images": [],
        "checkout": str(ROOT / DEMO_CHECKOUT),
        "baseline": False,
        "checkout_revision": None,
        "subnets": ["10.253.251.0/24"],
        "networks": [],
        "ports": [],
        "limits": {
            "workers": 8,
            "tasks": 1,
            "routers": 8,
            "administrators": 2,
            "mm_max_users": 200,
            "mysql_max_connections": 1000,
            "platform_connections": 100,
        },
        "tasks": [calculator.TASK],
        "blob_dir": str(calculator.blob_dir(tmp_path / "blobs")),
    }
    a.update(over)
    return a


def checks(tmp_path: Path, a: dict) -> tuple[int, dict]:
    rc = preflight.main(["host"], {"AGENSH_INPUT": json.dumps(a)})
    receipt = json.loads((Path(a["run_dir"]) / "receipts" / "preflight-host.json").read_text())
    return rc, {**receipt, **(receipt["result"] or receipt["details"])}


def test_preflight_passes_on_a_clean_host(images, tmp_path: Path):
    run, good, _, _ = images
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "launch.json").write_text("{}")  # what a scheduled launch writes first is no leftover
    rc, receipt = checks(tmp_path, inputs(tmp_path, run, worker_images=[good], images=[good]))
    assert rc == 0, receipt
    assert receipt["checks"]["workers"]["detail"].endswith(f"Copilot CLI {PIN}, reference 0111")


def standin_store(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in of ProgramBench's blob store, laid out as huggingface_hub keeps a dataset on disk and read offline:
    the real `programbench blob sync` answers from it and never leaves the machine. Its snapshot holds the calculator's
    blobs; the operator's shell names another blob directory, which the preflight must not follow."""
    monkeypatch.setenv("PROGRAMBENCH_HF_REPO", "agensh-test/blobs")
    monkeypatch.setenv("PROGRAMBENCH_HF_REVISION", "main")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PROGRAMBENCH_BLOB_DIR", str(cache / "not-here"))
    commit = "5" * 40
    (cache / "datasets--agensh-test--blobs" / "refs").mkdir(parents=True)
    (cache / "datasets--agensh-test--blobs" / "refs" / "main").write_text(commit)
    return calculator.blob_dir(cache / "datasets--agensh-test--blobs" / "snapshots" / commit)


def test_blobs_are_checked_where_the_evaluation_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Each task's test blobs, in the profile's blob directory (the demo's offline one) or ProgramBench's blob store
    after `programbench blob sync`, before any inference: a missing one names the task and the command to run; the
    data root must have room for them."""
    task = calculator.TASK
    sync = f"`.venv/bin/programbench blob sync {task}`"
    a = preflight.PreflightHostInputs.model_validate(inputs(tmp_path, "blobs"))
    assert check_blobs(a).startswith(f"1 task(s): every test blob in {a.blob_dir}")
    (Path(a.blob_dir or "") / task / "tests").rename(tmp_path / "elsewhere")
    with pytest.raises(AssertionError, match=rf"{task}: 1 of 1 test blobs missing in .*; where .* run {sync}"):
        check_blobs(a)
    (tmp_path / "elsewhere").rename(Path(a.blob_dir or "") / task / "tests")
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=0))
    with pytest.raises(AssertionError, match="has 0 MiB free; the tasks' test blobs alone take"):
        check_blobs(a)
    monkeypatch.undo()

    # no blob directory: the real `programbench blob sync`, from the stand-in store
    store = standin_store(tmp_path / "hub", monkeypatch)
    synced = a.model_copy(update={"blob_dir": None})
    assert check_blobs(synced).startswith(f"1 task(s): every test blob in {store} (")
    (blob,) = (store / task / "tests").iterdir()
    blob.unlink()
    with pytest.raises(AssertionError, match=rf"1 of 1 test blobs missing in {store} .*; run {sync} again"):
        check_blobs(synced)
    shutil.rmtree(store / task)
    with pytest.raises(AssertionError, match=rf"{task}: {sync} failed \(.*no blobs for this task.\); fix the access"):
        check_blobs(synced)


def test_preflight_refuses_a_missing_blob_before_anything_starts(base_image: str, tmp_path: Path):
    """The launch's own preflight (host) with a task's blob gone from the blob directory: refused with the task and
    the command to run, and nothing made but its receipt."""
    task = calculator.TASK
    a = inputs(tmp_path, "blob")
    (blob,) = (Path(a["blob_dir"]) / task / "tests").iterdir()
    blob.unlink()
    rc, receipt = checks(tmp_path, a)
    assert rc == 1 and {name for name, c in receipt["checks"].items() if not c["ok"]} == {"blobs"}
    detail = receipt["checks"]["blobs"]["detail"]
    assert detail.startswith(f"{task}: 1 of 1 test blobs missing in {a['blob_dir']} ({blob}); ")
    assert f"run `.venv/bin/programbench blob sync {task}`" in detail
    run = tmp_path / "run"
    assert [p.name for p in run.iterdir()] == ["receipts"]
    assert {p.stem for p in (run / "receipts").iterdir()} == {"preflight-host"}  # its receipt and lock


def test_preflight_reports_every_failure(images, tmp_path: Path):
    run, good, bad, _ = images
    net = f"agensh-test-{run}"
    docker("network", "create", "--internal", "--subnet", "10.253.252.0/24", "--label", f"agensh.test={run}", net)
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    busy = holder.getsockname()[1]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "result_index.jsonl").write_text("{}\n")
    try:
        a = inputs(
            tmp_path,
            run,
            images=[good, "agensh-test-absent:nope"],
            worker_images=[bad],
            subnets=["10.253.252.0/25"],
            ports=[busy],
            host_units="local",
            host_units_receipt=json.dumps({"guard": "installed", "slice_memory_max": "infinity"}),
            limits={
                "workers": 300,
                "tasks": 1,
                "routers": 300,
                "administrators": 2,
                "mm_max_users": 200,
                "mysql_max_connections": 1000,
                "platform_connections": 100,
            },
        )
        rc, receipt = checks(tmp_path, a)
    finally:
        holder.close()
        docker("network", "rm", net, check=False)
    assert rc == 1 and receipt["status"] == "failed"
    failed = {name for name, c in receipt["checks"].items() if not c["ok"]}
    assert failed == {"host-units", "images", "workers", "state", "subnets", "ports", "limits"}
    assert "200 must exceed 1 task(s) x 300 workers" in receipt["checks"]["limits"]["detail"]
    assert "agensh-test-absent:nope" in receipt["checks"]["images"]["detail"]
    assert "mode 0111" in receipt["checks"]["workers"]["detail"]
    assert net in receipt["checks"]["subnets"]["detail"]


def test_preflight_refuses_a_checkout_that_misses_its_contract(base_image: str, tmp_path: Path):
    """The checkout is read against its contract with the misses `check-checkout` names; the other checks go on."""
    broken = Path(shutil.copytree(ROOT / DEMO_CHECKOUT, tmp_path / "checkout"))
    (broken / "prompts" / "kickoff.md").unlink()
    (broken / "mini-router" / "Dockerfile").unlink()
    rc, receipt = checks(tmp_path, inputs(tmp_path, "checkout", checkout=str(broken)))
    assert rc == 1 and {name for name, c in receipt["checks"].items() if not c["ok"]} == {"checkout"}
    misses = check(broken)
    assert [m.file for m in misses] == ["mini-router/Dockerfile", "prompts/kickoff.md"]
    assert receipt["checks"]["checkout"]["detail"] == (
        f"the Agensh checkout {broken} does not meet the checkout contract v1 with the demo convention "
        "(docs/checkout.md): " + "; ".join(map(str, misses))
    )


def test_preflight_reads_the_checkout_and_runs_the_self_check_of_the_profiles_convention(images, tmp_path: Path):
    """A cc-log checkout meets the contract with its convention; a worker image with the demo's self-check only is
    refused, naming the convention's command and answer."""
    run, good, _, _ = images
    cc = str(cc_log(tmp_path / "cc"))
    a = inputs(tmp_path, run, checkout=cc, convention="cc-log", worker_images=[good], images=[good])
    rc, receipt = checks(tmp_path, a)
    assert rc == 1 and {name for name, c in receipt["checks"].items() if not c["ok"]} == {"workers"}
    assert receipt["checks"]["checkout"]["detail"] == f"{cc} meets the checkout contract v1 with the cc-log convention"
    detail = receipt["checks"]["workers"]["detail"]
    assert (
        detail.startswith(f"{good}: entrypoint not baked (agensh-selfcheck said ")
        and "'selfcheck=ok cli=present'" in detail
    )


def test_preflight_refuses_a_worker_image_whose_copilot_is_not_the_pin(images, tmp_path: Path):
    run, _, _, stale = images
    rc, receipt = checks(tmp_path, inputs(tmp_path, run, worker_images=[stale], images=[stale]))
    assert rc == 1 and not receipt["checks"]["workers"]["ok"]
    assert (
        "says 'GitHub Copilot CLI 9.9.9.'; the profile pins copilot_version 1.0.78"
        in receipt["checks"]["workers"]["detail"]
    )


@pytest.mark.slow(50)
def test_shutdown_verifies_archives(images, tmp_path: Path):
    """Worker 1 seals; worker 2 never does (missing); worker 3's first seal is corrupt (as when the data root was full
    while it sealed), so the shutdown starts and stops it again, and its second seal is good."""
    run, good, _, _ = images
    names, dirs = [], {}
    seal = "tar -czf /archive/state.tar.gz -C / etc/hostname"
    scripts = {
        1: f"trap '{seal}; exit 0' TERM; while true; do sleep 1; done",
        2: "sleep 300",
        3: f"trap 'if [ -e /archive/tried ]; then {seal}; else touch /archive/tried; "
        "echo torn > /archive/state.tar.gz; fi; exit 0' TERM; while true; do sleep 1; done",
    }
    try:
        for i, script in scripts.items():
            d = tmp_path / f"archive-{i}"
            d.mkdir()
            name = f"agensh-test-{run}-w{i}"
            docker(
                "run",
                "-d",
                "--name",
                name,
                "--network",
                "none",
                "--label",
                f"agensh.test={run}",
                "-v",
                f"{d}:/archive",
                good,
                "bash",
                "-c",
                script,
            )
            names.append(name)
            dirs[name] = str(d)
        router = f"agensh-test-{run}-r1"
        docker(
            "run", "-d", "--name", router, "--network", "none", "--label", f"agensh.test={run}", good, "sleep", "300"
        )
        names.append(router)
        a = {"run_dir": str(tmp_path / "run"), "task_id": "t", "grace_s": 3, "workers": dirs, "routers": [router]}
        assert shutdown.main([], {"AGENSH_INPUT": json.dumps(a)}) == 0
        receipt = json.loads((tmp_path / "run" / "t" / "receipts" / "shutdown.json").read_text())["result"]
        assert receipt["archives"] == {names[0]: "ok", names[1]: "missing", names[2]: "ok"}
        assert receipt["archives_complete"] is False and (Path(dirs[names[2]]) / "tried").exists()
        assert docker("inspect", "-f", "{{.State.Running}}", router) == "false"
    finally:
        docker("rm", "-f", *names, check=False)
