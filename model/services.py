"""What each role's container is for a profile: its image, settings, secrets, mounts, command and health check.

One spec function per role of the table (`roles.py`), in `SPECS`; the Docker and Swarm components, the policy pack's
tests and the bench render them. Secret values are never here: a spec names the secret keys (`contract.SECRET_KEYS`)
the container component injects as Pulumi secrets. Only the egress proxy ever names `llm_upstream_token`; workers get
the local proxy credential and nothing else secret (docs/requirements.md R13).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Network

from . import addressing, contract
from .checkout import ARCHIVE, PROMPTS_DIR, PROMPTS_MOUNT, SILENCE
from .profile import Profile
from .project import SCRIPTS
from .roles import HTTP_PORT, ROLES
from .rundir import ProfileDir
from .topology import Placement


@dataclass(frozen=True)
class Mount:
    host_path: str
    container_path: str
    read_only: bool = False


@dataclass(frozen=True)
class SecretIn:
    """A setting holding a secret inside a larger value, such as a database DSN: `template` with `{}` where the value
    of the secret `key` goes."""

    key: str
    template: str


SecretRef = str | SecretIn  # a secret key, or a secret inside a template


def secret_key(ref: SecretRef) -> str:
    return ref.key if isinstance(ref, SecretIn) else ref


def secret_setting(var: str, ref: SecretRef, value: str) -> str:
    """What the variable `var` holds, given its secret's value: the value inside its template; for a name ending in
    _SHA256 the value's SHA-256 (its holder checks a credential without holding it); else the value itself."""
    if isinstance(ref, SecretIn):
        return ref.template.format(value)
    return hashlib.sha256(value.encode()).hexdigest() if var.endswith("_SHA256") else value


@dataclass(frozen=True)
class ServiceSpec:
    image: str
    env: dict[str, str] = field(default_factory=dict)
    secret_env: dict[str, SecretRef] = field(default_factory=dict)  # env name -> its secret (secret_setting)
    mounts: tuple[Mount, ...] = ()
    command: tuple[str, ...] | None = None
    healthcheck: tuple[str, ...] | None = None
    user: str | None = None
    memory_mb: int | None = None
    entrypoint: tuple[str, ...] | None = None
    one_shot: bool = False  # runs to completion (bootstrap)
    sandboxed: bool = False  # agent-controlled: drops every capability and may not gain privileges
    stopped_on_purpose: bool = False  # must_run off: stopped at shutdown, not recreated
    woken: bool = False  # created stopped; the wake step starts it at its ramp offset
    # one per worker (the router): its health is checked every 30 s instead of 5 (a check is an exec into the
    # container, ~0.1 s of CPU; 128 routers checked every 5 s took more than two cores), and the engine does not wait
    # for it at creation: the wake step waits until it answers (`ready_url`) before it starts its worker
    ready_at_wake: bool = False

    @property
    def waited(self) -> bool:
        """The engine waits until the health check passes before the container counts as created."""
        return bool(self.healthcheck) and not self.one_shot and not self.ready_at_wake


# --- helpers of the spec functions -----------------------------------------------------------------------
def url(p: Profile, role: str) -> str:
    return f"http://{address(p, role)}:{ROLES[role].port}"


def address(p: Profile, role: str, network: IPv4Network | None = None) -> str:
    """Where a platform service is reached on a network (default: the internal one): its fixed address there on one
    host; on a swarm, where services get no fixed address, its service name (the overlay network's DNS)."""
    if p.engine == "swarm":
        return contract.resource_name(p.profile, role)
    slot = ROLES[role].slot
    assert slot is not None, role
    return addressing.service_ip(network or p.internal_network, slot)


def member_address(p: Profile, task: str, role: str, n: int) -> str:
    """Where a task's router or worker is reached on the team network: its fixed address on one host; on a swarm
    (no fixed addresses) its service name, which resolves to that member's task only."""
    if p.engine == "swarm":
        return contract.member_name(p.profile, task, role, n)
    return p.member_ip(task, role, n, p.internal_network)


def database_host(p: Profile) -> str:
    """The database on the data network, the only network it joins besides the operator's."""
    assert p.data_network is not None
    return address(p, "mysql", p.data_network)


def database(p: Profile) -> str:
    return f"{database_host(p)}:{ROLES['mysql'].port}"


def operator_url(p: Profile, role: str) -> str:
    """Where the steps reach a platform service: on one host its address (the host sits on the internal network); on
    a swarm the port it publishes on the manager."""
    if p.engine == "swarm":
        assert p.swarm is not None
        return f"http://{p.swarm.manager.address}:{p.ports[role]}"
    return url(p, role)


def data(p: Profile, *parts: str) -> str:
    return str(ProfileDir.of(p).data(*parts))


HEALTH_PATH = "/healthz"


def http_check(port: int, path: str = HEALTH_PATH) -> tuple[str, ...]:
    return (
        "CMD-SHELL",
        f"wget -q -O /dev/null http://127.0.0.1:{port}{path} || curl -fsS http://127.0.0.1:{port}{path}",
    )


def model_env(p: Profile) -> dict[str, str]:
    return {
        "MODEL": p.model,
        "REASONING_EFFORT": p.reasoning_effort,
        "MODEL_API": p.model_api,
        "PROMPT_WINDOW_TOKENS": str(p.prompt_window_tokens),
    }


def copilot_env(p: Profile) -> dict[str, str]:
    """The Copilot CLI's own settings (BYOK, offline, pinned): it reaches only the egress proxy, whose credential the
    worker's ACP driver passes on as COPILOT_PROVIDER_BEARER_TOKEN; the proxy sets the profile's reasoning effort."""
    return {
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_VERSION": p.copilot_version,
        "COPILOT_PROVIDER_BASE_URL": f"{url(p, 'egress-proxy')}/v1",
        "COPILOT_PROVIDER_WIRE_API": p.model_api,
        "COPILOT_MODEL": p.model,
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": str(p.prompt_window_tokens),
    }


def member_env(p: Profile, c: Placement) -> dict[str, str]:
    """What routers and workers share: who they are and where the team's services are."""
    assert c.task is not None and c.index is not None
    return {
        "AGENT_ID": contract.agent_id(c.task, c.index),
        "TASK_ID": c.task,
        "BOARD_URL": url(p, "board"),
        "GITEA_URL": url(p, "gitea"),
        "MATTERMOST_URL": url(p, "mattermost"),
    }


# --- the spec of each role ----------------------------------------------------------------------------------
def mysql(p: Profile, c: Placement) -> ServiceSpec:
    """The database; on its first start scripts/mysql_users.sh gives the routers and Mattermost their own users."""
    return ServiceSpec(
        image=p.mysql_image,
        env={
            "MYSQL_DATABASE": contract.GITEA_DATABASE,  # Gitea does not create its database
            "MYSQL_SERVICE_USERS": f"{contract.ROUTER_DB} {contract.MATTERMOST_DB}",
        },
        secret_env={
            "MYSQL_ROOT_PASSWORD": "mysql_root_password",
            "MYSQL_ROUTER_PASSWORD": "mysql_router_password",
            "MYSQL_MATTERMOST_PASSWORD": "mysql_mattermost_password",
        },
        mounts=(
            Mount(data(p, "mysql"), "/var/lib/mysql"),
            Mount(str(SCRIPTS / "mysql_users.sh"), "/docker-entrypoint-initdb.d/agensh-users.sh", read_only=True),
        ),
        command=("mysqld", f"--max-connections={p.mysql_max_connections}"),
        healthcheck=("CMD", "mysqladmin", "ping", "-h", "127.0.0.1"),
    )


def gitea(p: Profile, c: Placement) -> ServiceSpec:
    return ServiceSpec(
        image=p.gitea_image,
        env={
            "GITEA__security__INSTALL_LOCK": "true",
            "GITEA__database__DB_TYPE": "mysql",
            "GITEA__database__HOST": database(p),
            "GITEA__database__USER": "root",
            "GITEA__database__NAME": contract.GITEA_DATABASE,
            "GITEA__server__ROOT_URL": f"{url(p, 'gitea')}/",
            "GITEA__actions__ENABLED": "false",
            "GITEA_ADMIN_USER": contract.ADMIN_USER,
        },
        secret_env={"GITEA__database__PASSWD": "mysql_root_password", "GITEA_ADMIN_PASSWORD": "gitea_admin_password"},
        mounts=(Mount(data(p, "gitea"), "/data"),),
        healthcheck=http_check(ROLES["gitea"].port, "/api/healthz"),
    )


MATTERMOST_DSN = "{user}:{{}}@tcp({host})/{database}?charset=utf8mb4,utf8&writeTimeout=30s"  # the Go MySQL driver's


def mattermost(p: Profile, c: Placement) -> ServiceSpec:
    """Mattermost's own settings (each `MM_*` variable is a config.json path in capitals: SqlSettings.DataSource is
    MM_SQLSETTINGS_DATASOURCE); its database is its own, through a DSN that holds its password."""
    db = contract.MATTERMOST_DB
    return ServiceSpec(
        image=p.mattermost_image,
        env={
            "MM_SQLSETTINGS_DRIVERNAME": "mysql",
            "MM_SERVICESETTINGS_SITEURL": url(p, "mattermost"),
            "MM_TEAMSETTINGS_MAXUSERSPERTEAM": str(p.mm_max_users_per_team),
        },
        secret_env={
            "MM_SQLSETTINGS_DATASOURCE": SecretIn(
                "mysql_mattermost_password", MATTERMOST_DSN.format(user=db, host=database(p), database=db)
            ),
            "MATTERMOST_ADMIN_PASSWORD": "mattermost_admin_password",
        },
        mounts=(Mount(data(p, "mattermost"), "/mattermost/data"),),
        healthcheck=http_check(ROLES["mattermost"].port, "/api/v4/system/ping"),
    )


def board(p: Profile, c: Placement) -> ServiceSpec:
    return ServiceSpec(
        image=p.image("board"),
        env={"BOARD_LIFECYCLE_DIR": "/data/lifecycle", "PORT": str(HTTP_PORT)},
        mounts=(Mount(data(p, "board"), "/data"),),
        healthcheck=http_check(HTTP_PORT),
    )


def secret_service(p: Profile, c: Placement) -> ServiceSpec:
    """The token service; SECRET_SERVICE_CALLERS tells it the one address each agent's token may go to: the worker's
    fixed address, or on a swarm (no fixed addresses) the worker's service name, which the token service resolves on
    the team network when asked (the name resolves to that worker's task only)."""
    callers = {
        contract.agent_id(t, n): member_address(p, t, "worker", n) for t in p.tasks for n in range(1, p.workers + 1)
    }
    return ServiceSpec(
        image=p.image("secret-service"),
        env={
            "SECRET_SERVICE_TOKENS_DIR": "/tokens",
            "PORT": str(HTTP_PORT),
            "SECRET_SERVICE_CALLERS": json.dumps(callers, sort_keys=True),
        },
        mounts=(Mount(data(p, "tokens"), "/tokens", read_only=True),),
        healthcheck=http_check(HTTP_PORT),
    )


def egress_proxy(p: Profile, c: Placement) -> ServiceSpec:
    return ServiceSpec(
        image=p.image("egress-proxy"),
        env={"LLM_UPSTREAM": p.llm_upstream.rstrip("/"), "PORT": str(HTTP_PORT), **model_env(p)},
        secret_env={contract.MODEL_CREDENTIAL_ENV: "llm_upstream_token", "WORKER_PROXY_TOKEN": "worker_proxy_token"},
        healthcheck=http_check(HTTP_PORT),
    )


def bootstrap(p: Profile, c: Placement) -> ServiceSpec:
    return ServiceSpec(
        image=p.image("bootstrap"),
        env={
            "GITEA_URL": url(p, "gitea"),
            "MATTERMOST_URL": url(p, "mattermost"),
            "WORKERS": str(p.workers),
            "TASKS": " ".join(p.tasks),
            "TOKENS_DIR": "/tokens",
            "PROFILE": p.profile,
            "TEAM_REPOS": " ".join(contract.team_repo(t) for t in p.tasks),
        },
        secret_env={
            "GITEA_ADMIN_PASSWORD": "gitea_admin_password",
            "MATTERMOST_ADMIN_PASSWORD": "mattermost_admin_password",
        },
        mounts=(Mount(data(p, "tokens"), "/tokens"),),
        one_shot=True,
    )


def model(p: Profile, c: Placement) -> ServiceSpec:
    """The demo's stand-in model: it only checks the credential the egress proxy injects. Like a real gateway it lists
    a fixed set of model ids (the pinned model), whatever the profile asks for: the preflight checks against it."""
    return ServiceSpec(
        image=p.image("egress-proxy"),
        env={"STANDIN": "model", "PORT": str(HTTP_PORT), "STANDIN_MODELS": contract.PINNED_MODEL},
        secret_env={"EXPECTED_TOKEN_SHA256": "llm_upstream_token"},
        healthcheck=http_check(HTTP_PORT),
    )


def router(p: Profile, c: Placement) -> ServiceSpec:
    return ServiceSpec(
        image=p.image("mini-router"),
        memory_mb=p.router_memory_gib * contract.GIB_MB,
        stopped_on_purpose=True,
        env={
            **member_env(p, c),
            SILENCE.router_env: str(p.mini_router_stuck_ms),
            "PORT": str(HTTP_PORT),
            "MYSQL_HOST": database_host(p),
            "MYSQL_MAX_POOL": str(contract.CONNECTIONS_PER_ROUTER),
            "MYSQL_USER": contract.ROUTER_DB,
            "MYSQL_DATABASE": contract.ROUTER_DB,
        },
        secret_env={"MYSQL_PASSWORD": "mysql_router_password"},
        healthcheck=http_check(HTTP_PORT),
        ready_at_wake=p.engine != "swarm",  # a swarm's services keep the engine's wait (components/swarm.py)
    )


def ready_url(p: Profile, c: Placement) -> str:
    """Where the wake step asks a worker's router whether it is up (the host sits on the internal network)."""
    assert c.task is not None and c.index is not None
    return f"http://{member_address(p, c.task, 'router', c.index)}:{ROLES['router'].port}{HEALTH_PATH}"


def worker(p: Profile, c: Placement) -> ServiceSpec:
    assert c.task is not None and c.index is not None
    pd = ProfileDir.of(p)
    agent = contract.agent_id(c.task, c.index)
    team = p.kind == "team"
    return ServiceSpec(
        image=p.worker_image(c.task),
        memory_mb=p.worker_memory_gib * contract.GIB_MB,
        user=contract.WORKER_USER,
        stopped_on_purpose=True,
        sandboxed=True,
        woken=team,
        env={
            **member_env(p, c),
            **model_env(p),
            "TOKEN_SERVICE_URL": url(p, "secret-service"),
            "LLM_PROXY_URL": url(p, "egress-proxy"),
            "ROUTER_URL": f"http://{member_address(p, c.task, 'router', c.index)}:{HTTP_PORT}" if team else "",
            "PBENCH_HOURS": str(p.hours),
            "PBENCH_DEADLINE_SECONDS": str(p.deadline),
            "TEAM_REPO": contract.team_repo(c.task),
            "WORKERS": str(p.workers),
            "BASELINE": "0" if team else "1",
            "REFERENCE_BINARY": contract.REFERENCE_BINARY,
            **copilot_env(p),
            SILENCE.worker_env: str(p.mini_router_stuck_ms if team else p.acp_recover_s * 1000),
        },
        secret_env={contract.PROXY_CREDENTIAL_ENV: "worker_proxy_token"},
        mounts=(
            Mount(str(p.checkout_dir / PROMPTS_DIR), PROMPTS_MOUNT, read_only=True),
            Mount(str(pd.archive_dir(agent, p.run_id)), ARCHIVE.mount),
        )
        + (() if team else (Mount(str(pd.workspace), "/workspace"),)),
    )


SNAPSHOT_GIT = "git -C /workspace -c core.hooksPath=/dev/null -c core.fsmonitor=false -c commit.gpgSign=false"
SNAPSHOT_LOOP = (
    f'while sleep "$SNAPSHOT_SECONDS"; do {SNAPSHOT_GIT} add -A && {SNAPSHOT_GIT} '
    '-c user.name=snapshot -c user.email=snapshot@agensh.local commit -q -m "snapshot $(date -u +%FT%TZ)" '
    '&& echo "snapshot $(date -u +%FT%TZ)"; done'
)


def snapshot(p: Profile, c: Placement) -> ServiceSpec:
    """The baseline's sidecar: commits the worker's non-ignored changes every snapshot_seconds; no network."""
    assert c.task is not None
    return ServiceSpec(
        image=p.worker_image(c.task),
        user=contract.WORKER_USER,
        entrypoint=("sh", "-c"),
        command=(SNAPSHOT_LOOP,),
        env={"SNAPSHOT_SECONDS": str(p.snapshot_seconds)},
        stopped_on_purpose=True,
        sandboxed=True,
        mounts=(Mount(str(ProfileDir.of(p).workspace), "/workspace"),),
    )


# each role's spec, keyed as the role table is (tests/unit/test_profile.py holds the two to the same roles)
SPECS: dict[str, Callable[[Profile, Placement], ServiceSpec]] = {
    "mysql": mysql,
    "gitea": gitea,
    "mattermost": mattermost,
    "board": board,
    "secret-service": secret_service,
    "egress-proxy": egress_proxy,
    "model": model,
    "bootstrap": bootstrap,
    "router": router,
    "worker": worker,
    "snapshot": snapshot,
}


def spec(p: Profile, c: Placement) -> ServiceSpec:
    return SPECS[c.role](p, c)
