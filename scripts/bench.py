"""Benchmark: Pulumi against plain `docker run` for demo-shaped teams (prints figures; asserts nothing).

For each team size it makes a copy of the project with a stack from the demo profile (bare topology:
`run_steps: false`), then times `pulumi preview`, `pulumi up` (done when every container runs, services healthy),
`pulumi destroy`, and the same networks and containers started by plain `docker run` calls in one process.
`--swarm` times the same team on a two-node swarm (scripts/swarm_lab.py, made and removed by the benchmark) beside
the single-host engine.

    .venv/bin/python -m scripts.bench 2 8 32            (after `make setup` and one `make demo` for the images)
    .venv/bin/python -m scripts.bench --swarm 2 8 32    (as root: the lab needs network namespaces)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from components import contract
from components.profile import parse_profile
from components.roles import spec
from components.topology import network_names, placements
from scripts import swarm_lab
from scripts.sandbox import ROOT, free_octet, isolated_env, profile_config, project_copy


def timed(cmd: list[str], **kw) -> float:
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode:
        errors = "\n".join(line for line in out.stdout.splitlines() if "error" in line.lower())[-3000:]
        raise SystemExit(f"bench: {' '.join(cmd)} failed:\n{errors}\n{out.stderr[-2000:]}")
    return time.monotonic() - t0


def config(workers: int, data: Path, **extra) -> dict:
    return profile_config("demo.profile.yaml", **{
        "profile": f"bench-w{workers}", "workers": workers, "run_steps": False, "subnet_octet": 246,
        "llm_upstream": "http://10.246.255.3:8080", "data_root": str(data), "keep_pulled_images": True,
        "host_units": "off", "mm_max_users_per_team": max(200, workers + 3), **extra})


def swarm_config(lab: swarm_lab.Lab, stack: str, data: Path) -> dict:
    """The same team on the lab: each node declared large enough for all pairs (the plan's numbers, not the
    machine's: the lab's nodes share this machine's CPUs and memory)."""
    settings = lab.swarm_settings(memory_gib=64, cpus=16) | {"platform_memory_gib": 1, "platform_cpus": 0.5,
                                                            "worker_cpus": 0.5, "router_cpus": 0.25}
    settings["nodes"][1]["data_root"] = str(data.parent / "data-n2")
    return {"engine": "swarm", "swarm": settings, "llm_upstream": f"http://omcgitea-{stack}-model:8080"}


def plain_docker(workers: int, data: Path) -> float:
    """The same networks and containers, by `docker run` in one process, beside the Pulumi-made ones (own names
    and subnets; the images Pulumi built)."""
    raw = {k.split(":", 1)[1]: v for k, v in config(workers, data).items()}
    p = parse_profile(raw | {"agensh_checkout": str(ROOT / "stacks" / "demo"), "profile": f"plain-w{workers}",
                             "subnet_octet": 245})
    nets = network_names(p)
    subnets = {"internal": p.internal_network, "egress": p.egress_network}
    made: list[str] = []
    t0 = time.monotonic()
    try:
        for kind, name in nets.items():
            subprocess.run(["docker", "network", "create", "--internal", "--subnet", str(subnets[kind]),
                            "--label", "agensh.bench=plain", name], check=True, capture_output=True)
        for c in placements(p):
            s = spec(p, c)
            args = ["docker", "run", "-d", "--name", c.name, "--label", "agensh.bench=plain", "--hostname", c.role,
                    "--network", nets["internal" if c.internal_ip else "egress"],
                    "--ip", c.internal_ip or c.egress_ip or ""]
            for k, v in s.env.items():
                args += ["-e", f"{k}={v}"]
            for k in s.secret_env:
                args += ["-e", f"{k}=bench"]
            if s.memory_mb:
                args += ["--memory", f"{s.memory_mb}m"]
            if s.user:
                args += ["--user", s.user]
            args.append(s.image)  # image names do not depend on the profile name: the ones Pulumi built
            args += list(s.command or [])
            subprocess.run(args, check=True, capture_output=True)
            made.append(c.name)
            if c.internal_ip and c.egress_ip:
                subprocess.run(["docker", "network", "connect", "--ip", c.egress_ip, nets["egress"], c.name],
                               check=True, capture_output=True)
        return time.monotonic() - t0
    finally:
        if made:
            subprocess.run(["docker", "rm", "-f", *made], capture_output=True)
        subprocess.run(["docker", "network", "rm", *nets.values()], capture_output=True)


def bench(workers: int, lab: swarm_lab.Lab | None = None, plain: bool = True, name: str = "bench",
          octet: int = 246, private: bool = False) -> dict[str, float]:
    """`name`, `octet` and `private` (images under private tags, built without cache) keep a run's containers,
    subnets and images apart from another benchmark's on the same engine."""
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        stack = f"{name}-w{workers}"
        extra = {"profile": stack, "subnet_octet": octet, "llm_upstream": f"http://10.{octet}.255.3:8080"}
        extra |= (swarm_config(lab, stack, tmpdir / "data") if lab else {}) | ({"uncached": True} if private else {})
        proj = project_copy(tmpdir, stack, config(workers, tmpdir / "data", **extra))
        env = isolated_env(tmpdir, "bench", **{contract.MODEL_CREDENTIAL_ENV: "bench-token"})
        run = {"cwd": proj, "env": env}
        timed([sys.executable, "scripts/new_stack.py", stack, "--from", f"stacks/{stack}.profile.yaml",
               "--env-file", "none"], **run)
        pulumi = ["pulumi", "--non-interactive", "-s", stack]
        try:
            preview = timed([*pulumi, "preview"], **run)
            up = timed([*pulumi, "up", "--yes", "--skip-preview"], **run)
            docker = plain_docker(workers, tmpdir / "data") if plain else 0.0
        finally:
            destroy = timed([*pulumi, "destroy", "--yes", "--skip-preview"], **run)
            subprocess.run([*pulumi, "stack", "rm", "--yes", "--force"], capture_output=True, **run)
    return {"preview": preview, "up": up, "destroy": destroy, "docker_run": docker}


def main(argv: list[str]) -> int:
    on_swarm = "--swarm" in argv
    sizes = [int(a) for a in argv if a != "--swarm"] or [2, 8, 32]
    if not on_swarm:
        print("workers containers  preview_s  up_s  destroy_s  docker_run_s  up/docker")
        for n in sizes:
            r = bench(n)
            print(f"{n:7d} {7 + 1 + 2 * n:10d} {r['preview']:9.1f} {r['up']:5.1f} {r['destroy']:10.1f} "
                  f"{r['docker_run']:13.1f} {r['up'] / r['docker_run']:10.1f}", flush=True)
        return 0
    lab = swarm_lab.up(2)
    try:
        swarm_lab.load(lab, swarm_lab.demo_images())
        print("workers services  one-host up_s  destroy_s  swarm preview_s  up_s  destroy_s  swarm/one-host up  "
              "(images built without cache under private tags, in both)")
        octet = free_octet()
        for n in sizes:  # the one-host run under its own names and subnets, beside whatever else runs here
            host = bench(n, plain=False, name="swbench", octet=octet, private=True)
            sw = bench(n, lab, plain=False, name="swbench", private=True)
            print(f"{n:7d} {7 + 2 * n:8d} {host['up']:13.1f} {host['destroy']:10.1f} {sw['preview']:15.1f} "
                  f"{sw['up']:5.1f} {sw['destroy']:10.1f} {sw['up'] / host['up']:18.1f}", flush=True)
    finally:
        swarm_lab.down(lab)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
