"""Benchmark: Pulumi against the same containers started without it, like for like (prints figures; asserts nothing).

For each size (workers x tasks) it makes a throwaway copy of the project with a demo-shaped stack of the bare
topology (`run_steps: false`; private image tags, `uncached: true`, so no shared tag is touched), then times
- pulumi: `preview` (as `make preview` runs it), `up --skip-preview` (the update `make up` runs after that preview;
  `launch` is the two), `up` again (no changes) and `destroy`, with the peak memory of the `pulumi` process (first:
  its subnet was picked free just before), and the checkpoint after `up` (kB, and bytes per resource: the engine
  rewrites all of it after every step);
- plain: the same images built with `docker build` and the same containers made with `docker` commands, in the
  same dependency order with the same parallelism (8) and the same waits: every container with a health check is
  waited for until healthy, the one-shot bootstrap until it exited, and the workers the wake step starts are only
  created, as the components leave them; then the check that all of it is still there (re-up) and the removal;
- compose: the same containers from a generated Compose file (`depends_on` with the same conditions) by the pinned
  Docker Compose (built once from its Go module when missing), using the plain side's images, waited for in the
  same way.
Each side runs alone, on its own names and subnets; every network is `internal`; everything is removed at the end,
also on failure. Sizes whose running containers would not fit in this machine's memory, or whose health checks
would keep more than half its cores busy, are previewed only.

    .venv/bin/python -m scripts.lab.bench                       # 2, 8, 32, 128 workers x 1 and 5 tasks
    .venv/bin/python -m scripts.lab.bench --workers 8 32 --tasks 1
    .venv/bin/python -m scripts.lab.bench --swarm --workers 2 8 32   # as root: the lab needs network namespaces
    .venv/bin/python -m scripts.lab.bench --pipeline --workers 121 128 --tasks 1 5
    .venv/bin/python -m scripts.lab.bench --pipeline --all-ways --workers 128 --tasks 5   # the launch's preview beside
                                                              # `pulumi preview` alone and with checkpoints off only
    .venv/bin/python -m scripts.lab.bench --agents 2 8 32     # real Copilot CLI workers: start-up and memory
(after `make setup`; the demo's stand-in images are built first when they are missing). `--swarm` times `pulumi`
alone (preview, up, destroy) for one task on one host and on a two-node swarm (scripts/lab/swarm_lab.py, made and
removed by the benchmark), each under its own names and subnets. `--pipeline` previews the whole run of the demo
profile (every step too, `run_steps: true`) at each size, as `make preview` does, and prints its resources, seconds,
milliseconds per resource and the peak memory of `pulumi` (nothing is created: it needs neither `make demo` nor free
memory).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from model import contract, image_plan, parts
from model.catalog import tasks as catalog
from model.container_plan import Condition, ContainerPlan, PlannedContainer
from model.profile import Profile, parse_profile
from model.project import DEMO_CHECKOUT
from model.services import ServiceSpec, secret_setting
from model.stackfiles import load_profile
from scripts.cli.destroy import destroy_order
from scripts.cli.status import mib
from scripts.lab import docker_disk, swarm_lab
from scripts.lab.sandbox import (
    PREVIEW_ENV,
    ROOT,
    free_octet,
    isolated_env,
    profile_config,
    project_copy,
    state_file,
)
from scripts.setup import demo_images, go_build, service_images

PARALLEL = 8  # pulumi's default --parallel; the plain side starts as many at once
DEMO_CLEANROOM = contract.cleanroom_image("testorg__calculator.abc1234", "agensh-demo")
BENCH_ORG = "agensh-bench"  # the cleanroom images of the benchmark's tasks: tags of the calculator's
LABEL = "agensh.bench"  # its value names the side and this run, so only this run's objects are ever removed
RUN = os.getpid()
# The stand-in images of this checkout under private tags (the shared ones may come from another checkout); the real
# Gitea and MariaDB images are the demo's (built once per version).
STANDIN_TAG = f"bench-{RUN}"
PRIVATE = dict(zip(("standin", "mattermost"), demo_images.standin_images(STANDIN_TAG)))
COMPOSE_TIMEOUT_S = 900
MEMORY_SHARE = 0.5  # run `up` only when the containers' measured memory fits in this share of the available memory
UNMEASURED_MAX = 400  # containers to start before the memory per container has been measured
# A Docker health check is an exec into the container, ~0.1 s of CPU (measured 2026-12-02); run `up` only when the
# running containers' checks need less than this share of the cores (128 x 5 at once needs ~2.3 of 2: it saturated
# the machine, 2026-12-03, docs/performance.md)
HEALTH_CHECK_CPU_S = 0.1
CPU_SHARE = 0.5


def bench_tasks(n: int) -> list[str]:
    """n real ProgramBench task ids (the shortest, so every container name fits)."""
    return sorted(sorted(catalog()), key=len)[:n]


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out


class PeakRss:
    """Peak resident memory of the processes named `name` under a process (sampled from /proc every 0.2 s)."""

    def __init__(self, pid: int, name: str):
        self.pid, self.name, self.peak_kb = pid, name, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError):
                    continue
                children.setdefault(ppid, []).append(int(entry))
        out, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo += children.get(pid, [])
        return out

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for pid in self._tree():
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() != self.name:
                        continue
                    rss = next(
                        int(line.split()[1])
                        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                        if line.startswith("VmRSS:")
                    )
                except (OSError, StopIteration):
                    continue
                self.peak_kb = max(self.peak_kb, rss)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kb // 1024


def diagnostics(output: str, limit: int = 6000) -> str:
    """What a failed `pulumi` command said went wrong: its Diagnostics section (the errors, before the outputs and the
    summary that end the console), else the end of the output."""
    start = output.find("\nDiagnostics:")
    if start < 0:
        return output[-limit:]
    end = min((i for i in (output.find(m, start) for m in ("\nOutputs:", "\nResources:")) if i > 0), default=None)
    return output[start:end][:limit]


def timed_pulumi(cmd: list[str], **kw: Any) -> tuple[float, int, str]:
    """Seconds, peak MB of `pulumi` and the output of one command."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    peak = PeakRss(proc.pid, "pulumi")
    output, _ = proc.communicate()
    mb = peak.stop()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd[:5])} failed:\n{diagnostics(output)}")
    return time.monotonic() - t0, mb, output


@dataclass(frozen=True)
class BenchStack:
    proj: Path  # the throwaway copy of the project
    env: dict[str, str]  # its own backend and passphrase
    pulumi: list[str]  # `pulumi` on its stack

    def timed(self, *args: str, env: dict[str, str] | None = None) -> tuple[float, int, str]:
        return timed_pulumi([*self.pulumi, *args], cwd=self.proj, env={**self.env, **(env or {})})

    def on(self, stack: str) -> BenchStack:
        """The same project and backend, `pulumi` on another stack (a part of a per-task profile)."""
        return replace(self, pulumi=[*self.pulumi[:-1], stack])

    def stacks(self) -> list[str]:
        """The profile's stacks in launch order (model/parts.py)."""
        name = self.pulumi[-1]
        return [s for s, _ in parts.stacks_of(name, load_profile(name, self.proj))]

    def state(self) -> tuple[int, int]:
        """The stack's checkpoint as the file backend keeps it: bytes, and resources in it (the engine rewrites all of
        it after every step of an `up`)."""
        path = state_file(self.env, "agensh", self.pulumi[-1])
        checkpoint = json.loads(path.read_text())["checkpoint"]
        return path.stat().st_size, len(checkpoint.get("latest", {}).get("resources") or [])

    def preview(self, env: dict[str, str] = PREVIEW_ENV) -> dict[str, Any]:
        """`pulumi preview` as `make preview` and `make up` run it (or with `env`): seconds, peak MB of `pulumi`,
        resources and ms per resource."""
        seconds, mb, output = self.timed("preview", env=env)
        resources = sum(int(m) for m in re.findall(r"^\s*\+ (\d+) to create$", output, re.MULTILINE))
        return {
            "preview": seconds,
            "preview_mb": mb,
            "resources": resources,
            "ms_per_resource": 1000 * seconds / resources if resources else None,
        }


@contextlib.contextmanager
def bench_stack(
    tmpdir: Path, stack: str, config: dict[str, Any], standin_image: str | None = None
) -> Iterator[BenchStack]:
    """A copy of the project in `tmpdir` with `stack` made from `config` (`python -m scripts.cli new-stack`); the stack
    is removed again on the way out, also on failure."""
    proj = project_copy(tmpdir, stack, config, standin_image=standin_image)
    made = BenchStack(
        proj,
        isolated_env(tmpdir, "bench", **{contract.MODEL_CREDENTIAL_ENV: "bench-token"}),
        ["pulumi", "--non-interactive", "-s", stack],
    )
    try:
        run(
            [
                sys.executable,
                "-m",
                "scripts.cli",
                "new-stack",
                stack,
                "--from",
                f"stacks/{stack}.profile.yaml",
                "--env-file",
                "none",
            ],
            cwd=proj,
            env=made.env,
        )
        yield made
    finally:
        listed = subprocess.run(
            [*made.pulumi, "stack", "ls", "--json"], capture_output=True, text=True, cwd=proj, env=made.env
        )
        for part in destroy_order(stack, {s["name"] for s in json.loads(listed.stdout or "[]")}):
            subprocess.run(
                [*made.on(part).pulumi, "stack", "rm", "--yes", "--force"], capture_output=True, cwd=proj, env=made.env
            )


def run_dag(nodes: dict[str, tuple[list[str], Callable[[], None]]], parallel: int = PARALLEL) -> None:
    """Run each node's function once all its dependencies are done, at most `parallel` at once (as the engine)."""
    done: set[str] = set()
    running: dict[str, Future[None]] = {}
    with ThreadPoolExecutor(parallel) as pool:
        while len(done) < len(nodes):
            for name, (deps, fn) in nodes.items():
                if name not in done and name not in running and all(d in done for d in deps):
                    running[name] = pool.submit(fn)
            finished, _ = wait(running.values(), return_when=FIRST_COMPLETED)
            for name in [n for n, f in running.items() if f in finished]:
                running.pop(name).result()
                done.add(name)


# --- the model's containers, as the components declare them: the container plan (model/container_plan.py) ------
Phase = tuple[PlannedContainer, ...]


def running(among: Phase) -> list[str]:
    """The containers `up` leaves running (of `among`): not the one-shot bootstrap, not the woken workers."""
    return [c.name for c in among if c.runs_after_up]


def woken(among: Phase) -> list[str]:
    """The workers created stopped for the wake step (the components pass `start: false`)."""
    return [c.name for c in among if c.spec.woken]


def at_once(plan: ContainerPlan, per_task: bool) -> Phase:
    """What runs at once: everything; per task, the platform and the largest task's team (each task's team is
    stopped before the next one's is made, as its shutdown step does)."""
    phases = plan.phases(per_task)
    return phases[0] + max(phases[1:], key=len, default=())


def deps(c: PlannedContainer) -> list[str]:
    """What a container waits for (the plan's waits), by name."""
    return [w.name for w in c.waits]


def subnets(plan: ContainerPlan) -> dict[str, str]:
    """Network kind -> subnet."""
    return {k: str(v) for k, v in plan.layout.networks.items()}


def builds(p: Profile) -> dict[str, tuple[list[str], list[str]]]:
    """Image tag -> (the tags it is built on, `docker build` arguments): the image plan's builds (model/image_plan.py),
    as the Images component builds them."""
    planned = image_plan.plan(p)
    built = {i.key: i.name for i in planned if i.build}
    out = {}
    for i in planned:
        if i.build:
            args = [a for k, v in i.build.args.items() for a in ("--build-arg", f"{k}={v}")]
            out[i.name] = (
                [built[k] for k in i.build.after if k in built],
                ["-f", str(p.checkout_dir / i.build.dockerfile), *args, str(p.checkout_dir / i.build.context)],
            )
    return out


def private_images() -> None:
    """This checkout's stand-in images under the private tags, and the demo's real Gitea and MariaDB images."""
    if demo_images.main(["--standin-tag", STANDIN_TAG]):
        raise SystemExit("bench: the demo's images could not be made")


def bench_profile(
    name: str, workers: int, ntasks: int, octet: int, data: Path, run_steps: bool = False, stacks: str = "one"
) -> dict[str, Any]:
    """The stack's `config:`: the demo profile, bare topology (or the whole run), private image tags, these tasks and
    sizes, as one stack or a stack per task."""
    return profile_config(
        "demo.profile.yaml",
        profile=name,
        stacks=stacks,
        workers=workers,
        tasks=bench_tasks(ntasks),
        run_steps=run_steps,
        mattermost_image=PRIVATE["mattermost"],
        subnet_octet=octet,
        llm_upstream=f"http://10.{octet}.255.3:8080",
        data_root=str(data),
        uncached=True,
        host_units="off",
        cleanroom_org=BENCH_ORG,
        mm_max_users_per_team=max(
            contract.MM_DEFAULT_MAX_USERS,
            contract.mm_max_users_needed(workers, ntasks, Profile.model_fields["administrators"].default),
        ),
        mysql_max_connections=max(1000, contract.mysql_connections_needed(workers * ntasks, 100)),
    )


def tag_cleanrooms(p: Profile, lab: swarm_lab.Lab | None = None) -> None:
    """Each task's cleanroom image is the demo's calculator under the task's tag, on this host or the lab's manager
    (where a swarm builds the worker images)."""
    for t in p.tasks:
        tag = ["tag", DEMO_CLEANROOM, p.cleanroom_image(t)]
        if lab:
            lab.docker(lab.manager, *tag)
        else:
            run(["docker", *tag])


def container_plan(config: dict[str, Any], checkout: Path) -> ContainerPlan:
    """The containers of a stack's `config:`, planned as the components declare them."""
    raw = {k.split(":", 1)[1]: v for k, v in config.items()}
    return ContainerPlan.of(parse_profile(raw | {"agensh_checkout": str(checkout)}))


def env_of(s: ServiceSpec) -> dict[str, str]:
    """The container's environment; every secret is a stand-in value, given as its variable takes it (inside the
    Mattermost DSN, hashed for a _SHA256 name), so the services still log in to each other."""
    return {**s.env, **{k: secret_setting(k, ref, "bench") for k, ref in s.secret_env.items()}}


def health_status(name: str) -> str:
    return run(["docker", "inspect", "-f", "{{if .State.Health}}{{.State.Health.Status}}{{end}}", name]).stdout.strip()


def wait_healthy(name: str) -> None:
    """As the docker provider's `wait`: inspect once a second until the health check passes (or the same timeout)."""
    deadline = time.monotonic() + contract.READY_TIMEOUT_S
    while (status := health_status(name)) != "healthy":
        if status == "unhealthy" or time.monotonic() > deadline:
            raise RuntimeError(f"{name} is {status or 'not healthy'}")
        time.sleep(1.0)


def remove_containers(names: list[str]) -> None:
    """Remove these containers PARALLEL at a time, like the engine's destroy: Docker 20.10 removing some hundred
    running containers at once (one `docker rm -f` of all of them, or Compose's `down`, even with
    COMPOSE_PARALLEL_LIMIT=8) kept stale endpoints on their networks, which then could not be removed (2026-12-03)."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(lambda n: subprocess.run(["docker", "rm", "-f", n], capture_output=True), names))


def stop_team(phase: Phase) -> None:
    """Stop a task's team before the next task's is created, as its shutdown step does (PARALLEL at a time), so that
    only one task's health checks run; no side counts its time."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(lambda c: subprocess.run(["docker", "stop", "-t", "5", c.name], capture_output=True), phase))


def timed_phases(phases: list[Phase], make: Callable[[Phase], Any]) -> list[float]:
    """The seconds each phase (the platform, then each task's team) took to make; per task, each task's team stopped
    before the next task's is made (`stop_team`, not counted), as its shutdown step does."""
    took = []
    for k, phase in enumerate(phases):
        if k >= 2:
            stop_team(phases[k - 1])
        t0 = time.monotonic()
        make(phase)
        took.append(time.monotonic() - t0)
    return took


def remove_networks(names: list[str], attempts: int = 60) -> None:
    """Remove these networks, waiting up to `attempts` seconds for Docker to let go of the endpoints of containers
    just removed (after some hundred `rm -f`, a `network rm` fails for a while); says on stderr which stayed."""
    left = names
    for _ in range(attempts):
        if not left:
            return
        subprocess.run(["docker", "network", "rm", *left], capture_output=True)
        listed = run(["docker", "network", "ls", "--format", "{{.Name}}"]).stdout.split()
        if left := [n for n in left if n in listed]:
            time.sleep(1.0)
    if left:
        print(
            f"bench: Docker kept the networks {', '.join(left)} (endpoints it still counts after mass removals; "
            "`docker network rm` them after the daemon's next restart)",
            file=sys.stderr,
            flush=True,
        )


# --- plain docker ---------------------------------------------------------------------------------------------
class Plain:
    """The same images by `docker build`, the same containers by `docker create/network connect/start`."""

    def __init__(self, plan: ContainerPlan):
        self.plan, self.nets = plan, plan.layout.network_names
        self.made: list[str] = []
        self.phase_s: list[float] = []  # after `up`: the seconds of each phase (the platform, each task's team)

    def build(self) -> float:
        t0 = time.monotonic()
        labels = ["--label", f"{LABEL}=plain-{RUN}"]

        def builder(tag: str, args: list[str]) -> Callable[[], None]:
            def build() -> None:
                run(
                    ["docker", "build", "-q", "--no-cache", "-t", tag, *labels, *args],
                    env={**os.environ, **service_images.LEGACY_BUILDER},
                )

            return build

        run_dag({tag: (after, builder(tag, args)) for tag, (after, args) in builds(self.plan.profile).items()})
        return time.monotonic() - t0

    def start_one(self, planned: PlannedContainer) -> None:
        c, s, att = planned.placement, planned.spec, planned.networks  # the networks in the order it attaches them
        args = [
            "docker",
            "create",
            "--name",
            c.name,
            "--label",
            f"{LABEL}=plain-{RUN}",
            "--restart",
            planned.restart,
            "--hostname",
            c.hostname,
        ]
        args += contract.label_args(planned.labels)
        if att:
            args += ["--network", self.nets[att[0].network], *(("--ip", att[0].address) if att[0].address else ())]
            args += [arg for alias in att[0].aliases or () for arg in ("--network-alias", alias)]
        else:
            args += ["--network", "none"]
        for k, v in sorted(env_of(s).items()):
            args += ["-e", f"{k}={v}"]
        for m in s.mounts:
            args += ["-v", f"{m.host_path}:{m.container_path}{':ro' if m.read_only else ''}"]
        if s.memory_mb:
            args += ["--memory", f"{s.memory_mb}m"]
        if s.user:
            args += ["--user", s.user]
        if h := planned.health:
            kind, *test = h.test
            args += [
                "--health-cmd",
                " ".join(test),  # the CLI takes a shell command
                "--health-interval",
                h.interval,
                "--health-timeout",
                h.timeout,
                "--health-retries",
                str(h.retries),
                "--health-start-period",
                h.start_period,
            ]
        if s.entrypoint:
            args += ["--entrypoint", s.entrypoint[0]]
        args += [s.image, *(s.entrypoint[1:] if s.entrypoint else ()), *(s.command or ())]
        run(args)
        self.made.append(c.name)
        for a in att[1:]:
            aliases = [arg for alias in a.aliases or () for arg in ("--alias", alias)]
            ip = ["--ip", a.address] if a.address else []
            run(["docker", "network", "connect", *ip, *aliases, self.nets[a.network], c.name])
        if s.one_shot:  # the provider's `attach`: wait for it to exit
            run(["docker", "start", "-a", c.name])
        elif not s.woken:  # a woken worker stays created, as the components leave it
            run(["docker", "start", c.name])
            if s.waited:
                wait_healthy(c.name)

    def up(self, per_task: bool = False) -> float:
        # the same names an earlier bench run may have left (a network Docker did not let go of at its end)
        ours = run(["docker", "network", "ls", "--filter", f"label={LABEL}", "--format", "{{.Name}}"]).stdout.split()
        remove_networks([n for n in self.nets.values() if n in ours])
        t0 = time.monotonic()
        for kind, subnet in subnets(self.plan).items():
            run(
                [
                    "docker",
                    "network",
                    "create",
                    "--internal",
                    "--subnet",
                    subnet,
                    "--label",
                    f"{LABEL}=plain-{RUN}",
                    self.nets[kind],
                ]
            )
        networks = time.monotonic() - t0

        def make(phase: Phase) -> None:
            names = {c.name for c in phase}
            run_dag({c.name: ([d for d in deps(c) if d in names], partial(self.start_one, c)) for c in phase})

        self.phase_s = timed_phases(self.plan.phases(per_task), make)
        return networks + sum(self.phase_s)

    def reup(self) -> float:
        """What `up` with no changes checks: every container is there, running unless it may stop."""
        t0 = time.monotonic()
        out = run(["docker", "inspect", "-f", "{{.Name}} {{.State.Status}}", *self.made]).stdout.split("\n")
        assert len([line for line in out if line]) == len(self.plan.containers), out
        return time.monotonic() - t0

    def down(self) -> float:
        t0 = time.monotonic()
        remove_containers(self.made)
        remove_networks(list(self.nets.values()))
        self.made = []
        return time.monotonic() - t0


# --- compose --------------------------------------------------------------------------------------------------
def compose_command() -> list[str]:
    """The pinned Docker Compose, the same on every machine (`go_build.COMPOSE`: built once when missing, under a
    minute)."""
    return [str(go_build.program(go_build.COMPOSE))]


# how Compose names each of the plan's conditions of a wait
COMPOSE_CONDITION: dict[Condition, str] = {
    "completed": "service_completed_successfully",
    "healthy": "service_healthy",
    "started": "service_started",
}


class Compose:
    """The same containers from a Compose file, on the plain side's images (`images`: compose tag -> plain tag)."""

    def __init__(self, plan: ContainerPlan, images: dict[str, str], workdir: Path, cmd: list[str]):
        self.plan = plan
        self.cmd = [*cmd, "-p", f"bench-{plan.profile.profile}", "-f", str(workdir / "compose.yaml")]
        self.last: Phase | None = None  # per task: the last task's containers, still running after `up`
        self.phase_s: list[float] = []  # after `up`: the seconds of each phase (the platform, each task's team)
        nets = plan.layout.network_names
        self.nets = list(nets.values())
        services = {}
        for planned in plan.containers:
            c, s = planned.placement, planned.spec
            svc: dict[str, Any] = {
                "image": images[s.image],
                "container_name": c.name,
                "restart": planned.restart,
                "hostname": c.hostname,
                "labels": {**planned.labels, LABEL: f"compose-{RUN}"},
                "environment": env_of(s),
                "volumes": [f"{m.host_path}:{m.container_path}{':ro' if m.read_only else ''}" for m in s.mounts],
            }
            att = planned.networks
            svc["networks"] = {
                nets[a.network]: {
                    **({"ipv4_address": a.address} if a.address else {}),
                    **({"aliases": list(a.aliases)} if a.aliases else {}),
                }
                for a in att
            }
            if not att:
                svc["network_mode"] = "none"
            if s.memory_mb:
                svc["mem_limit"] = f"{s.memory_mb}m"
            if s.user:
                svc["user"] = s.user
            if s.entrypoint:
                svc["entrypoint"] = list(s.entrypoint)
            if s.command:
                svc["command"] = list(s.command)
            if planned.health:
                svc["healthcheck"] = {"test": list(planned.health.test), **planned.health.timing()}
            if planned.waits:
                svc["depends_on"] = {w.name: {"condition": COMPOSE_CONDITION[w.condition]} for w in planned.waits}
            services[c.name] = svc
        networks = {
            nets[k]: {
                "name": nets[k],
                "internal": True,
                "ipam": {"config": [{"subnet": subnet}]},
                "labels": {LABEL: f"compose-{RUN}"},
            }
            for k, subnet in subnets(plan).items()
        }
        (workdir / "compose.yaml").write_text(yaml.safe_dump({"services": services, "networks": networks}))

    def up(self, per_task: bool = False) -> float:
        def make(phase: Phase) -> None:
            # Compose's own parallelism, what its users get
            run([*self.cmd, "up", "-d", *running(phase)], timeout=COMPOSE_TIMEOUT_S)
            # the woken workers created, not started (what they depend on is up by now)
            if stopped := woken(phase):
                run([*self.cmd, "up", "--no-start", "--no-deps", *stopped], timeout=COMPOSE_TIMEOUT_S)
            waiting = [c.name for c in phase if c.spec.waited]
            run_dag({n: ([], partial(wait_healthy, n)) for n in waiting})  # Compose returns once they are started

        phases = self.plan.phases(per_task)
        self.phase_s = timed_phases(phases, make)
        self.last = phases[-1] if per_task else None
        return sum(self.phase_s)

    def reup(self) -> float:
        """`up` again of what the last `up` left running (per task: the platform and the last task's team)."""
        t0 = time.monotonic()
        left = self.plan.containers if self.last is None else self.plan.phases(True)[0] + self.last
        run([*self.cmd, "up", "-d", "--no-recreate", *running(left)], timeout=COMPOSE_TIMEOUT_S)
        return time.monotonic() - t0

    def down(self) -> float:
        t0 = time.monotonic()
        # the containers first, as on the plain side (even bounded, Compose's own removal left stale endpoints)
        remove_containers([c.name for c in self.plan.containers])
        subprocess.run([*self.cmd, "down", "--remove-orphans"], capture_output=True)
        remove_networks(self.nets)  # waited for as on the plain side
        return time.monotonic() - t0


# --- one size -------------------------------------------------------------------------------------------------
def container_memory_mb(label_value: str) -> float:
    """Mean memory used by this run's running containers of one side (`label_value`) (docker stats; a container
    that stopped meanwhile is left out)."""
    ids = run(["docker", "ps", "-q", "--filter", f"label={LABEL}={label_value}-{RUN}"]).stdout.split()
    out = (
        subprocess.run(
            ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", *ids], capture_output=True, text=True
        ).stdout
        if ids
        else ""
    )
    used = [mb for mb in (mib(line.split("/")[0].strip()) for line in out.splitlines()) if mb is not None]
    return sum(used) / len(used) if used else 0.0


def available_mb() -> int:
    return (
        next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemAvailable:")
        )
        // 1024
    )


def check_cores(plan: ContainerPlan, per_task: bool = False) -> float:
    """The cores the running containers' health checks keep busy (per task: the platform's and one task's, the
    others stopped as their shutdown step stops them)."""
    return sum(
        HEALTH_CHECK_CPU_S / int(c.health.interval.removesuffix("s"))
        for c in at_once(plan, per_task)
        if c.runs_after_up and c.health
    )


def remove_leftovers(plan: ContainerPlan, built: list[str]) -> None:
    """Whatever a failed or interrupted run left: the sides' containers and networks, the Pulumi side's too (its
    profile's label), the images built under private tags, the cleanroom tags."""
    for label in (
        *(f"{LABEL}={side}-{RUN}" for side in ("plain", "compose", "images")),
        f"{contract.PROFILE_LABEL}={plan.profile.profile}",
    ):
        remove_containers(run(["docker", "ps", "-aq", "--filter", f"label={label}"]).stdout.split())
        left = run(["docker", "network", "ls", "--format", "{{.Name}}", "--filter", f"label={label}"]).stdout.split()
        remove_networks(left, attempts=5)  # each side's down waited for its networks already
    p = plan.profile
    subprocess.run(["docker", "rmi", *built, *builds(p), *[p.cleanroom_image(t) for t in p.tasks]], capture_output=True)


def failed(side: str, err: Exception) -> str:
    """A side's failure: its first line for the table, all of it on stderr."""
    print(f"bench: the {side} side failed:\n{err}", file=sys.stderr, flush=True)
    return f"{side}: {str(err).splitlines()[0]}"


def bench(workers: int, ntasks: int, per_container_mb: float | None, per_task: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"workers": workers, "tasks": ntasks, "stacks": "per-task" if per_task else "one"}
    with tempfile.TemporaryDirectory(prefix="agensh-bench-") as tmp:
        tmpdir = Path(tmp)
        stack = f"bench{RUN}-w{workers}x{ntasks}"  # of this run, like the other sides' (Docker may keep a network)
        stacks = "per-task" if per_task else "one"
        config = bench_profile(stack, workers, ntasks, free_octet(), tmpdir / "pulumi", stacks=stacks)
        built: list[str] = []  # the plain side's image tags
        with bench_stack(tmpdir, stack, config, PRIVATE["standin"]) as made:
            checkout = made.proj / DEMO_CHECKOUT
            plan = container_plan(config, checkout)
            result["containers"] = len(plan.containers)
            up_running = len(running(at_once(plan, per_task)))  # a container created stopped holds no memory
            fits = (
                up_running <= UNMEASURED_MAX
                if per_container_mb is None
                else per_container_mb * up_running < MEMORY_SHARE * available_mb()
            )
            try:
                tag_cleanrooms(plan.profile)
                result |= made.preview({**PREVIEW_ENV, parts.WHOLE_PREVIEW_ENV: "1"} if per_task else PREVIEW_ENV)
                if not fits:
                    result["skipped"] = (
                        f"up: {up_running} running containers x {per_container_mb:.0f} MB > "
                        f"{MEMORY_SHARE:.0%} of {available_mb()} MB available"
                        if per_container_mb
                        else f"up: {up_running} running containers before any size measured their memory"
                    )
                    return result
                cores, have = check_cores(plan, per_task), os.cpu_count() or 1
                if cores > CPU_SHARE * have:
                    result["skipped"] = (
                        f"up: the health checks of {up_running} running containers need ~{cores:.1f} cores > "
                        f"{CPU_SHARE:.0%} of {have}"
                    )
                    return result

                failures = []
                order = [made.on(s) for s in made.stacks()]
                try:  # first, while the subnet picked for it is still free
                    ups = pulumi_up(order, plan.phases(per_task))
                    result["up"], result["up_mb"] = sum(t for t, _ in ups), max(mb for _, mb in ups)
                    if per_task:
                        result["up_parts"] = [round(t, 1) for t, _ in ups]
                    states = [part.state() for part in order]
                    size, in_state = max(states)
                    result["state_kb"], result["state_b/res"] = size // 1000, size // max(in_state, 1)
                    result["launch"] = result["preview"] + result["up"]
                    result["reup"] = sum(part.timed("up", "--yes", "--skip-preview")[0] for part in order)
                except RuntimeError as e:  # a side that fails is reported; the others still run
                    failures.append(failed("pulumi", e))
                finally:
                    try:
                        result["destroy"] = sum(
                            part.timed("destroy", "--yes", "--skip-preview")[0] for part in reversed(order)
                        )
                    except RuntimeError as e:  # Docker 20.10 keeping a network's stale endpoints, below
                        failures.append(failed("pulumi destroy", e))

                # own names (of this run: a network Docker keeps must not stop the next run) and subnets (picked now),
                # the same checkout
                def side_plan(side: str) -> ContainerPlan:
                    name = f"{side}{RUN}-w{workers}x{ntasks}"
                    return container_plan(bench_profile(name, workers, ntasks, free_octet(), tmpdir / side), checkout)

                plain = Plain(side_plan("plain"))
                built += list(builds(plain.plan.profile))
                try:
                    result["plain_build"] = plain.build()
                    result["plain_up"] = plain.up(per_task)
                    result["plain_parts"] = [round(t, 1) for t in plain.phase_s]
                    result["plain_reup"] = plain.reup()
                    result["per_container_mb"] = container_memory_mb("plain")
                except RuntimeError as e:
                    failures.append(failed("plain", e))
                finally:
                    result["plain_down"] = plain.down()
                try:
                    cmd: list[str] | None = compose_command()
                except RuntimeError as e:  # no Go, or no module proxy: the other sides' figures still stand
                    cmd = None
                    failures.append(failed("compose", e))
                if cmd and "plain_build" in result:
                    other = side_plan("compose")
                    images = {c.spec.image: c2.spec.image for c, c2 in zip(other.containers, plain.plan.containers)}
                    compose = Compose(other, images, tmpdir, cmd)
                    try:
                        result["compose_up"] = compose.up(per_task)
                        result["compose_parts"] = [round(t, 1) for t in compose.phase_s]
                        result["compose_reup"] = compose.reup()
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        failures.append(failed("compose", e))
                    finally:
                        result["compose_down"] = compose.down()
                if failures:
                    result["skipped"] = "; ".join(failures)
            finally:
                remove_leftovers(plan, built)
    return result


def pulumi_up(order: list[BenchStack], phases: list[Phase]) -> list[tuple[float, int]]:
    """`up --skip-preview` of each stack in launch order (seconds, peak MB of `pulumi`); per task, each task's team
    stopped before the next task's stack, as its shutdown step stops it (not counted)."""
    out = []
    for k, part in enumerate(order):
        if 2 <= k < len(phases):
            stop_team(phases[k - 1])
        seconds, mb, _ = part.timed("up", "--yes", "--skip-preview")
        out.append((seconds, mb))
    return out


# How a preview can run: as `make up` and `make preview` run it, and (--all-ways) as a Pulumi user types it (a plain
# `pulumi up` previews that way first) and with only the checkpoints skipped.
PREVIEW_WAYS = {
    "launch": PREVIEW_ENV,
    "plain": {},
    "no-checkpoints": {"PULUMI_SKIP_CHECKPOINTS": PREVIEW_ENV["PULUMI_SKIP_CHECKPOINTS"]},
}


def pipeline(workers: int, ntasks: int, ways: list[str], stacks: str = "one") -> list[dict[str, Any]]:
    """The preview of the whole run (every step too) of a demo-shaped stack of this size, each way, one after the
    other on the same stack; nothing is created. Per task, it is the launch's preview of the whole profile in the
    profile's stack (model/parts.py)."""
    whole = {parts.WHOLE_PREVIEW_ENV: "1"} if stacks == "per-task" else {}
    with tempfile.TemporaryDirectory(prefix="agensh-bench-") as tmp:
        tmpdir = Path(tmp)
        stack = f"benchrun-w{workers}x{ntasks}"
        config = bench_profile(stack, workers, ntasks, free_octet(), tmpdir / "data", run_steps=True, stacks=stacks)
        with bench_stack(tmpdir, stack, config) as made:
            return [
                {"workers": workers, "tasks": ntasks, "way": w, **made.preview({**PREVIEW_WAYS[w], **whole})}
                for w in ways
            ]


def pipeline_main(sizes: list[tuple[int, int]], ways: list[str], stacks: str = "one") -> int:
    print(f"stacks: {stacks}")
    print("workers tasks way            resources preview_s ms_per_resource pulumi_mb", flush=True)
    for workers, ntasks in sizes:
        for r in pipeline(workers, ntasks, ways, stacks):
            print(
                f"{workers:7d} {ntasks:5d} {r['way']:14} {r['resources']:9d} {r['preview']:9.1f} "
                f"{r['ms_per_resource']:15.1f} {r['preview_mb']:9d}",
                flush=True,
            )
    return 0


def swarm_settings(lab: swarm_lab.Lab, data: Path) -> dict[str, Any]:
    """engine: swarm on the lab, each node declared large enough for all pairs (the plan's numbers, not the
    machine's: the lab's nodes share this machine's CPUs and memory); node B keeps its data apart."""
    settings = lab.swarm_settings(memory_gib=64, cpus=16) | {
        "platform_memory_gib": 1,
        "platform_cpus": 0.5,
        "worker_cpus": 0.5,
        "router_cpus": 0.25,
    }
    settings["nodes"][1]["data_root"] = str(data.parent / f"{data.name}-n2")
    return {"agensh:engine": "swarm", "agensh:swarm": settings}


def pulumi_only(workers: int, lab: swarm_lab.Lab | None) -> dict[str, Any]:
    """preview, up and destroy of one task's bare team, on this host or (lab) on the swarm."""
    side = "swarm" if lab else "host"
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="agensh-bench-") as tmp:
        tmpdir = Path(tmp)
        stack = f"bench{side}-w{workers}"
        config = bench_profile(stack, workers, 1, free_octet(), tmpdir / "data")
        if lab:
            config |= swarm_settings(lab, tmpdir / "data") | {
                "agensh:llm_upstream": f"http://omcgitea-{stack}-model:8080"
            }
        with bench_stack(tmpdir, stack, config, PRIVATE["standin"]) as made:
            plan = container_plan(config, made.proj / DEMO_CHECKOUT)
            try:
                tag_cleanrooms(plan.profile, lab)
                result["preview"] = made.preview()["preview"]
                try:
                    result["up"], _, _ = made.timed("up", "--yes", "--skip-preview")
                finally:
                    result["destroy"], _, _ = made.timed("destroy", "--yes", "--skip-preview")
            finally:
                if not lab:
                    remove_leftovers(plan, [])
    return result


def swarm_main(sizes: list[int]) -> int:
    """One host beside the two-node swarm lab, `pulumi` alone."""
    print("workers services  one-host up_s  destroy_s  swarm preview_s  up_s  destroy_s  swarm/one-host up")
    lab = swarm_lab.up(2)
    try:
        private_images()
        swarm_lab.load(lab, swarm_lab.demo_images(STANDIN_TAG))  # what the manager would pull
        for n in sizes:
            host, sw = pulumi_only(n, None), pulumi_only(n, lab)
            print(
                f"{n:7d} {7 + 2 * n:8d} {host['up']:13.1f} {host['destroy']:10.1f} {sw['preview']:15.1f} "
                f"{sw['up']:5.1f} {sw['destroy']:10.1f} {sw['up'] / host['up']:18.1f}",
                flush=True,
            )
    finally:
        swarm_lab.down(lab)
        subprocess.run(["docker", "rmi", *reversed(PRIVATE.values())], capture_output=True)
    return 0


COLUMNS = (
    "workers",
    "tasks",
    "containers",
    "preview",
    "preview_mb",
    "up",
    "up_mb",
    "launch",
    "state_kb",
    "state_b/res",
    "reup",
    "destroy",
    "plain_build",
    "plain_up",
    "plain_reup",
    "plain_down",
    "compose_up",
    "compose_reup",
    "compose_down",
    "up/plain",
    "up/compose",
)


def row(r: dict[str, Any]) -> str:
    if "plain_up" in r and "up" in r:
        r["up/plain"] = r["up"] / (r["plain_build"] + r["plain_up"])
    if "compose_up" in r and "up" in r:
        r["up/compose"] = r["up"] / (r["plain_build"] + r["compose_up"])
    cells = [
        f"{r[k]:.2f}"
        if k.startswith("up/") and k in r
        else f"{r[k]:.1f}"
        if isinstance(r.get(k), float)
        else str(r.get(k, "-"))
        for k in COLUMNS
    ]
    return " ".join(c.rjust(len(k)) for c, k in zip(cells, COLUMNS)) + (f"   {r['skipped']}" if "skipped" in r else "")


def main(argv: list[str]) -> int:
    if "--agents" in argv:  # what a worker with the real Copilot CLI costs (scripts/lab/agent_bench.py)
        from scripts.lab import agent_bench

        return agent_bench.main(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 8, 32, 128])
    ap.add_argument("--tasks", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--preview-only", action="store_true")
    ap.add_argument(
        "--stacks",
        choices=["one", "per-task"],
        default="one",
        help="the Pulumi side's profile as one stack, or a stack per task (model/parts.py); per task, every side "
        "stops each task's team before the next task's, as the shutdown step does",
    )
    ap.add_argument("--swarm", action="store_true", help="one task's team on one host beside a two-node swarm lab")
    ap.add_argument("--pipeline", action="store_true", help="preview only, of the whole run (every step too)")
    ap.add_argument(
        "--all-ways", action="store_true", help="with --pipeline: also as `pulumi preview` alone, and checkpoints off"
    )
    args = ap.parse_args(argv)
    if args.pipeline:
        ways = list(PREVIEW_WAYS) if args.all_ways else ["launch"]
        return pipeline_main([(w, t) for t in args.tasks for w in args.workers], ways, args.stacks)
    if subprocess.run(["docker", "image", "inspect", DEMO_CLEANROOM], capture_output=True).returncode:
        print("bench: building the demo's images first (scripts/setup/demo_images.py, as `make demo` does)", flush=True)
        run(["bash", str(ROOT / "scripts" / "setup" / "base_image.sh")])
        run([sys.executable, "-m", "scripts.setup.demo_images"], cwd=ROOT)
    if args.swarm:
        return swarm_main(args.workers)
    print("seconds; *_mb: peak MB of `pulumi`; up/plain and up/compose count the plain side's image builds too")
    print(" ".join(COLUMNS), flush=True)
    per_container: float | None = None  # measured on the first size that runs
    per_task = args.stacks == "per-task"
    try:
        private_images()
        for ntasks in args.tasks:
            for workers in args.workers:
                r = bench(workers, ntasks, float("inf") if args.preview_only else per_container, per_task)
                per_container = r.get("per_container_mb", per_container)
                print(row(r), flush=True)
                for side in ("up", "plain", "compose"):  # per task: each side's time per phase, to compare growth
                    if per_task and f"{side}_parts" in r:
                        print(f"   {side} parts: {r[f'{side}_parts']}", flush=True)
    finally:
        subprocess.run(["docker", "rmi", *reversed(PRIVATE.values())], capture_output=True)
    if per_container is not None:
        print(f"memory used per stand-in container: {per_container:.1f} MB (docker stats)")
    return 0


if __name__ == "__main__":
    with docker_disk.build_cache_kept():  # private-tag builds leave cache nobody reuses (scripts/lab/docker_disk.py)
        sys.exit(main(sys.argv[1:]))
