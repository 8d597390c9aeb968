"""A throwaway copy of the project with its own state backend and passphrase, for the tests and the benchmark:
they never touch the user's stacks, stack files or state."""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from model.project import DEMO_CHECKOUT, DEMO_SERVICES, ROOT
from scripts.cli.launch import preview_env

COPIED = ("Pulumi.yaml", "__main__.py", "components", "model", "scripts", "policies")
# What `make preview` adds to the environment (scripts/setup/preview.env), for previews run as users run them.
PREVIEW_ENV = preview_env()


def profile_config(source: str, **settings: Any) -> dict[str, Any]:
    """A profile file's `config:` (e.g. "demo.profile.yaml") with `agensh:` settings replaced."""
    config = yaml.safe_load((ROOT / "stacks" / source).read_text())["config"]
    config.update({f"agensh:{k}": v for k, v in settings.items()})
    return {k: v for k, v in config.items() if v is not None}


def copy_dir(tmp: Path) -> Path:
    """Where `project_copy` puts the copy."""
    return tmp / "project"


def project_copy(tmp: Path, profile: str, config: dict[str, Any], standin_image: str | None = None) -> Path:
    """`tmp/project`: the program, the demo's stand-in checkout and service images, the venv (linked),
    `stacks/<profile>.profile.yaml`. With `standin_image` the copied checkout's Dockerfiles build FROM that (a
    private tag) instead of the demo's stand-in image."""
    proj = copy_dir(tmp)
    proj.mkdir()
    for part in COPIED:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, proj / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, proj / part)
    for demo_part in (DEMO_CHECKOUT, DEMO_SERVICES):
        shutil.copytree(ROOT / demo_part, proj / demo_part)
    if standin_image:
        for dockerfile in (proj / DEMO_CHECKOUT).rglob("Dockerfile*"):
            text = re.sub(
                r"^ARG STANDIN_IMAGE=.*$", f"ARG STANDIN_IMAGE={standin_image}", dockerfile.read_text(), flags=re.M
            )
            dockerfile.write_text(text)
    (proj / ".venv").symlink_to(ROOT / ".venv")
    (proj / "stacks").mkdir()
    (proj / "stacks" / f"{profile}.profile.yaml").write_text(yaml.safe_dump({"config": config}))
    return proj


def isolated_env(tmp: Path, passphrase: str, **extra: str) -> dict[str, str]:
    """The environment with a file backend in `tmp/state` and a passphrase of its own."""
    (tmp / "state").mkdir(exist_ok=True)
    env = dict(os.environ, PULUMI_BACKEND_URL=f"file://{tmp / 'state'}", PULUMI_CONFIG_PASSPHRASE=passphrase, **extra)
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    env.pop("PULUMI_OPTION_POLICY_PACK", None)  # the user's checkout's pack (scripts/env.sh); a sandbox names its own
    # a copy shares the checkout's venv, which names the checkout (model/project.py): the copy's own modules first,
    # also for its policy pack, which the engine starts in the copy's policies/
    env["PYTHONPATH"] = str(copy_dir(tmp))
    return env


def state_file(env: dict[str, str], project: str, stack: str) -> Path:
    """Where the file backend of `isolated_env` keeps a stack's checkpoint."""
    return Path(env["PULUMI_BACKEND_URL"].removeprefix("file://")) / ".pulumi" / "stacks" / project / f"{stack}.json"


def used_subnets() -> list[ipaddress.IPv4Network]:
    """Every IPv4 subnet a Docker network or a host route of this machine uses."""
    used: list[ipaddress.IPv4Network] = []
    ids = subprocess.run(["docker", "network", "ls", "-q"], capture_output=True, text=True).stdout.split()
    for net in (
        json.loads(
            subprocess.run(["docker", "network", "inspect", *ids], capture_output=True, text=True).stdout or "[]"
        )
        if ids
        else []
    ):
        used += [
            ipaddress.IPv4Network(c["Subnet"])
            for c in (net.get("IPAM") or {}).get("Config") or []
            if ":" not in c.get("Subnet", ":")
        ]
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout.split()
    return used + [ipaddress.IPv4Network(w, strict=False) for w in routes if "/" in w and w[0].isdigit()]


# What the sandboxes of this user's processes have claimed, by the claiming process's pid: the harness makes several
# sandboxes at once, and the suite's tests run in several processes, before any of them has a network to show.
CLAIMS = Path(tempfile.gettempdir()) / f"agensh-subnet-claims.{os.getuid()}.json"


def alive(pid: int) -> bool:
    """Running (a zombie left to an init that does not reap counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _held() -> dict[str, int]:
    """The claims file's claims; one left half written by a killed process holds none."""
    try:
        return json.loads(CLAIMS.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def claim_subnet(candidates: Iterable[ipaddress.IPv4Network]) -> ipaddress.IPv4Network | None:
    """The first candidate that no Docker network, no host route and no live process's earlier claim uses. A claim
    lasts as long as its process: by then the network it was for exists, or is gone."""
    with open(CLAIMS.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # also between threads: each call opens the file anew
        claims = {net: pid for net, pid in _held().items() if alive(pid)}
        used = used_subnets() + [ipaddress.IPv4Network(net) for net in claims]
        chosen = next((net for net in candidates if not any(net.overlaps(u) for u in used)), None)
        if chosen is not None:
            claims[str(chosen)] = os.getpid()
        CLAIMS.write_text(json.dumps(claims))
    return chosen


def free_octet(first: int = 160, last: int = 240) -> int:
    """An octet X whose 10.X.0.0/16 no Docker network and no host route uses, so several test runs (or a test beside
    a user's stacks) never collide. Chosen at random in [first, last]."""
    octets = list(range(first, last + 1))
    random.shuffle(octets)
    net = claim_subnet(ipaddress.IPv4Network(f"10.{octet}.0.0/16") for octet in octets)
    if net is None:
        raise RuntimeError(f"no free 10.X.0.0/16 with X in {first}..{last}")
    return int(str(net).split(".")[1])


def kill_session(proc: subprocess.Popen[str]) -> None:
    """SIGKILL a command started with `start_new_session=True` and everything in its session. Pulumi starts each
    plugin in a process group of its own, so killing the command's group alone left plugins running."""
    subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)], capture_output=True)
    proc.wait()
