"""The fault matrix: a small demo-shaped team (the demo's services, 2 workers, a 3-minute budget) run once per cell of
fault x step, recovered with the documented commands only, and checked against a clean run of the same shape.

    .venv/bin/python -m scripts.lab.faults [--cells CELL ...] [--json OUT] [--list]

Each cell runs in its own copy of the project (scripts/lab/sandbox.py: its own state backend, profile name, subnet,
data root and private image tags), so the cells never touch the user's stacks or each other. Every run is launched
as `make up` launches it (scripts/host/launch.sh: the preview with the policy pack, then the update). A cell is
- **held** when the recovered run scores what the clean run scored, with the same manifest counts, an append-only
  index whose last row per task is terminal, verified copies, no duplicate container and no leftover step program,
  and `pulumi destroy` then leaves nothing of the profile behind;
- **refused** when the recovery stops with a clear message and nothing was lost (the run's data and copies intact,
  destroy still refusing while a result is not copied);
- **marked** when the fault cannot be survived and the run says so: the task holds the fault's marker (so it is
  scored incomplete, and counted failed), and all else holds as above;
- **LOST** otherwise, saying what.
It prints the matrix with each cell's time to recover and writes it as JSON (default `.test-artifacts/faults.json`).
The cheap cells also run in `make test` (tests/integration/test_faults.py).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from model import contract, steps
from model.project import ROOT
from model.records import read_index
from model.rundir import DATA_ROOT_FULL, RunDir
from scripts.cli.destroy import destroy_order
from scripts.lab import docker_disk, swarm_lab
from scripts.lab.sandbox import free_octet, isolated_env, kill_session, profile_config, project_copy
from scripts.setup import demo_images

TASK = "testorg__calculator.abc1234"
RUN_ID = "20261129t000000z"  # the demo profile's
UP_TIMEOUT_S = 900
PAGE = 4096  # a filled data root keeps less than this free
STACKS = "per-task"  # the cells' profile runs as a stack per task (model/parts.py), as a large profile does


@dataclass(frozen=True)
class Outcome:
    """What a finished run left: the facts a recovered run must share with the clean one."""

    score: float | None
    complete: bool
    completed: int | None
    failed: int | None
    preserved: dict[str, bool]
    index_terminal: bool  # every task's last index row is terminal (scored or incomplete with a reason)
    containers: int


@dataclass(frozen=True)
class Footprint:
    """What a profile has on the host, by identity: the faults of another profile must change none of it."""

    containers: dict[str, tuple[str, str, str, str]]  # name -> (id, status, started at, image id)
    networks: tuple[str, ...]  # ids
    tags: dict[str, str]  # the image tag each container was made from -> the image it names now

    def changes(self, later: Footprint) -> list[str]:
        return [
            f"{what} {k}: {mine.get(k)} -> {theirs.get(k)}"
            for what, mine, theirs in (
                ("container", self.containers, later.containers),
                ("image tag", self.tags, later.tags),
            )
            for k in sorted(mine.keys() | theirs.keys())
            if mine.get(k) != theirs.get(k)
        ] + ([f"networks: {self.networks} -> {later.networks}"] if self.networks != later.networks else [])


@dataclass
class Verdict:
    cell: str
    verdict: str  # held | refused | marked | LOST
    detail: str = ""
    recover_s: float = 0.0
    total_s: float = 0.0


class Sandbox:
    """One demo-shaped stack in its own copy of the project; with `lab`, on that Docker engine of the harness's own
    (everything of the run, and every command here, then runs in the engine's network namespace)."""

    def __init__(self, tmp: Path, tag: str, lab: swarm_lab.Lab | None = None, **settings: Any):
        # the tag names the cell's folder; the profile stays short (names of task containers are capped at 63)
        self.tmp, self.profile, self.octet = tmp, f"fault-{uuid.uuid4().hex[:6]}", free_octet()
        self.standin, self.mattermost = demo_images.standin_images(self.profile)
        self.data, self.traj = tmp / "data", tmp / "traj"
        self.proj = project_copy(
            tmp,
            self.profile,
            profile_config(
                "demo.profile.yaml",
                profile=self.profile,
                subnet_octet=self.octet,
                llm_upstream=f"http://10.{self.octet}.255.3:8080",
                data_root=str(self.data),
                traj_root=str(self.traj),
                uncached=True,
                mattermost_image=self.mattermost,
                **settings,
            ),
            standin_image=self.standin,
        )
        self.host_env = isolated_env(tmp, "faults", **{contract.MODEL_CREDENTIAL_ENV: "standin-" + uuid.uuid4().hex})
        self.lab = lab
        self.enter = lab.manager.enter if lab else []
        self.env = dict(self.host_env, DOCKER_HOST=f"unix://{lab.manager.socket}") if lab else self.host_env
        self.rd = RunDir(self.data / self.profile / RUN_ID)
        self.logs: list[Path] = []

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run([*self.enter, *args], cwd=self.proj, env=self.env, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:3])}: {out.stdout[-1500:]}\n{out.stderr[-1500:]}")
        return out

    def docker(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """`docker` against the sandbox's engine."""
        return subprocess.run(["docker", *args], env=self.env, capture_output=True, text=True, check=check)

    def create(self) -> None:
        """The demo's images (built on this machine's engine, then loaded into the sandbox's own, if any), the policy
        numbers and the stack."""
        subprocess.run(
            [sys.executable, "-m", "scripts.setup.demo_images", "--standin-tag", self.profile],
            cwd=self.proj,
            env=self.host_env,
            capture_output=True,
            check=True,
        )
        if self.lab:
            swarm_lab.load(self.lab, swarm_lab.demo_images(self.profile))
        shutil.copy(self.proj / "policies" / "demo.json", self.proj / "stacks" / f"{self.profile}.policy.json")
        self.run(
            sys.executable,
            "-m",
            "scripts.cli",
            "new-stack",
            self.profile,
            "--from",
            f"stacks/{self.profile}.profile.yaml",
            "--env-file",
            "none",
            "--set",
            "host_units=off",
        )

    def stacks(self) -> list[str]:
        """The profile's stacks that exist (model/parts.py), found by name as `make destroy` finds them."""
        listed = self.run("pulumi", "stack", "ls", "--json", check=False)
        return destroy_order(self.profile, {s["name"] for s in json.loads(listed.stdout or "[]")})

    def up(self, *extra: str) -> subprocess.Popen[str]:
        """The documented launch (scripts/host/launch.sh: the preview with the pack, then `pulumi up`) in a session of
        its own (so a fault can take the whole session), logged to a file."""
        log = self.tmp / f"up{len(self.logs) + 1}.log"
        self.logs.append(log)
        return subprocess.Popen(
            [
                *self.enter,
                "bash",
                "scripts/host/launch.sh",
                "up",
                self.profile,
                "--yes",
                "--foreground",
                "--non-interactive",
                *extra,
            ],
            cwd=self.proj,
            env=self.env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
        )

    def preview(self, *extra: str) -> subprocess.CompletedProcess[str]:
        """A plain `pulumi preview` with the policy pack (the provider plans every change), not raising on failure."""
        pack = ["--policy-pack", "policies"]  # it reads stacks/<profile>.policy.json by itself
        return self.run("pulumi", "preview", "--non-interactive", "-s", self.profile, *pack, *extra, check=False)

    def last_log(self, lines: int = 15) -> str:
        return "\n".join(self.logs[-1].read_text().splitlines()[-lines:]) if self.logs else ""

    def container(self, role: str) -> str:
        return contract.resource_name(self.profile, role)

    def wait(self, what: Callable[[], bool], proc: subprocess.Popen[str] | None, timeout: float = UP_TIMEOUT_S) -> None:
        end = time.time() + timeout
        while not what():
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the up ended ({proc.returncode}) before the fault's moment:\n{self.last_log()}")
            if time.time() > end:
                raise RuntimeError(f"timed out waiting for the fault's moment:\n{self.last_log()}")
            time.sleep(0.3)

    def reached(self, moment: str) -> Callable[[], bool]:
        """True once the fault's moment has come: the launch's preview declaring resources, or a step at work."""
        if moment == PREVIEW:
            log = self.logs[-1]
            return lambda: "Previewing update" in (text := log.read_text()) and " create" in text
        return self.running(MOMENTS[moment])

    def running(self, step: steps.StepDef) -> Callable[[], bool]:
        """True once the step's program holds its lock (it has begun its work)."""
        task = (
            None
            if step
            in (steps.PREFLIGHT_HOST, steps.MANIFEST_START, steps.MANIFEST_FINISH, steps.REPORT, steps.PRESERVE_RUN)
            else TASK
        )
        lock = self.rd.lock(step.name, task)
        return lambda: lock.exists() and "pid" in lock.read_text()

    def outcome(self) -> Outcome:
        score = (
            json.loads((self.rd.task(TASK) / "score.json").read_text())
            if (self.rd.task(TASK) / "score.json").exists()
            else {}
        )
        manifest = json.loads(self.rd.manifest.read_text()) if self.rd.manifest.exists() else {}
        rows = read_index(self.rd.index)
        return Outcome(
            score=score.get("score"),
            complete=bool(score.get("complete")),
            completed=manifest.get("completed"),
            failed=manifest.get("failed"),
            preserved=manifest.get("preserved", {}),
            index_terminal=bool(rows) and all(r.status in ("scored", "incomplete") for r in rows.values()),
            containers=len(self.labelled()["containers"]),
        )

    def labelled(self) -> dict[str, list[str]]:
        f = f"label={contract.PROFILE_LABEL}={self.profile}"
        kinds = {"containers": ["ps", "-aq"], "networks": ["network", "ls", "-q"], "volumes": ["volume", "ls", "-q"]}
        return {k: self.docker(*cmd, "--filter", f).stdout.split() for k, cmd in kinds.items()}

    def inspect(self, kind: str, names: list[str]) -> list[dict[str, Any]]:
        """`docker <kind> inspect` of these objects ([] for none; one missing leaves the rest)."""
        return list(json.loads((self.docker(kind, "inspect", *names).stdout if names else "") or "[]"))

    def footprint(self) -> Footprint:
        ids = self.labelled()
        info = self.inspect("container", ids["containers"])
        tags = sorted({c["Config"]["Image"] for c in info})
        named = {t: i["Id"] for i in self.inspect("image", tags) for t in i.get("RepoTags", []) if t in tags}
        return Footprint(
            containers={c["Name"]: (c["Id"], c["State"]["Status"], c["State"]["StartedAt"], c["Image"]) for c in info},
            networks=tuple(sorted(ids["networks"])),
            tags={t: named.get(t, "") for t in tags},
        )

    def leftovers(self) -> list[str]:
        """Step programs of this project still running after its `up` ended."""
        out = subprocess.run(["pgrep", "-af", f"{self.proj}"], capture_output=True, text=True).stdout.splitlines()
        return [line for line in out if "-m scripts." in line]

    def destroy(self) -> str:
        """The documented destroy (scripts/cli/destroy.py: every stack of the profile); what it left behind ('' when
        nothing)."""
        done = self.run(
            sys.executable, "-m", "scripts.cli", "destroy", self.profile, "--yes", "--non-interactive", check=False
        )
        if done.returncode != 0:
            return f"destroy failed: {(done.stdout + done.stderr)[-600:]}"
        left = {k: v for k, v in self.labelled().items() if v}
        data_left = (self.data / self.profile).exists()
        return "; ".join([*(f"{len(v)} {k} left" for k, v in left.items()), *(["data left"] if data_left else [])])

    def cleanup(self) -> None:
        subprocess.run(["pkill", "-KILL", "-f", str(self.proj)], capture_output=True)
        cancel(self)
        self.destroy()
        for stack in self.stacks():
            self.run("pulumi", "stack", "rm", "--yes", "--force", "--non-interactive", "-s", stack, check=False)
        left = self.labelled()
        for kind, cmd in (("containers", ["rm", "-f"]), ("networks", ["network", "rm"]), ("volumes", ["volume", "rm"])):
            if left[kind]:
                self.docker(*cmd, *left[kind])
        images = self.docker("images", "-q", "--filter", f"label={contract.PROFILE_LABEL}={self.profile}").stdout
        self.docker("rmi", "-f", *images.split(), self.mattermost, self.standin)
        if self.lab:  # the engine goes whole (its data root with it); the stand-ins were built on this machine's
            swarm_lab.down(self.lab)
            subprocess.run(["docker", "rmi", "-f", self.mattermost, self.standin], capture_output=True)


def finish(s: Sandbox, proc: subprocess.Popen[str]) -> int:
    try:
        return proc.wait(timeout=UP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill_session(proc)
        return -1


# --- faults: each injects at its moment and recovers with the documented command --------------------------------
@dataclass(frozen=True)
class Fault:
    name: str
    inject: Callable[[Sandbox, subprocess.Popen[str]], None]
    recover: Callable[[Sandbox], list[str]]  # the extra arguments of the recovering `pulumi up` (after its prelude)
    prelude: Callable[[Sandbox], None] = lambda s: None  # what the documented recovery does before `up`
    marks: str | None = None  # the marker a run carries where this fault cannot be survived
    own_engine: bool = False  # the run needs a Docker engine of the harness's own (the fault restarts it)


def sigkill(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    kill_session(proc)


def sigkill_pulumi(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """SIGKILL of the `pulumi up` process alone (the kernel's OOM killer, a `kill -9` of the wrong pid): its plugins
    and the step program it started go on without it, orphaned. One stack's launch execs the update, so the process
    started is pulumi itself by then; a per-task profile's launcher runs each part's update as its child."""
    comm = Path(f"/proc/{proc.pid}/comm").read_text().strip()
    children = subprocess.run(["pgrep", "-P", str(proc.pid), "-x", "pulumi"], capture_output=True, text=True)
    pids = [proc.pid] if comm == "pulumi" else [int(pid) for pid in children.stdout.split()]
    if not pids:
        raise RuntimeError(f"the launch's process is {comm!r}, and runs no pulumi update")
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    if comm == "pulumi":
        proc.wait()


def sigint(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """Ctrl-C: pulumi finishes what is in flight and stops; a second Ctrl-C after 60 s, as an impatient user would."""
    os.kill(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGINT)
        if finish(s, proc) == -1:
            raise RuntimeError("pulumi did not stop after two Ctrl-C") from None


def reboot(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """The host going down: the session dies and the reboot guard stops the profile's containers (as
    scripts/pbench_reboot_guard.sh does for every `omcgitea-*` project; here only this cell's own)."""
    kill_session(proc)
    project = f"label={contract.COMPOSE_PROJECT_LABEL}={contract.compose_project(s.profile)}"
    ids = s.docker("ps", "-q", "--filter", project).stdout.split()
    if ids:
        s.docker("stop", *ids, check=True)


def docker_kill(role: str) -> Callable[[Sandbox, subprocess.Popen[str]], None]:
    def inject(s: Sandbox, proc: subprocess.Popen[str]) -> None:
        s.docker("kill", s.container(role), check=True)

    return inject


HANG_STUCK_MS = 15_000  # the routers' silence limit in a run whose model hangs


def model_fault(kind: str) -> Callable[[Sandbox, subprocess.Popen[str]], None]:
    """The stand-in model answers each agent's next request with `kind` (hang, error: 503, cut: a cut stream)."""

    def inject(s: Sandbox, proc: subprocess.Popen[str]) -> None:
        faults = [f"{kind}@{n}" for n in range(1, 3)]
        url = "http://127.0.0.1:8080/faults"
        auth = f"Authorization: Bearer {s.host_env[contract.MODEL_CREDENTIAL_ENV]}"  # the model's own credential
        body = json.dumps({"faults": faults})
        got = s.docker("exec", s.container("model"), "curl", "-s", "-X", "POST", "-H", auth, "-d", body, url)
        try:  # curl exits 0 on a refusal: the model's answer says whether the faults are armed
            armed = set(json.loads(got.stdout).get("pending", [])) >= set(faults)
        except ValueError:
            armed = False
        if not armed:
            raise RuntimeError(f"the stand-in model did not arm {faults}: {got.stdout[-300:]} {got.stderr[-300:]}")

    return inject


def fill_disk(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """The data root's filesystem full (a small tmpfs the harness mounted): one file takes what is left. The run keeps
    writing meanwhile (the workers seal their archives during the shutdown), so what was free a moment ago may no
    longer be: then it takes half as much and tries again, until less than a page is left to take."""

    def free() -> int:
        st = os.statvfs(s.data)
        return st.f_bavail * st.f_frsize

    with open(s.data / "filler", "wb") as fh:
        size, want = 0, free()
        while want >= PAGE:
            try:
                os.posix_fallocate(fh.fileno(), size, want)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                want //= 2
                continue
            size += want
            want = free()


def free_disk(s: Sandbox) -> None:
    """What the operator does first: make room."""
    (s.data / "filler").unlink(missing_ok=True)
    cancel(s)


def kill_evaluator(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """The evaluator dies mid-run (its processes killed; the step program sees it exit non-zero)."""
    lock = s.rd.lock(steps.EVALUATE.name, TASK).read_text()
    pid = lock.split()[1]
    subprocess.run(["pkill", "-KILL", "-P", pid], capture_output=True)


OOM_HOG = "head -c 4G /dev/zero | tail"  # tail keeps the one endless line: memory grows until the ceiling


def oom(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """A worker's agent killed by the worker's memory ceiling. The kernel kills the process it rates worst in the
    container, so the harness (root, on the host) makes worker 1's Copilot CLI that one (`oom_score_adj` 1000), then
    fills the worker's memory from inside it (a process of the worker's user, charged to the worker's cgroup) until
    the ceiling is hit. Refused as a harness error unless the CLI was indeed killed by it."""
    worker = contract.member_name(s.profile, TASK, "worker", 1)
    top = s.docker("top", worker, "-eo", "pid,args", check=True)
    cli = [line.split(None, 1)[0] for line in top.stdout.splitlines()[1:] if "--acp" in line and "copilot" in line]
    if not cli:
        raise RuntimeError(f"no Copilot CLI in {worker}:\n{top.stdout}")
    for pid in cli:
        Path(f"/proc/{pid}/oom_score_adj").write_text("1000")
    hog = ["docker", "exec", "-u", contract.WORKER_USER, worker, "sh", "-c", OOM_HOG]
    subprocess.run(hog, env=s.env, capture_output=True, timeout=120)
    if any(Path(f"/proc/{pid}").exists() for pid in cli):
        raise RuntimeError(f"the memory ceiling of {worker} did not kill its Copilot CLI")


def restart_engine(s: Sandbox, proc: subprocess.Popen[str]) -> None:
    """The Docker daemon restarted under the run (an upgrade, a crash and its service manager): it stops every
    container as it goes down, as it does without live-restore, and starts none that has no restart policy. Only
    ever the sandbox's own engine (scripts/lab/swarm_lab.py), never this machine's."""
    if s.lab is None:
        raise RuntimeError("a daemon restart needs the sandbox's own engine")
    swarm_lab.restart(s.lab, s.lab.manager)


def cancel(s: Sandbox) -> None:
    """`pulumi cancel` of every stack of the profile (a killed update leaves its stack locked)."""
    for stack in s.stacks():
        s.run("pulumi", "cancel", "--yes", "--non-interactive", "-s", stack, check=False)


FAULTS = {
    "sigkill": Fault("sigkill", sigkill, lambda s: [], cancel),
    "sigkill-pulumi": Fault("sigkill-pulumi", sigkill_pulumi, lambda s: [], cancel),
    "sigint": Fault("sigint", sigint, lambda s: []),
    "reboot": Fault("reboot", reboot, lambda s: ["--refresh"], cancel),
    "kill-mysql": Fault("kill-mysql", docker_kill("mysql"), lambda s: ["--refresh"]),
    "kill-gitea": Fault("kill-gitea", docker_kill("gitea"), lambda s: ["--refresh"]),
    "kill-proxy": Fault("kill-proxy", docker_kill("egress-proxy"), lambda s: ["--refresh"]),
    "kill-token": Fault("kill-token", docker_kill("secret-service"), lambda s: ["--refresh"]),
    "model-error": Fault("model-error", model_fault("error"), lambda s: []),
    "model-cut": Fault("model-cut", model_fault("cut"), lambda s: []),
    "model-hang": Fault("model-hang", model_fault("hang"), lambda s: []),
    "disk-full": Fault("disk-full", fill_disk, lambda s: [], free_disk, marks=DATA_ROOT_FULL),
    "oom": Fault("oom", oom, lambda s: []),
    "eval-dies": Fault("eval-dies", kill_evaluator, lambda s: ["--config", "agensh:eval_attempt=2"], cancel),
    "docker-restart": Fault("docker-restart", restart_engine, lambda s: ["--refresh"], own_engine=True),
}
# where a fault hits: the launch's preview (nothing exists yet), or a step that has begun (its program holds its lock)
PREVIEW = "preview"
MOMENTS = {
    s.name: s
    for s in (
        steps.SEED,
        steps.WAKE,
        steps.KICKOFF,
        steps.EXPORT,
        steps.SHUTDOWN,
        steps.EVALUATE,
        steps.SCORE,
        steps.PRESERVE_TASK,
        steps.MANIFEST_FINISH,
        steps.REPORT,
    )
}
CELLS = [
    f"sigkill@{PREVIEW}",
    *(f"sigkill@{m}" for m in MOMENTS),
    "sigkill-pulumi@seed",
    "sigkill-pulumi@export",
    "sigkill-pulumi@evaluate",
    "sigint@export",
    "sigint@evaluate",
    "reboot@export",
    "kill-mysql@export",
    "kill-gitea@export",
    "kill-proxy@kickoff",
    "kill-token@kickoff",
    "model-error@kickoff",
    "model-cut@kickoff",
    "model-hang@kickoff",
    "oom@export",
    "disk-full@export",
    "disk-full@shutdown",
    "disk-full@preserve-task",
    "eval-dies@evaluate",
    "docker-restart@seed",
    "docker-restart@export",
    "docker-restart@shutdown",
    "docker-restart@evaluate",
]
SMALL_DISK_MB = 400  # the data root's tmpfs in the disk-full cells (a run uses ~60 MB of it)
MAX_JOBS = 4  # each cell's run holds ~12 containers and two Copilot CLIs
CHEAP = ["sigkill@preview", "sigkill@seed", "sigkill@shutdown", "sigkill@evaluate", "model-hang@kickoff"]


@contextmanager
def sandbox(
    tag: str, keep: Path | None = None, small_disk: bool = False, own_engine: bool = False, **settings: Any
) -> Iterator[Sandbox]:
    """A sandbox for one run, removed after it whatever happens; `own_engine`: on a Docker engine of its own."""
    tmp = Path(tempfile.mkdtemp(prefix=f"agensh-faults-{tag}-"))
    lab = swarm_lab.up(1, swarm=False) if own_engine else None
    try:
        s = Sandbox(tmp, tag.replace("@", "-"), lab, **settings)
    except BaseException:
        if lab:
            swarm_lab.down(lab)
        raise
    mounted = False
    try:
        if small_disk:  # as root: a filesystem of its own for the data root, so filling it touches nothing else
            s.data.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK_MB}m", "tmpfs", str(s.data)], check=True)
            mounted = True
        s.create()
        yield s
    finally:
        s.cleanup()
        if mounted:
            subprocess.run(["umount", "-l", str(s.data)], capture_output=True)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for log in s.logs:
                shutil.copy(log, keep / f"{s.profile}-{log.name}")
        shutil.rmtree(tmp, ignore_errors=True)


def clean_run(keep: Path | None = None, stacks: str = STACKS) -> tuple[Outcome, float]:
    t0 = time.time()
    with sandbox("clean", keep, stacks=stacks) as s:
        rc = finish(s, s.up())
        if rc != 0:
            raise RuntimeError(f"the clean run failed:\n{s.last_log(30)}")
        out = s.outcome()
        left = s.destroy()
        if left:
            raise RuntimeError(f"the clean run's destroy: {left}")
        return out, time.time() - t0


def compare(clean: Outcome, got: Outcome) -> list[str]:
    return [
        f"{k}: {getattr(got, k)!r} (clean: {getattr(clean, k)!r})"
        for k in asdict(clean)
        if getattr(got, k) != getattr(clean, k)
    ]


MARKED_DIFFERS = {"score", "complete", "completed", "failed"}  # what a marked task changes: it counts incomplete


def judge(differs: list[str], problems: list[str], marked: list[str]) -> tuple[str, str]:
    """The verdict and its detail, from what differs from the clean run, what else went wrong, and the reasons of the
    markers of the faults that cannot be survived found on the task."""
    if marked and not problems and {d.split(":")[0] for d in differs} <= MARKED_DIFFERS:
        return "marked", f"scored incomplete: {'; '.join(marked)}"
    return ("LOST" if differs + problems else "held"), "; ".join(differs + problems)


def run_cell(
    cell: str, clean: Outcome, keep: Path | None = None, beside: Sandbox | None = None, stacks: str = STACKS
) -> Verdict:
    """One cell of the matrix: a run with one fault."""
    return run_sequence([cell], clean, keep, beside, stacks)


def run_sequence(
    cells: list[str],
    clean: Outcome,
    keep: Path | None = None,
    beside: Sandbox | None = None,
    stacks: str = STACKS,
) -> Verdict:
    """Faults in one run, in order (each at its moment, each recovered before the next), judged against the clean
    run: one for a cell of the matrix, several where `make test` affords only a few runs. `beside`: another profile
    up on the host meanwhile, which must see no change at all. `stacks`: the profile's setting (model/parts.py)."""
    name = "+".join(cells)
    t0 = time.time()
    before = beside.footprint() if beside else None
    recovered_at: float | None = None  # when the first documented recovery began: it runs until the run's end
    plan = [(FAULTS[c.split("@")[0]], c.split("@")[1]) for c in cells]
    with sandbox(
        cells[0] if len(cells) == 1 else "seq",
        keep,
        small_disk=any(f.name == "disk-full" for f, _ in plan),
        own_engine=any(f.own_engine for f, _ in plan),
        stacks=stacks,
        # a hung model request is the routers' silence watchdog's to cancel: soon, not after the default 20 minutes
        **({"mini_router_stuck_ms": HANG_STUCK_MS} if any(f.name == "model-hang" for f, _ in plan) else {}),
    ) as s:
        proc = s.up()
        pending = FAULTS["sigkill"]  # the recovery owed when the up ends failed: the last fault that did not kill it
        for fault, moment in plan:
            s.wait(s.reached(moment), proc)
            fault.inject(s, proc)
            if proc.poll() is not None or fault.name in ("sigkill", "reboot"):
                if proc.poll() is None:
                    kill_session(proc)
                recovered_at = recovered_at or time.time()
                fault.prelude(s)
                proc = s.up(*fault.recover(s))
            else:
                pending = fault
        rc = finish(s, proc)
        if rc != 0:  # the up ended failed after a fault it went on through: that fault's documented recovery
            recovered_at = recovered_at or time.time()
            pending.prelude(s)
            rc = finish(s, s.up(*pending.recover(s)))
        recover_s = time.time() - recovered_at if recovered_at else 0.0
        if rc != 0:
            return Verdict(
                name, "refused" if s.rd.path.exists() else "LOST", s.last_log(6), recover_s, time.time() - t0
            )
        differs = compare(clean, s.outcome())
        marks = {f.marks for f, _ in plan}
        said = {
            m: next(p for p in (s.rd.marker(TASK, m), s.rd.marker(None, m)) if p.exists()).read_text().strip()
            for m in s.rd.markers(TASK)
        }  # the task's own marker, else the run's
        why = [text or m for m, text in said.items() if m in marks]
        problems = [f"left running: {p}" for p in s.leftovers()]
        left = s.destroy()
        problems += [left] if left else []
        if beside and before:
            problems += [f"beside: {c}" for c in before.changes(beside.footprint())]
        if not (s.traj / f"{s.profile}.{RUN_ID}" / TASK / "score.json").exists():
            problems.append("the run's copy has no score.json")
        verdict, detail = judge(differs, problems, why)
        if verdict == "LOST":  # what the run's markers say of why (a fault's own, such as EXPORT_FAILED, among them)
            detail += "".join(f"; marker {m}: {text[:300] or '(empty)'}" for m, text in said.items())
        return Verdict(name, verdict, detail, recover_s, time.time() - t0)


def print_matrix(verdicts: list[Verdict], took: float) -> None:
    width = max(len(v.cell) for v in verdicts)
    for v in verdicts:
        first = v.detail.splitlines()[0][:110] if v.detail else ""
        print(f"{v.cell:<{width}}  {v.verdict:<8} recover {v.recover_s:6.0f} s  cell {v.total_s:5.0f} s  {first}")
    counts = {k: sum(v.verdict == k for v in verdicts) for k in ("held", "refused", "marked", "LOST")}
    print(f"{len(verdicts)} cells: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f"; {took / 60:.1f} min")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.lab.faults", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="*", default=CELLS, help="cells to run (fault@step; default: all)")
    parser.add_argument("--cheap", action="store_true", help="only the cells `make test` runs")
    parser.add_argument("--list", action="store_true", help="list the cells and exit")
    parser.add_argument("--json", type=Path, default=ROOT / ".test-artifacts" / "faults.json")
    parser.add_argument("--clean-from", type=Path, help="the clean outcome of an earlier result file (no clean run)")
    parser.add_argument(
        "--beside", action="store_true", help="with another profile up throughout, which must see no change"
    )
    parser.add_argument("--jobs", type=int, default=1, help="cells run at once, each in its own sandbox (default 1)")
    parser.add_argument(
        "--stacks", choices=["one", "per-task"], default=STACKS, help=f"the profile's stacks (default {STACKS})"
    )
    args = parser.parse_args(argv)
    cells = CHEAP if args.cheap else args.cells
    if args.list:
        print("\n".join(cells))
        return 0
    unknown = [
        c for c in cells if "@" not in c or c.split("@")[0] not in FAULTS or c.split("@")[1] not in (PREVIEW, *MOMENTS)
    ]
    if unknown:
        parser.error(f"unknown cells: {', '.join(unknown)} (see --list)")
    if not 1 <= args.jobs <= MAX_JOBS:
        parser.error(f"--jobs: 1 to {MAX_JOBS}, not {args.jobs}")
    short = docker_disk.room_for_a_run()
    if short:
        parser.exit(2, f"faults: {short}\n")
    with docker_disk.build_cache_kept():
        if not args.beside:
            return run_matrix(cells, args.json, args.clean_from, jobs=args.jobs, stacks=args.stacks)
        with sandbox("beside", run_steps=False) as other:  # the demo's services and team, no steps
            if finish(other, other.up()) != 0:
                parser.exit(1, f"faults: the profile beside did not come up:\n{other.last_log(20)}\n")
            return run_matrix(cells, args.json, args.clean_from, other, args.jobs, args.stacks)


def run_matrix(
    cells: list[str],
    out: Path,
    clean_from: Path | None,
    beside: Sandbox | None = None,
    jobs: int = 1,
    stacks: str = STACKS,
) -> int:
    """The clean run (or the clean outcome of `clean_from`), then every cell, `jobs` at once; prints the matrix and
    writes `out`."""
    t0 = time.time()
    logs = out.parent / "faults-logs"
    if clean_from:
        clean, clean_s = Outcome(**json.loads(clean_from.read_text())["clean"]), 0.0
    else:
        clean, clean_s = clean_run(logs, stacks)
    print(f"clean run: score {clean.score}, {clean.containers} containers, {clean_s:.0f} s", flush=True)

    def one(cell: str) -> Verdict:
        try:
            v = run_cell(cell, clean, logs, beside, stacks)
        except RuntimeError as err:  # the harness could not place its fault: say so, never count it as held
            v = Verdict(cell, "LOST", f"harness: {err}")
        print(
            f"{v.cell}: {v.verdict} ({v.total_s:.0f} s) {v.detail.splitlines()[0][:120] if v.detail else ''}",
            flush=True,
        )
        return v

    with ThreadPoolExecutor(jobs) as pool:  # each cell waits on its own processes: threads are enough
        verdicts = list(pool.map(one, cells))
    took = time.time() - t0
    print_matrix(verdicts, took)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "took_s": round(took),
                "beside": beside.profile if beside else None,
                "stacks": stacks,
                "clean": asdict(clean),
                "cells": [asdict(v) for v in verdicts],
            },
            indent=2,
        )
    )
    return 0 if all(v.verdict != "LOST" for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
