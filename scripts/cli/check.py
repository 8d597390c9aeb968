"""check: every live check of a profile before a launch; leaves nothing running and nothing in the stack's state.

    .venv/bin/python -m scripts.cli check cohort-w8        (make check STACK=cohort-w8)

What `make up`'s preflight checks once the networks and images exist, checked here alone, before anything is created:
Docker, the checkout against the checkout contract, the team limits, no leftover output or containers of the profile,
the subnets and operator ports free, the host units, every image of the profile pulled or built as `up` would
(model/image_plan.py: the same Dockerfiles, arguments and tags) with each worker image's self-check, Copilot CLI version
and reference binary in throwaway containers without network, the tasks' test blobs and the room for them on the data
root, and the model: the gateway's model list and one small request through a temporary egress proxy of the profile
(on temporary networks with the profile's subnets, beside the demo's stand-in model when the profile runs it), asked
with the workers' credential as a worker would. The checks are the preflight's own (scripts/checks.py).

Reads the stack's settings and secrets (`pulumi config`, nothing written) and never runs `pulumi up`. The temporary
networks and containers are removed however the command ends; images built under an uncached profile's private tag
are removed too (`up` builds them again), shared tags stay as `up` keeps them. Each check is reported as it runs,
every failure again at the end with what to do. Exits 0 when all pass, 1 when any fails, 2 for a stack it cannot
check (no stack file, an invalid profile, a swarm profile, whose live checks run at `make up`).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from types import FrameType

from model import checkout as checkout_contract
from model import contract
from model import step_inputs as si
from model.image_plan import Build, PlannedImage, build_labels, plan, private
from model.profile import NAMESPACE, Profile, ProfileError
from model.root_powers import missing
from model.services import HEALTH_PATH, secret_key, secret_setting, spec
from model.stackfiles import ROOT, load_profile
from model.topology import Layout, Placement
from scripts.cli import options
from scripts.lib import checks, privilege
from scripts.lib.step import StepFailed, progress

WHO = "check"
HOST_UNITS = ROOT / "scripts" / "host" / "host_units.sh"
SYSTEMD = Path("/run/systemd/system")  # present where systemd runs
SSH_FAILED = 255  # ssh's own exit code: no connection, or the host key or the login refused
PROXY_READY_S = 60
PROGRESS_EVERY_S = 15  # a long build or pull says where it is this often

cli = options.typer_app()


def say(message: str) -> None:
    progress(f"{WHO}: {message}")


def docker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, env=env)


def builder_env() -> dict[str, str]:
    """`docker build`'s environment: BuildKit, as the provider builds, when the client has its buildx component; else
    the engine's classic builder (a client without buildx refuses BuildKit)."""
    has_buildx = docker("buildx", "version").returncode == 0
    return dict(os.environ) if has_buildx else {**os.environ, "DOCKER_BUILDKIT": "0"}


def streamed(args: list[str], what: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """A long command (a build, a pull), its output read as it comes: a progress line every PROGRESS_EVERY_S with its
    latest line; returns its exit code and its last lines."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    tail: list[str] = []
    last = start = time.monotonic()
    try:
        for line in proc.stdout:
            tail = [*tail[-19:], line.rstrip()]
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                say(f"{what}: {last - start:.0f} s, {line.strip()[:110]}")
        return proc.wait(), tail
    finally:  # interrupted: the build or pull ends with the command
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def build_args(p: Profile, checkout: Path, image: PlannedImage, b: Build, revision: str | None) -> list[str]:
    """`docker build` of a planned image as components/images.py has the provider build it (one host: a swarm profile
    is not checked here)."""
    args = ["docker", "build", "--file", str(checkout / b.dockerfile), "--tag", image.name]
    args += [f"--build-arg={k}={v}" for k, v in sorted(b.args.items())]
    args += [f"--label={k}={v}" for k, v in sorted(build_labels(p, image, revision).items())]
    args += ["--no-cache"] if p.uncached else []
    return [*args, str(checkout / b.context)]


def make_images(p: Profile, checkout: Path, revision: str | None, made: list[str]) -> str:
    """Every image of the plan, in its order: a pulled one used as found or pulled (as the provider does), a built one
    built; a build whose base failed is not tried. `made` collects what was built under the run's private tag."""
    planned, env = plan(p), builder_env()
    failed: dict[str, str] = {}
    built = pulled = 0
    for n, image in enumerate(planned, 1):
        b = image.build
        what = f"images: {image.name} ({n}/{len(planned)})"
        if b is None:
            if docker("image", "inspect", image.name).returncode == 0:
                continue
            say(f"{what}: pulling")
            code, tail = streamed(["docker", "pull", image.name], what)
            pulled += 1
            if code:
                failed[image.key] = f"{image.name}: `docker pull` failed ({' '.join(tail[-2:])[:300]})"
            continue
        missing = [k for k in b.after if k in failed]
        if missing:
            failed[image.key] = f"{image.name}: not built, as {', '.join(missing)} failed"
            continue
        say(f"{what}: building from {b.dockerfile}")
        code, tail = streamed(build_args(p, checkout, image, b, revision), what, env)
        built += 1
        if private(p, image):
            made.append(image.name)
        if code:
            said = [line.strip() for line in tail if line.strip()][-2:]
            failed[image.key] = f"{image.name}: the build of {checkout / b.dockerfile} failed: {' | '.join(said)[:500]}"
    if failed:
        raise AssertionError("; ".join(failed.values()))
    return f"{len(planned)} images: {built} built, {pulled} pulled, the rest present"


def read_secrets(stack: str) -> dict[str, str]:
    """The stack's secrets, decrypted by pulumi (`pulumi config --show-secrets`, which writes nothing)."""
    out = subprocess.run(
        ["pulumi", "config", "--show-secrets", "--json", "--non-interactive", "-s", stack],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise AssertionError(
            f"cannot read the stack's secrets ({out.stderr.strip()[:300]}): create the stack with "
            f"`.venv/bin/python -m scripts.cli new-stack {stack}` and source scripts/env.sh (its passphrase)"
        )
    prefix = f"{NAMESPACE}:"
    return {k.removeprefix(prefix): str(v.get("value", "")) for k, v in json.loads(out.stdout).items()}


class TemporaryModelPath:
    """The profile's egress proxy (and the demo's stand-in model, where the profile runs it) in temporary containers on
    temporary networks with the profile's own subnets and addresses, so the proxy reaches the same upstream and the
    host reaches the proxy where the steps do. Started on first use, removed when the command's ExitStack closes."""

    def __init__(self, p: Profile, stack: str, cleanup: ExitStack):
        self.p, self.stack, self.cleanup = p, stack, cleanup
        self.failure: str | None = None
        self.secrets: dict[str, str] | None = None

    def name(self, what: str) -> str:
        return contract.resource_name(self.p.profile, f"check-{what}")

    def token(self) -> str:
        """The workers' proxy credential: what a worker sends the proxy."""
        self.start()
        assert self.secrets is not None
        return self.secrets["worker_proxy_token"]

    def start(self) -> None:
        if self.secrets is not None:
            return
        if self.failure:
            raise AssertionError(f"the temporary egress proxy did not start: {self.failure}")
        try:
            self.secrets = self._start()
        except AssertionError as err:
            self.failure = str(err)
            raise AssertionError(f"the temporary egress proxy did not start: {err}") from None

    def _start(self) -> dict[str, str]:
        p = self.p
        secrets = read_secrets(self.stack)
        self.cleanup.callback(self.remove)  # before anything is made: one interrupted mid-way is removed too
        layout = Layout.of(p)
        kinds = {"internal": True, "egress": p.egress_internal}  # internal: no way out (the egress as the profile says)
        nets = {}
        for kind, internal in kinds.items():
            net = self.name(kind)
            made = docker(
                "network",
                "create",
                *(["--internal"] if internal else []),
                "--subnet",
                str(layout.networks[kind]),
                *(f"--label={k}={v}" for k, v in p.labels(f"check-{kind}-network").items()),
                net,
            )
            if made.returncode:
                raise AssertionError(
                    f"cannot make a temporary network on {layout.networks[kind]} ({made.stderr.strip()[:200]}); "
                    "see the subnets check"
                )
            nets[kind] = net
        for c in (c for c in layout.placements if c.role in ("model", "egress-proxy")):
            self._run(c, nets, secrets)
        url = si.preflight_model(p).proxy_url  # where the steps reach the profile's own proxy
        ready(f"{url}{HEALTH_PATH}", self.name("egress-proxy"))
        say(f"model: a temporary egress proxy answers at {url}")
        return secrets

    def remove(self) -> None:
        """Every container, then every network, of this profile's check (by name and label): also one whose `docker`
        command was interrupted after the engine had made it."""
        made = ["--filter", f"name={self.name('')}", "--filter", contract.profile_filter(self.p.profile)]
        containers = docker("ps", "-aq", *made).stdout.split()
        if containers:
            docker("rm", "--force", *containers)
        networks = docker("network", "ls", "-q", *made).stdout.split()
        if networks:
            docker("network", "rm", *networks)

    def _run(self, c: Placement, nets: dict[str, str], secrets: dict[str, str]) -> None:
        """One container of the placement's spec, its secrets in the docker client's environment (never on its
        command line), attached at the placement's addresses."""
        s = spec(self.p, c)
        name = self.name(c.role)
        env = dict(os.environ)
        flags = [f"--env={k}={v}" for k, v in sorted(s.env.items())]
        for var, ref in sorted(s.secret_env.items()):
            env[var] = secret_setting(var, ref, secrets[secret_key(ref)])
            flags.append(f"--env={var}")
        first, *more = c.addresses.items()
        run = docker(
            "run",
            "--detach",
            "--name",
            name,
            "--hostname",
            c.hostname,
            *(f"--label={k}={v}" for k, v in self.p.labels(f"check-{c.role}").items()),
            "--network",
            nets[first[0]],
            "--ip",
            first[1],
            *flags,
            s.image,
            env=env,
        )
        if run.returncode:
            raise AssertionError(f"cannot start the temporary {c.role} ({run.stderr.strip()[:300]})")
        for kind, ip in more:
            joined = docker("network", "connect", "--ip", ip, nets[kind], name)
            if joined.returncode:
                raise AssertionError(f"cannot attach the temporary {c.role} to {kind} ({joined.stderr.strip()[:200]})")


def ready(url: str, container: str) -> None:
    """The temporary proxy answers its health check, or the failure says what its log said."""
    deadline = time.monotonic() + PROXY_READY_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=3):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    log = docker("logs", "--tail", "5", container)
    raise AssertionError(
        f"the temporary egress proxy did not answer {url} within {PROXY_READY_S} s "
        f"(its log: {(log.stdout + log.stderr).strip()[-300:]!r})"
    )


def on_host(p: Profile, command: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """A command on the host of the profile's host units: this one, or (host_units=remote) over SSH with the
    profile's key, its pinned host key and no prompt."""
    if p.host_units == "local":
        return subprocess.run(command, input=stdin, capture_output=True, text=True)
    assert p.ssh_host is not None, "the profile refuses host_units=remote without ssh_host"
    with tempfile.TemporaryDirectory() as tmp:
        known = Path(tmp) / "known_hosts"
        host = p.ssh_host if p.ssh_port == 22 else f"[{p.ssh_host}]:{p.ssh_port}"
        known.write_text(f"{host} {p.ssh_host_key}\n")
        ssh = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known}"]
        ssh += ["-o", "ConnectTimeout=15", "-p", str(p.ssh_port)]
        ssh += ["-i", str(Path(p.ssh_key_path).expanduser())] if p.ssh_key_path else []
        return subprocess.run(
            [*ssh, f"{p.ssh_user}@{p.ssh_host}", shlex.join(command)], input=stdin, capture_output=True, text=True
        )


def check_units(p: Profile) -> str:
    """What `up` will find of pbench.slice and the reboot guard on their host (scripts/host/host_units.sh status,
    which changes nothing), judged by the preflight's rule as the install would leave them."""
    if p.host_units == "off":
        return "host units off in this profile"
    where = "this host" if p.host_units == "local" else f"{p.ssh_user}@{p.ssh_host}"
    probe = on_host(p, ["test", "-d", str(SYSTEMD)])
    if probe.returncode == SSH_FAILED and p.host_units == "remote":
        raise AssertionError(
            f"cannot reach {where} over SSH ({(probe.stderr.strip().splitlines() or ['no answer'])[-1][:200]}): "
            "check ssh_host, ssh_port, ssh_user, "
            "ssh_key_path and ssh_host_key"
        )
    if probe.returncode:
        raise AssertionError(
            f"host_units={p.host_units} needs systemd, which {where} does not run: "
            f"`.venv/bin/python -m scripts.cli new-stack {p.profile} --set host_units=off`"
        )
    out = on_host(p, ["sh", "-s", "status"], HOST_UNITS.read_text())
    if out.returncode:
        raise AssertionError(f"host_units.sh status on {where} failed: {out.stderr.strip()[:300]}")
    found = json.loads(out.stdout)
    absent = [
        u for u, key in (("pbench.slice", "slice"), ("pbench-reboot-guard.service", "guard")) if found[key] == "absent"
    ]
    what = f"`make up`'s install of {' and '.join(absent)}"
    if absent and p.host_units == "local":  # `up` installs them as root, or through passwordless sudo
        try:
            privilege.sudo(what)
        except privilege.NotRoot as err:
            raise AssertionError(str(err)) from None
    elif absent and on_host(p, ["sh", "-c", '[ "$(id -u)" = 0 ] || sudo -n true']).returncode:  # as the install asks
        raise AssertionError(
            missing(what, f"{p.ssh_user} on {p.ssh_host}", "sudo asks for a password, or this user may not use it")
        )
    after = {
        "guard": found["guard"] if found["guard"] != "absent" else "installed",
        "slice_memory_max": found["slice_memory_max"] if found["slice"] != "absent" else f"{p.slice_memory_percent}%",
    }
    detail = checks.check_units_receipt(after)
    return detail + (f" (up installs {' and '.join(absent)})" if absent else "")


def live_checks(p: Profile, stack: str, cleanup: ExitStack, built: list[str]) -> dict[str, Callable[[], str]]:
    """The checks in the order they run: the quick ones first, then images, blobs and the model."""
    checkout = p.checkout_path(ROOT)
    revision = checkout_contract.revision(checkout)
    a = si.preflight_host(p, Layout.of(p), checkout, revision)
    model = si.preflight_model(p)
    proxy = TemporaryModelPath(p, stack, cleanup)
    host = {n: partial(checks.HOST_CHECKS[n], a) for n in ("docker", "checkout", "limits", "state", "subnets", "ports")}
    return {
        **host,
        "host-units": partial(check_units, p),
        "images": partial(make_images, p, checkout, revision, built),
        **{n: partial(checks.HOST_CHECKS[n], a) for n in ("workers", "fresh-images", "blobs")},
        "model-list": lambda: checks.check_model_list(model, proxy.token()),
        "model": lambda: checks.check_model(model, proxy.token()),
    }


@contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does, through every cleanup."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@cli.command()
def command(stack: options.Stack) -> int:
    """Each check reported as it runs, every failure again at the end with what to do. Exits 0 when all pass, 1 when
    any fails, 2 for a stack it cannot check (no stack file, an invalid profile, a swarm profile)."""
    try:
        p = load_profile(stack)
    except (FileNotFoundError, ProfileError) as err:
        print(f"check: {err}", file=sys.stderr)
        return 2
    if p.engine == "swarm":
        print(f"check: {stack} runs on a swarm; its live checks run at `make up` (preflight)", file=sys.stderr)
        return 2
    start = time.monotonic()
    built: list[str] = []
    with terminated_as_interrupt(), ExitStack() as cleanup:
        cleanup.callback(lambda: built and docker("rmi", *built))  # an uncached profile's private tags
        try:
            checks.run_checks(live_checks(p, stack, cleanup, built), WHO, passes=True)
        except StepFailed as failed:
            print(f"\n{failed}\n\nnothing was started; fix the above and run the check again", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what it made goes all the same
            say("interrupted")
            return 130
        finally:
            say(f"removing what the check made ({time.monotonic() - start:.0f} s)")
    print(f"check: {stack}: every live check passed in {time.monotonic() - start:.0f} s; nothing was left running")
    return 0
