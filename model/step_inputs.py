"""What each step program is given: one pydantic model per step, built by the components and parsed by the step
(`AGENSH_INPUT`, JSON). Secrets are never here: a step gets them in variables of their own.

The inputs are part of the step's identity: Pulumi replaces (re-runs) a step when they change, and the step
replays its receipt instead of working again when a receipt with the same inputs digest is already `ok`
(see `components/step_resources.py` for which state decides what).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from model import contract
from model.checkout import DEFAULT_CONVENTION, ConventionName
from model.contract import READY_TIMEOUT_S
from model.image_plan import plan
from model.profile import Profile
from model.rundir import CopyDir, ProfileDir, RunDir
from model.services import operator_url
from model.topology import Layout


class Inputs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run_dir: str


class TaskInputs(Inputs):
    task_id: str


class ProfileDataInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile_dir: str
    profile: str
    traj_root: str  # where each run's verified copy must be before destroy deletes the data


def profile_data(p: Profile) -> ProfileDataInputs:
    """The profile's data step's inputs, and the guard the run's preservation checks before a destroy."""
    return ProfileDataInputs(profile_dir=str(ProfileDir.of(p).path), profile=p.profile, traj_root=p.traj_root)


class PreflightHostInputs(Inputs):
    profile: str
    host_units: str
    host_units_receipt: str = ""  # the host units' install receipt (known after they are installed)
    images: list[str]
    worker_images: list[str]
    copilot_version: str  # the profile's pin: each worker image's `copilot --version` must say it
    revisioned_images: list[str]
    checkout: str  # the Agensh checkout, read against the checkout contract (model/checkout.py)
    convention: ConventionName = DEFAULT_CONVENTION  # the profile's checkout_convention: the check, the self-check
    baseline: bool  # a baseline's checkout needs fewer images
    checkout_revision: str | None
    subnets: list[str]
    networks: list[str]
    ports: list[int]
    limits: dict[str, int]  # the team limits as rendered (contract.team_limit_problems' arguments)
    tasks: list[str]  # each needs its test blobs before inference starts
    blob_dir: str | None  # where `programbench eval` reads them; None: ProgramBench's store, synced at preflight


def preflight_host(p: Profile, layout: Layout, checkout: Path, revision: str | None) -> PreflightHostInputs:
    """The host phase's inputs from the profile: what `up`'s preflight checks, and `scripts.cli check` before it."""
    return PreflightHostInputs(
        run_dir=str(RunDir.of(p).path),
        profile=p.profile,
        host_units=p.host_units,
        images=sorted(i.name for i in plan(p)),
        worker_images=[p.worker_image(t) for t in p.tasks],
        copilot_version=p.copilot_version,
        revisioned_images=[p.image(r) for r in ("mini-router", "board") if p.kind == "team"],
        checkout=str(checkout),
        convention=p.checkout_convention,
        baseline=p.kind == "baseline",
        checkout_revision=revision,
        subnets=[str(n) for n in layout.networks.values()],
        networks=sorted(layout.network_names.values()),
        ports=sorted(p.ports.values()),
        limits=p.limits,
        tasks=p.tasks,
        blob_dir=p.eval_blob_dir,
    )


class PreflightModelInputs(Inputs):
    model: str
    effort: str
    proxy_url: str


def preflight_model(p: Profile) -> PreflightModelInputs:
    """The model phase's inputs: the profile's model, asked through its egress proxy where the steps reach it."""
    return PreflightModelInputs(
        run_dir=str(RunDir.of(p).path),
        model=p.model,
        effort=p.reasoning_effort,
        proxy_url=operator_url(p, "egress-proxy"),
    )


class OneShot(BaseModel):
    """How a one-shot platform container (the bootstrap) ended, as the engine read it back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    urn: str  # its resource, for `pulumi up --replace` once the cause of a failure is fixed
    exit_code: int | None  # None: not read back


class PreflightPlatformInputs(Inputs):
    one_shots: dict[str, OneShot] = {}  # container name -> how it ended (known once it ran)


class ManifestInputs(Inputs):
    project_dir: str
    checkout: str
    profile: dict[str, Any]
    profile_digest: str
    images: dict[str, str] = Field(default_factory=dict)  # image name -> id (known after the images exist)
    attempt: int = 1
    copy_dir: str
    start_at: str | None = None  # the scheduled launch time (the profile's start_at)


def manifest(p: Profile, project_dir: Path, checkout: Path) -> ManifestInputs:
    """The manifest's inputs, the same at the run's start and finish (the image ids come once they exist)."""
    return ManifestInputs(
        run_dir=str(RunDir.of(p).path),
        project_dir=str(project_dir),
        checkout=str(checkout),
        profile=p.model_dump(mode="json"),
        profile_digest=p.digest(),
        attempt=p.eval_attempt,
        copy_dir=copy_dir(p),
        start_at=p.start_at,
    )


def copy_dir(p: Profile) -> str:
    """Where the run's verified copy goes."""
    return str(CopyDir.of(p.traj_root, p.profile, p.run_id).path)


def archive_dirs(p: Profile, layout: Layout, task: str) -> dict[str, str]:
    """Each agent of a task, and the directory its archive is sealed into in this run."""
    pd = ProfileDir.of(p)
    return {
        agent: str(pd.archive_dir(agent, p.run_id))
        for agent in (contract.agent_id(task, c.index or 0) for c in layout.members(task, "worker"))
    }


class GiteaInputs(TaskInputs):
    gitea_url: str
    gitea_user: str
    repo: str
    gitea_repositories: str


class ExportInputs(GiteaInputs):
    """The export's, which its deadline keeper shares (scripts/lib/freeze.py)."""

    profile: str
    grace_s: int  # the profile's export_grace_s: past the deadline by this, with no export running, the keeper stops
    # the task's workers (giving each this long to seal its archive, as the shutdown does)
    keeper_slice: str = ""  # the systemd slice of the keeper's own service: the profile's, when it has host units


class CleanroomCopy(BaseModel):
    """The container a seed copies the task's /workspace out of: created and removed by the step, named and labelled
    so that one a killed seed left is found: the next seed of the task removes it first, destroy removes the
    profile's, and preflight's leftover check sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str
    container: str
    labels: dict[str, str]


class SeedInputs(GiteaInputs):
    cleanroom: CleanroomCopy
    archive_dirs: list[str]


class WakeInputs(TaskInputs):
    workers: dict[str, float]  # container name -> seconds after the ramp's start, in wake order
    # container name -> where its router answers once up (model/services.ready_url); a worker starts only after that
    ready: dict[str, str] = {}
    ready_timeout_s: float = READY_TIMEOUT_S
    # container name -> its router, started first when found stopped (a router is not recreated once stopped: after
    # `make down` and `pulumi up --refresh` only the steps start it again)
    routers: dict[str, str] = {}


class MattermostInputs(TaskInputs):
    mattermost_url: str
    mattermost_user: str


class KickoffInputs(MattermostInputs):
    prompt: str
    budget_s: float
    kickoff_s: float
    workers: dict[str, str]  # container (or service) name -> agent id: each session's CLI version is checked
    copilot_version: str
    convention: ConventionName = DEFAULT_CONVENTION  # the profile's checkout_convention: how sessions report


class RemindersInputs(MattermostInputs):
    minutes: list[int]


class NudgesInputs(MattermostInputs):
    workers: dict[str, str]  # container name -> agent id
    idle_nudge_s: int
    idle_check_s: int
    platform: list[str] = Field(default_factory=list)  # the long-running platform containers, restarted if found dead
    routers: dict[str, str] = Field(default_factory=dict)  # worker -> its router, restarted before it if found dead
    convention: ConventionName = DEFAULT_CONVENTION  # the profile's checkout_convention: when a worker last reported


class NodeArchive(BaseModel):
    """swarm: where a worker's archive is on the node that ran it, and how to read it there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    docker_host: str  # the node's Docker API
    path: str  # the archive directory on the node
    image: str  # an image on the node with sh and tar (the worker's own, by digest)


class ShutdownInputs(TaskInputs):
    grace_s: int
    workers: dict[str, str]  # container name -> archive directory
    routers: list[str]
    collect: dict[str, NodeArchive] = Field(default_factory=dict)  # swarm: worker name -> its archive on its node
    convention: ConventionName = DEFAULT_CONVENTION  # the profile's checkout_convention: each session's events


class NodeDirs(BaseModel):
    """swarm: one node's directories of the profile (bind sources must exist before a service mounts them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str
    docker_host: str  # the node's Docker API
    profile_dir: str  # <the node's data root>/<profile>
    dirs: list[str]  # bind sources, owned by root
    owned: list[str]  # bind sources the worker uid owns (archive directories)
    image: str  # an image with sh, mkdir, chown and rm (the first task's worker image, by digest)
    manager: bool  # the manager's profile directory is removed by the profile_data step, with its checks


class SwarmNodesInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str
    nodes: list[NodeDirs]
    published: list[str] = Field(default_factory=list)  # the registry names the images were tagged with


class EvaluateInputs(TaskInputs):
    profile: str
    docker_cpus: int | None
    pytest_addopts: str
    memory_gib: int
    docker_org: str
    blob_dir: str | None
    attempt: int


class ScoreInputs(TaskInputs):
    attempt: int


class PreserveInputs(Inputs):
    task_id: str | None  # None: the whole run
    copy_dir: str
    archive_dirs: dict[str, str]  # agent id -> its archive directory of this run
    guard: ProfileDataInputs | None = None  # the whole run's copy: at destroy, what must be kept before anything goes


class BaselineSeedInputs(TaskInputs):
    workspace: str
    worker_image: str  # Git on the agent's workspace runs in a container of it (scripts/lib/gitops.py sandbox_git)
    cleanroom: CleanroomCopy
    budget_s: float
    archive_dirs: list[str]
    provenance: dict[str, Any]


class BaselineStopInputs(TaskInputs):
    workspace: str
    worker_image: str
    worker: str
    sidecar: str
    archive_dir: str
    grace_s: int
    convention: ConventionName = DEFAULT_CONVENTION  # the profile's checkout_convention: the session's events
