"""The benchmark's plain and Compose sides start the containers in the order the Pulumi program declares."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import yaml

from components.experiment import Experiment
from model.container_plan import ContainerPlan
from scripts.lab import bench
from tests.components.conftest import checkout, secrets

CONTAINER = "docker:index/container:Container"


def bare_plan(tmp: Path) -> ContainerPlan:
    config = bench.bench_profile("bench-order", workers=3, ntasks=2, octet=201, data=tmp / "data")
    return bench.container_plan(config, checkout(tmp / "checkout"))


def test_plain_side_waits_for_what_each_container_depends_on(tmp_path: Path, run_program):
    plan = bare_plan(tmp_path)
    regs = run_program(lambda: Experiment("experiment", plan.profile, secrets(), project_dir=tmp_path).images.ids)
    name_of = {r.urn: r.inputs["name"] for r in regs.values() if r.type == CONTAINER}
    declared = {
        r.inputs["name"]: {name_of[u] for u in r.deps if u in name_of} for r in regs.values() if r.type == CONTAINER
    }
    assert len(declared) == len(plan.containers) == 8 + 2 * 3 * 2  # platform with the demo's model, 2 tasks x 3 x 2
    for c in plan.containers:
        assert set(bench.deps(c)) == declared[c.name], c.name
    assert set(bench.deps(plan.containers[-1])) >= {"omcgitea-bench-order-bootstrap", "omcgitea-bench-order-mysql"}


def test_compose_file_has_the_same_order_and_waits(tmp_path: Path):
    plan = bare_plan(tmp_path)
    bench.Compose(plan, {c.spec.image: c.spec.image for c in plan.containers}, tmp_path, ["docker-compose"])
    spec = yaml.safe_load((tmp_path / "compose.yaml").read_text())
    assert all(n["internal"] for n in spec["networks"].values())
    worker = spec["services"]["omcgitea-bench-order-lua-lua-c6b4848-worker-1"]
    assert worker["depends_on"]["omcgitea-bench-order-bootstrap"] == {"condition": "service_completed_successfully"}
    assert worker["depends_on"]["omcgitea-bench-order-gitea"] == {"condition": "service_healthy"}
    assert set(worker["depends_on"]) == set(bench.deps(next(c for c in plan.containers if c.name.endswith("worker-1"))))
    assert spec["services"]["omcgitea-bench-order-gitea"]["depends_on"] == {
        "omcgitea-bench-order-mysql": {"condition": "service_healthy"}
    }
    # the stand-in secret inside Mattermost's DSN is the password its database user gets
    mysql = spec["services"]["omcgitea-bench-order-mysql"]["environment"]
    dsn = spec["services"]["omcgitea-bench-order-mattermost"]["environment"]["MM_SQLSETTINGS_DATASOURCE"]
    assert dsn.startswith(f"mattermost:{mysql['MYSQL_MATTERMOST_PASSWORD']}@tcp(")


def test_run_dag_keeps_the_order_and_the_parallelism():
    started: list[str] = []
    running, peak, lock = [0], [0], threading.Lock()

    def job(name: str):
        def run():
            with lock:
                started.append(name)
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.02)
            with lock:
                running[0] -= 1

        return run

    nodes = {
        "a": ([], job("a")),
        "b": (["a"], job("b")),
        **{f"c{i}": (["b"], job(f"c{i}")) for i in range(6)},
        "d": ([f"c{i}" for i in range(6)], job("d")),
    }
    bench.run_dag(nodes, parallel=3)
    assert started[:2] == ["a", "b"] and started[-1] == "d" and len(started) == len(nodes)
    assert peak[0] == 3


def test_a_size_whose_health_checks_need_the_machine_is_not_started(tmp_path: Path):
    """Every running container with a check costs HEALTH_CHECK_CPU_S per interval: the platform's every 5 s, each
    router every 30 s; the workers are created stopped and cost nothing."""

    def cores(workers: int, ntasks: int) -> float:
        config = bench.bench_profile(f"bench-w{workers}x{ntasks}", workers, ntasks, octet=201, data=tmp_path / "d")
        return bench.check_cores(bench.container_plan(config, checkout(tmp_path / "checkout")))

    platform = cores(1, 1) - bench.HEALTH_CHECK_CPU_S / 30  # one router
    assert abs(cores(128, 5) - (platform + 640 * bench.HEALTH_CHECK_CPU_S / 30)) < 1e-9
    assert cores(128, 1) < bench.CPU_SHARE * 2 < cores(128, 5)  # the 2-core reference machine: 128 x 5 is refused
