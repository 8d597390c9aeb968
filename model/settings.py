"""The profile's schema: every setting of one experiment, with its type, default and meaning, and nothing else.

A profile is what one Pulumi stack's `agensh:` config holds (docs/requirements.md RB-E, J); the field names are its
config keys, and the settings table of docs/profiles.md is generated from these fields. What is derived from the
settings and the rules across them are `profile.py`'s, where a swarm's containers run `placement.py`'s: both import
this module, which imports neither, so the model's imports form no cycle (tests/unit/test_imports.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from . import contract
from .checkout import CONVENTIONS, DEFAULT_CONVENTION, SHARED_IMAGES, ConventionName
from .roles import MAX_PORT_OFFSET

MANAGER = "manager"


class SwarmNode(BaseModel):
    """One Docker host of the swarm."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=contract.PROFILE_RE.pattern, description=f"The node's `{contract.NODE_LABEL}` label")
    address: str = Field(description="Where the other nodes and the operator reach it (its advertise address)")
    role: Literal["manager", "worker"] = "worker"
    memory_gib: float = Field(gt=0, description="The host's memory")
    cpus: float = Field(gt=0, description="The host's CPUs")
    labels: dict[str, str] = Field(default_factory=dict, description="Further node labels (platform_on may name one)")
    ssh_host: str | None = Field(None, description="SSH host for this node's host units (the manager: local)")
    docker_host: str | None = Field(None, description="The node's Docker API for the steps; default ssh://<ssh_host>")
    ssh_port: int = 22
    ssh_user: str = "root"
    data_root: str | None = Field(None, description="Profile data on this node; default the profile's data_root")


class SwarmSettings(BaseModel):
    """The `swarm` setting of a profile with `engine: swarm`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    docker_host: str = Field(description="The manager's Docker API: unix://, tcp:// or ssh://")
    registry: str = Field(description="host:port of the registry on the manager every node pulls from")
    nodes: list[SwarmNode] = Field(min_length=1)
    build_network: str | None = Field(
        None,
        description="Network of the image builds' RUN steps on the manager "
        "(`host` where its daemon has no default bridge)",
    )
    platform_on: str = Field(MANAGER, description="`manager`, or a node label `key=value` (the first such node)")
    max_members_per_node: int | None = Field(None, gt=0, description="Ceiling of router+worker pairs per node")
    worker_cpus: float = Field(1.0, gt=0, description="CPUs a worker counts for in the plan")
    router_cpus: float = Field(0.25, gt=0, description="CPUs a router counts for in the plan")
    platform_memory_gib: float = Field(8.0, ge=0, description="Memory the platform services take on their node")
    platform_cpus: float = Field(2.0, ge=0, description="CPUs the platform services take on their node")
    memory_overcommit: float = Field(1.0, gt=0, description="Memory ceilings may add up to this times a node's share")

    def docker_host_of(self, node: SwarmNode) -> str | None:
        """Where the steps reach a node's Docker API (its data directories, its workers' archives)."""
        if node.role == "manager":
            return self.docker_host
        if node.docker_host:
            return node.docker_host
        return f"ssh://{node.ssh_user}@{node.ssh_host}:{node.ssh_port}" if node.ssh_host else None

    @property
    def manager(self) -> SwarmNode:
        return next(n for n in self.nodes if n.role == "manager")

    def node(self, name: str) -> SwarmNode:
        return next(n for n in self.nodes if n.name == name)


class ProfileSettings(BaseModel):
    """Settings of one team (or baseline) experiment. Field names are the `agensh:` config keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Identity and isolation (docs/requirements.md R8, 9)
    kind: Literal["team", "baseline"] = Field("team", description="A team, or the standalone single-agent baseline")
    profile: str = Field(description="Profile suffix; names every container, network and volume")
    run_id: str = Field(description="UTC run id, `date -u +%Y%m%dt%H%M%Sz`")
    port_base: int = Field(
        24400, ge=1024, le=65535 - MAX_PORT_OFFSET, description="First loopback port of the operator port map"
    )
    subnet_octet: int = Field(249, ge=1, le=254, description="X in the profile's 10.X.0.0/16")
    internal_subnet: str | None = Field(None, description="Overrides the derived internal (team) subnet")
    egress_subnet: str | None = Field(None, description="Overrides the derived egress subnet")

    # Tasks and team (docs/requirements.md R6, 7)
    tasks: list[str] = Field(min_length=1, description="ProgramBench task ids, run in this order")
    workers: int = Field(8, ge=1, le=512, description="Workers per task (a router each)")
    hours: float = Field(6.0, gt=0, description="Budget per task, wake ramp included")
    deadline_seconds: int | None = Field(None, description="Must equal hours * 3600 when given")
    model: str = Field(contract.PINNED_MODEL, description="Model id; the launch checks it")
    reasoning_effort: Literal["low", "medium", "high", "xhigh"] = Field(
        contract.PINNED_EFFORT, description="Reasoning effort"
    )
    model_api: Literal["responses"] = Field("responses", description="The Responses API")
    prompt_window_tokens: int = Field(272_000, gt=0, description="Prompt window")
    llm_upstream: str = Field(description="Gateway base URL, without /v1/responses (LLM_UPSTREAM)")

    # Team limits (docs/requirements.md R20, 22)
    worker_memory_gib: int = Field(
        contract.WORKER_MEMORY_MAX_GIB, gt=0, description="Worker memory ceiling (a limit, not a reservation)"
    )
    router_memory_gib: int = Field(contract.ROUTER_MEMORY_MAX_GIB, gt=0, description="Router memory ceiling")
    slice_memory_percent: int = Field(80, gt=0, le=100, description="pbench.slice MemoryMax, % of host RAM")
    mm_max_users_per_team: int = Field(
        contract.MM_DEFAULT_MAX_USERS, gt=0, description="MM_MAX_USERS_PER_TEAM; must exceed workers x tasks + admins"
    )
    administrators: int = Field(2, ge=1, description="Mattermost users besides the workers")
    mysql_max_connections: int = Field(1000, gt=0, description="MYSQL_MAX_CONNECTIONS; 4 per router + platform")
    mysql_platform_connections: int = Field(100, ge=0, description="Connections the platform services use")
    mini_router_stuck_ms: int = Field(1_200_000, gt=0, description="MINI_ROUTER_STUCK_MS, ACP silence watchdog")
    acp_recover_s: int = Field(600, gt=0, description="Baseline: a silent model request is recovered after this")
    copilot_version: str = Field(
        contract.SEED_COPILOT_VERSION,
        pattern=contract.SEMVER_RE.pattern,
        description="The worker image's GitHub Copilot CLI; preflight refuses another",
    )

    # Timing (docs/requirements.md R29, 30, 33, 41)
    wake_stagger_s: float = Field(30.0, ge=0, description="PBENCH_WAKE_STAGGER_S, per worker up to wake_slow_workers")
    wake_fast_stagger_s: float = Field(3.0, ge=0, description="PBENCH_WAKE_FAST_STAGGER_S, per worker after that")
    wake_slow_workers: int = Field(120, ge=0, description="Workers woken at the slow stagger")
    bringup_settle_s: float = Field(20.0, ge=0, description="PBENCH_BRINGUP_SETTLE_S, serial settle after the ramp")
    wake_ramp_subj_s: float = Field(60.0, ge=60.0, description="PBENCH_WAKE_RAMP_SUBJ_S, least wait before kickoff")
    reminder_minutes: list[int] = Field(
        default_factory=lambda: [60, 30, 10], description="Deadline reminders, minutes before the deadline"
    )
    idle_nudge_s: int = Field(600, gt=0, description="Idle nudge after this much inactivity")
    idle_check_s: int = Field(60, gt=0, description="Idle check interval")
    export_grace_s: int = Field(600, ge=0, description="Archive grace for workers after the export")
    snapshot_seconds: int = Field(1200, gt=0, description="Baseline snapshot interval")
    pair_with: str | None = Field(None, description="Baseline: the team stack whose score to pair with this one")
    start_at: str | None = Field(
        None,
        description="Scheduled launch, UTC ISO 8601 (2026-12-02T06:00:00Z); "
        "`python -m scripts.cli schedule install <stack>` sets the timer",
    )

    # Images (docs/requirements.md R10, 15-19)
    agensh_checkout: str = Field(description="Agensh checkout; relative paths resolve against the project")
    checkout_convention: ConventionName = Field(
        DEFAULT_CONVENTION,
        description=f"The checkout's conventions (activity report, self-check): one of {', '.join(CONVENTIONS)} "
        "(docs/checkout.md)",
    )
    agent_image_tag: str = Field("pbench", description="AGENT_IMAGE_TAG of every omcgitea-agent-<slug> image")
    agent_base_image: str = Field(SHARED_IMAGES["agent-base"].tag, description="Worker base image")
    mini_router_image: str = Field(SHARED_IMAGES["mini-router"].tag, description="MINI_ROUTER_IMAGE")
    board_image: str = Field(SHARED_IMAGES["board"].tag, description="BOARD_IMAGE")
    secret_service_image: str = Field(
        SHARED_IMAGES["secret-service"].tag, description="SECRET_SERVICE_IMAGE (token service)"
    )
    bootstrap_image: str = Field(SHARED_IMAGES["bootstrap"].tag, description="BOOTSTRAP_IMAGE")
    egress_proxy_image: str = Field(SHARED_IMAGES["egress-proxy"].tag, description="Egress proxy image")
    mysql_image: str = Field("mysql:8.4", description="Pulled; tag or @sha256 digest")
    gitea_image: str = Field("gitea/gitea:1.22", description="Pulled; tag or @sha256 digest")
    mattermost_image: str = Field("mattermost/mattermost-team-edition:10.5", description="Pulled; tag or digest")
    cleanroom_org: str = Field(
        contract.CLEANROOM_ORG, description="Org of the cleanroom images (PROGRAMBENCH_DOCKER_ORG)"
    )
    cleanroom_digests: dict[str, str] = Field(default_factory=dict, description="task id -> sha256 digest to pin")
    uncached: bool = Field(False, description="--no-cache builds under private tags <profile>-<run id>")

    # Engine: one Docker host, or a Docker Swarm of several (placement.py)
    engine: Literal["docker", "swarm"] = Field("docker", description="One Docker host, or a Docker Swarm of several")
    swarm: SwarmSettings | None = Field(None, description="engine=swarm: manager, registry, nodes, placement policy")
    # how the profile is cut into stacks changes no run: out of the digest and of every step's inputs
    stacks: Literal["one", "per-task"] = Field(
        "one",
        description="One stack, or per-task: a platform stack, a stack per task, the record (model/parts.py)",
        exclude=True,
    )

    # Host (docs/requirements.md R1-5)
    host_units: Literal["local", "remote", "off"] = Field("local", description="Where pbench.slice and the guard go")
    ssh_host: str | None = Field(None, description="Host for host_units=remote")
    ssh_port: int = Field(22, description="SSH port")
    ssh_user: str = Field("root", description="SSH user")
    ssh_key_path: str | None = Field(None, description="SSH private key file")
    ssh_host_key: str | None = Field(None, description="The remote host's SSH public key (`ssh-keyscan`), pinned")

    # Evaluation and records (docs/requirements.md R32, 36, 41)
    data_root: str = Field("~/.agensh/data", description="Profile data and run directories")
    traj_root: str = Field("~/pbench-trajectories", description="TRAJ_ROOT: verified copies of every run's results")
    skip_eval: bool = Field(False, description="Export without evaluating")
    eval_docker_cpus: int | None = Field(None, gt=0, description="--docker-cpus; default min(10, host CPUs)")
    eval_pytest_addopts: str = Field("", description="PBENCH_EVAL_PYTEST_ADDOPTS, e.g. --rootdir=.")
    eval_memory_gib: int = Field(16, gt=0, description="Memory cap per evaluation container")
    eval_blob_dir: str | None = Field(
        None,
        description="Local test blobs, `<task>/tests/<branch>.tar.gz` (PROGRAMBENCH_BLOB_DIR: ProgramBench's blob "
        "store never reached); unset: the store, which the preflight syncs each task from",
    )
    eval_attempt: int = Field(1, ge=1, description="Raise to re-evaluate the unchanged submissions (no inference)")
    allow_dirty: bool = Field(False, description="Record a dirty checkout instead of refusing it")
    egress_internal: bool = Field(False, description="Egress network without outside access (demo, tests)")
    run_steps: bool = Field(True, description="Declare the experiment's steps; off: the bare topology (benchmarks)")
    publish_ports: bool = Field(True, description="Publish operator ports on 127.0.0.1 (via the operator network)")
    model_standin: bool = Field(False, description="Run the demo's stand-in model on the egress network")

    @field_validator("start_at", mode="before")
    @classmethod
    def _timestamp_as_text(cls, value: Any) -> Any:
        """YAML reads an unquoted 2026-12-02T06:00:00Z as a timestamp: keep it as the text it was."""
        return value.isoformat() if isinstance(value, datetime) else value
