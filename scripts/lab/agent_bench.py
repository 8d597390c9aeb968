"""Benchmark: what a worker with the real Copilot CLI costs (prints figures; asserts nothing).

For each size N it starts, on one `internal` network of its own, the demo's scripted model and egress proxy and N
worker containers of the demo checkout's worker image (the real CLI at the demo's pin, its ACP driver), then
- idle: N team workers whose session is open and waits for a kickoff that never comes (no chat is reachable):
  start-up (from `docker start` to the session's `activity` line, by Docker's and the driver's clocks), and memory
  per worker once every session is up;
- working: N baseline workers, which prompt their session again after every turn (the scripted model answers each
  continuation with a 10 s `bash` sleep and a message): memory per worker sampled every 5 s for `--seconds`, and the
  turns completed.
Everything it makes carries the label `agensh.bench=agents-<pid>` and is removed at the end, also on failure.

    .venv/bin/python -m scripts.lab.bench --agents 2 8 32          # after `make demo` (its images)
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from model import addressing, contract
from model.checkout import (
    AGENT_BASE,
    AGENT_BASE_IMAGE,
    COPILOT_VERSION,
    DEFAULT_CONVENTION,
    PROMPTS_DIR,
    PROMPTS_MOUNT,
    SILENCE,
    TASK_IMAGE,
    WORKER_IMAGE,
)
from model.project import DEMO_CHECKOUT, ROOT
from scripts.cli.status import mib
from scripts.lab.sandbox import free_octet
from scripts.lib import activity
from scripts.setup import copilot_cli, demo_images

DEMO = ROOT / DEMO_CHECKOUT
READ = activity.reader(DEFAULT_CONVENTION)  # the demo checkout's activity report
RUN = os.getpid()
LABEL = f"agensh.bench=agents-{RUN}"
TASK = "testorg__calculator.abc1234"
DEMO_CLEANROOM = contract.cleanroom_image(TASK, "agensh-demo")  # made by `make demo`
SAMPLE_S = 5


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and out.returncode:
        raise RuntimeError(f"docker {args[0]} failed: {out.stderr.strip()[-400:]}")
    return out


def worker_image(version: str) -> str:
    """The demo checkout's agent base and worker images under private tags (removed at the end)."""
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}
    base, image = f"agensh-bench-agent-base:{RUN}", f"agensh-bench-worker:{RUN}"
    copilot_cli.image(version)
    for tag, dockerfile, context, args in (
        (
            base,
            DEMO / AGENT_BASE.dockerfile,
            DEMO / AGENT_BASE.context,
            {"STANDIN_IMAGE": demo_images.STANDIN, COPILOT_VERSION.name: version},
        ),
        (
            image,
            DEMO / WORKER_IMAGE.dockerfile,
            DEMO / WORKER_IMAGE.context,
            {TASK_IMAGE.name: DEMO_CLEANROOM, AGENT_BASE_IMAGE.name: base},
        ),
    ):
        build_args = [a for k, v in args.items() for a in ("--build-arg", f"{k}={v}")]
        subprocess.run(
            ["docker", "build", "-q", "-t", tag, "--label", LABEL, "-f", str(dockerfile), *build_args, str(context)],
            check=True,
            capture_output=True,
            env=env,
        )
    return image


def memory() -> dict[str, float]:
    ids = docker("ps", "-q", "--filter", f"label={LABEL}", "--filter", "label=agensh.bench.role=worker").stdout.split()
    out = docker("stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}", *ids).stdout if ids else ""
    return {
        name: mb
        for name, use in (line.split(" ", 1) for line in out.splitlines())
        if (mb := mib(use.split("/")[0].strip())) is not None
    }


class Bench:
    def __init__(self, image: str, version: str):
        self.image, self.version = image, version
        self.octet = free_octet()
        self.net = f"agensh-bench-agents-{RUN}"
        self.subnet = f"10.{self.octet}.0.0/16"
        self.token = f"bench-{RUN}"
        self.proxy_token = f"proxy-{RUN}"
        self.made: list[str] = []

    def ip(self, slot: int) -> str:
        return str(addressing.host(ipaddress.IPv4Network(self.subnet), slot))

    def run(self, name: str, *args: str) -> str:
        docker("run", "-d", "--name", name, "--label", LABEL, "--network", self.net, *args)
        self.made.append(name)
        return name

    def platform(self) -> None:
        docker("network", "create", "--internal", "--subnet", self.subnet, "--label", LABEL, self.net)
        sha = hashlib.sha256(self.token.encode()).hexdigest()
        self.run(
            f"agensh-bench-model-{RUN}",
            "--ip",
            self.ip(2),
            "-e",
            "STANDIN=model",
            "-e",
            "PORT=8080",
            "-e",
            f"EXPECTED_TOKEN_SHA256={sha}",
            "-e",
            f"STANDIN_MODELS={contract.PINNED_MODEL}",
            demo_images.STANDIN,
        )
        self.run(
            f"agensh-bench-proxy-{RUN}",
            "--ip",
            self.ip(3),
            "-e",
            "STANDIN=egress-proxy",
            "-e",
            "PORT=8080",
            "-e",
            f"LLM_UPSTREAM=http://{self.ip(2)}:8080",
            "-e",
            f"{contract.MODEL_CREDENTIAL_ENV}={self.token}",
            "-e",
            f"WORKER_PROXY_TOKEN={self.proxy_token}",
            "-e",
            f"REASONING_EFFORT={contract.PINNED_EFFORT}",
            demo_images.STANDIN,
        )

    def workers(self, n: int, baseline: bool, tmp: Path) -> list[str]:
        names = []
        for k in range(1, n + 1):
            name = f"agensh-bench-worker-{RUN}-{'b' if baseline else 't'}{k}"
            ws = tmp / name
            ws.mkdir()
            subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
            subprocess.run(["chown", "-R", contract.WORKER_USER, str(ws)], check=False)
            nothing = f"http://{self.ip(3)}:9"  # no chat, no token service: a refused port on the bench's network
            env = {
                "AGENT_ID": f"{TASK}-{k}",
                "TASK_ID": TASK,
                "BASELINE": "1" if baseline else "0",
                "MATTERMOST_URL": nothing,
                "TOKEN_SERVICE_URL": nothing,
                contract.PROXY_CREDENTIAL_ENV: self.proxy_token,
                SILENCE.worker_env: "600000",
                "WORKERS": str(n),
                "COPILOT_PROVIDER_BASE_URL": f"http://{self.ip(3)}:8080/v1",
                "COPILOT_PROVIDER_WIRE_API": "responses",
                "COPILOT_MODEL": contract.PINNED_MODEL,
                "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "272000",
                "PBENCH_DEADLINE_SECONDS": "3600",
            }
            docker(
                "create",
                "--name",
                name,
                "--label",
                LABEL,
                "--label",
                "agensh.bench.role=worker",
                "--network",
                self.net,
                "-v",
                f"{ws}:/workspace",
                "-v",
                f"{DEMO / PROMPTS_DIR}:{PROMPTS_MOUNT}:ro",
                *(a for kv in env.items() for a in ("-e", "=".join(kv))),
                self.image,
            )
            self.made.append(name)
            names.append(name)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda c: docker("start", c), names))
        return names

    def startup(self, names: list[str], limit_s: float = 300) -> list[float]:
        """Seconds from each container's start to its session's event (the one carrying the CLI's version)."""
        end = time.monotonic() + limit_s
        while True:
            events = {c: READ.events(c) for c in names}
            report = READ.report
            ready = {
                c: next((e for e in ev if e[report.kind] == report.version_event), None) for c, ev in events.items()
            }
            if all(ready.values()) or time.monotonic() > end:
                break
            time.sleep(2)
        out = []
        for c, e in ready.items():
            if e:
                started = docker("inspect", "-f", "{{.State.StartedAt}}", c).stdout.strip()
                out.append(activity.epoch(str(e[READ.report.at])) - activity.epoch(started))
        return out

    def remove(self, names: list[str]) -> None:
        if names:
            docker("rm", "-f", *names, check=False)
        self.made = [m for m in self.made if m not in names]

    def close(self) -> None:
        self.remove(list(self.made))
        docker("network", "rm", self.net, check=False)


def measure(n: int, seconds: int, image: str, version: str) -> dict[str, float | int | str]:
    b = Bench(image, version)
    with tempfile.TemporaryDirectory(prefix="agensh-agent-bench-") as tmp:
        try:
            b.platform()
            idle = b.workers(n, False, Path(tmp))
            started = b.startup(idle)
            time.sleep(SAMPLE_S)
            idle_mb = list(memory().values())
            b.remove(idle)
            busy = b.workers(n, True, Path(tmp))
            b.startup(busy)
            peak: dict[str, float] = {}
            samples: list[float] = []
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                now = memory()
                samples += now.values()
                total = sum(now.values())
                peak["total"] = max(peak.get("total", 0.0), total)
                peak["worker"] = max([peak.get("worker", 0.0), *now.values()])
                time.sleep(SAMPLE_S)
            turns = sum(READ.session(READ.events(c)).turns for c in busy)
        finally:
            b.close()
    return {
        "workers": n,
        "sessions_up": len(started),
        "startup_median_s": statistics.median(started) if started else -1,
        "startup_max_s": max(started, default=-1),
        "idle_mb": statistics.median(idle_mb) if idle_mb else -1,
        "working_mb": statistics.median(samples) if samples else -1,
        "working_peak_mb": peak.get("worker", -1),
        "total_peak_mb": peak.get("total", -1),
        "turns": turns,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[2, 8, 32], metavar="N")
    ap.add_argument("--seconds", type=int, default=60, help="how long the working phase is sampled")
    ap.add_argument("--copilot-version", default=contract.OFFLINE_ACP_COPILOT_VERSION)
    a = ap.parse_args(argv)
    image = worker_image(a.copilot_version)
    print(f"real Copilot CLI {a.copilot_version}, scripted model; memory from `docker stats` (MiB per worker)")
    print(
        "| workers | sessions up | start-up median / max | idle | working median / peak | all workers' peak | turns |"
    )
    print("|---|---|---|---|---|---|---|")
    try:
        for n in a.agents:
            r = measure(n, a.seconds, image, a.copilot_version)
            print(
                f"| {r['workers']} | {r['sessions_up']} | {r['startup_median_s']:.1f} / {r['startup_max_s']:.1f} s | "
                f"{r['idle_mb']:.0f} | {r['working_mb']:.0f} / {r['working_peak_mb']:.0f} | "
                f"{r['total_peak_mb']:.0f} | {r['turns']} in {r['seconds']} s |",
                flush=True,
            )
    finally:
        docker("rmi", "-f", image, f"agensh-bench-agent-base:{RUN}", check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
