"""What each container runs with: image, environment, secrets, mounts, ports, health check, limits.

Pure data from the Profile and a Placement. Secret values are never here: a spec names the secret keys
(see `profile.Secrets`) that the component injects as Pulumi secrets. Only the egress proxy ever names
`llm_upstream_token`; workers get the local proxy credential and nothing else secret (REQUIREMENTS 13).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from . import addressing, naming
from .profile import Profile
from .topology import WORKER_USER, Placement, router_ip

HTTP_PORT = 8080
TEAM_ORG = "team"  # the Gitea organisation holding every task repository
ADMIN_USER = "pbench-admin"
SERVICE_PORTS = {"gitea": 3000, "mattermost": 8065, "board": HTTP_PORT, "secret-service": HTTP_PORT, "mysql": 3306}


@dataclass(frozen=True)
class Mount:
    host_path: str
    container_path: str
    read_only: bool = False


@dataclass(frozen=True)
class ServiceSpec:
    image: str
    env: dict[str, str] = field(default_factory=dict)
    # env name -> Secrets key; a name ending in _SHA256 gets the secret's SHA-256 instead of the secret
    secret_env: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    published: dict[int, int] = field(default_factory=dict)  # container port -> 127.0.0.1 port
    command: tuple[str, ...] | None = None
    healthcheck: tuple[str, ...] | None = None
    user: str | None = None
    memory_mb: int | None = None
    entrypoint: tuple[str, ...] | None = None
    one_shot: bool = False  # runs to completion (bootstrap)
    stopped_on_purpose: bool = False  # must_run off: stopped at shutdown, not recreated


def url(p: Profile, service: str) -> str:
    ip = addressing.service_ip(p.internal_network, service)
    return f"http://{ip}:{SERVICE_PORTS.get(service, HTTP_PORT)}"


def data_dir(p: Profile, *parts: str) -> str:
    """Host path of profile data: kept by `down`, removed by destroy."""
    return str(PurePosixPath(str(p.run_dir().parent)) / "data" / PurePosixPath(*parts))


def http_check(port: int, path: str = "/healthz") -> tuple[str, ...]:
    return ("CMD-SHELL", f"wget -q -O /dev/null http://127.0.0.1:{port}{path} || curl -fsS http://127.0.0.1:{port}{path}")


def spec(p: Profile, c: Placement) -> ServiceSpec:
    """The container settings of one placement."""
    model_env = {"MODEL": p.model, "REASONING_EFFORT": p.reasoning_effort, "MODEL_API": p.model_api,
                 "PROMPT_WINDOW_TOKENS": str(p.prompt_window_tokens)}
    published = lambda port: {port: p.ports[c.role]} if c.role in p.ports else {}  # noqa: E731
    role = c.role
    if role == "mysql":
        return ServiceSpec(
            image=p.mysql_image, secret_env={"MYSQL_ROOT_PASSWORD": "mysql_root_password"},
            mounts=(Mount(data_dir(p, "mysql"), "/var/lib/mysql"),),
            command=("mysqld", f"--max-connections={p.mysql_max_connections}"),
            healthcheck=("CMD", "mysqladmin", "ping", "-h", "127.0.0.1"), published=published(3306))
    if role == "gitea":
        return ServiceSpec(
            image=p.gitea_image,
            env={"GITEA__security__INSTALL_LOCK": "true", "GITEA__database__DB_TYPE": "mysql",
                 "GITEA__database__HOST": f"{addressing.service_ip(p.internal_network, 'mysql')}:3306",
                 "GITEA__database__USER": "root", "GITEA__actions__ENABLED": "false"},
            secret_env={"GITEA__database__PASSWD": "mysql_root_password", "GITEA_ADMIN_PASSWORD": "gitea_admin_password"},
            mounts=(Mount(data_dir(p, "gitea"), "/data"),),
            healthcheck=http_check(3000, "/api/healthz"), published=published(3000))
    if role == "mattermost":
        return ServiceSpec(
            image=p.mattermost_image,
            env={"MM_TEAMSETTINGS_MAXUSERSPERTEAM": str(p.mm_max_users_per_team), "MM_SQLSETTINGS_DRIVERNAME": "mysql",
                 "MM_SQLSETTINGS_DATASOURCE_HOST": f"{addressing.service_ip(p.internal_network, 'mysql')}:3306",
                 "MM_SERVICESETTINGS_SITEURL": url(p, "mattermost")},
            secret_env={"MM_SQLSETTINGS_PASSWORD": "mysql_root_password",
                        "MATTERMOST_ADMIN_PASSWORD": "mattermost_admin_password"},
            mounts=(Mount(data_dir(p, "mattermost"), "/mattermost/data"),),
            healthcheck=http_check(8065, "/api/v4/system/ping"), published=published(8065))
    if role == "board":
        return ServiceSpec(
            image=p.image("board"), env={"BOARD_LIFECYCLE_DIR": "/data/lifecycle", "PORT": str(HTTP_PORT)},
            mounts=(Mount(data_dir(p, "board"), "/data"),),
            healthcheck=http_check(HTTP_PORT), published=published(HTTP_PORT))
    if role == "secret-service":
        return ServiceSpec(
            image=p.image("secret-service"), env={"SECRET_SERVICE_TOKENS_DIR": "/tokens", "PORT": str(HTTP_PORT)},
            mounts=(Mount(data_dir(p, "tokens"), "/tokens", read_only=True),),
            healthcheck=http_check(HTTP_PORT), published=published(HTTP_PORT))
    if role == "egress-proxy":
        return ServiceSpec(
            image=p.image("egress-proxy"),
            env={"LLM_UPSTREAM": p.llm_upstream.rstrip("/"), "PORT": str(HTTP_PORT), **model_env},
            secret_env={"LLM_UPSTREAM_TOKEN": "llm_upstream_token", "WORKER_PROXY_TOKEN": "worker_proxy_token"},
            healthcheck=http_check(HTTP_PORT))
    if role == "bootstrap":
        return ServiceSpec(
            image=p.image("bootstrap"),
            env={"GITEA_URL": url(p, "gitea"), "MATTERMOST_URL": url(p, "mattermost"), "WORKERS": str(p.workers),
                 "TASKS": " ".join(p.tasks), "TOKENS_DIR": "/tokens", "PROFILE": p.profile},
            secret_env={"GITEA_ADMIN_PASSWORD": "gitea_admin_password",
                        "MATTERMOST_ADMIN_PASSWORD": "mattermost_admin_password"},
            mounts=(Mount(data_dir(p, "tokens"), "/tokens"),), one_shot=True)
    if role == "model":
        return ServiceSpec(image=p.image("egress-proxy"), env={"STANDIN": "model", "PORT": str(HTTP_PORT)},
                           secret_env={"EXPECTED_TOKEN_SHA256": "llm_upstream_token"}, healthcheck=http_check(HTTP_PORT))
    agent = f"{c.task}-{c.index}"
    if role == "snapshot":
        assert c.task is not None
        commit = ("while sleep \"$SNAPSHOT_SECONDS\"; do git -C /workspace add -A && git -C /workspace "
                  "-c user.name=snapshot -c user.email=snapshot@agensh.local commit -q -m \"snapshot $(date -u +%FT%TZ)\" "
                  "&& echo \"snapshot $(date -u +%FT%TZ)\"; done")
        return ServiceSpec(image=p.worker_image(c.task), user=WORKER_USER, entrypoint=("sh", "-c"), command=(commit,),
                           env={"SNAPSHOT_SECONDS": str(p.snapshot_seconds)}, stopped_on_purpose=True,
                           mounts=(Mount(data_dir(p, "workspace"), "/workspace"),))
    common = {"AGENT_ID": agent, "TASK_ID": c.task or "", "BOARD_URL": url(p, "board"), "GITEA_URL": url(p, "gitea"),
              "MATTERMOST_URL": url(p, "mattermost")}
    if role == "router":
        return ServiceSpec(
            image=p.image("mini-router"), memory_mb=c.memory_mb, stopped_on_purpose=True,
            env={**common, "MINI_ROUTER_STUCK_MS": str(p.mini_router_stuck_ms), "PORT": str(HTTP_PORT),
                 "MYSQL_HOST": addressing.service_ip(p.internal_network, "mysql"), "MYSQL_MAX_POOL": "4",
                 "IDLE_NUDGE_S": str(p.idle_nudge_s), "IDLE_CHECK_S": str(p.idle_check_s)},
            secret_env={"MYSQL_PASSWORD": "mysql_root_password"}, healthcheck=http_check(HTTP_PORT))
    assert role == "worker", role
    assert c.task is not None and c.index is not None
    return ServiceSpec(
        image=p.worker_image(c.task), memory_mb=c.memory_mb, user=WORKER_USER, stopped_on_purpose=True,
        env={**common, **model_env, "TOKEN_SERVICE_URL": url(p, "secret-service"),
             "LLM_PROXY_URL": f"http://{addressing.service_ip(p.internal_network, 'egress-proxy')}:{HTTP_PORT}",
             "ROUTER_URL": f"http://{router_ip(p, c.task, c.index)}:{HTTP_PORT}" if p.kind == "team" else "",
             "PBENCH_WAKE_OFFSET_S": str(p.task_budget.worker_offsets[c.index - 1]),
             "PBENCH_HOURS": str(p.hours), "PBENCH_DEADLINE_SECONDS": str(p.deadline),
             "TEAM_REPO": f"{TEAM_ORG}/{naming.task_slug(c.task)}", "WORKERS": str(p.workers),
             "BASELINE": "1" if p.kind == "baseline" else "0",
             "REFERENCE_BINARY": "/opt/pbench/executable"},
        secret_env={"LLM_PROXY_TOKEN": "worker_proxy_token"},
        mounts=(Mount(str(PurePosixPath(p.agensh_checkout) / "prompts"), "/opt/agensh/prompts", read_only=True),
                Mount(archive_dir(p, agent), "/archive"))
        + ((Mount(data_dir(p, "workspace"), "/workspace"),) if p.kind == "baseline" else ()))


def gitea_repositories(p: Profile) -> str:
    """Where Gitea keeps its repositories in the profile's data (`/data` in the container): the export's fallback."""
    return data_dir(p, "gitea", "git", "repositories")


def archive_dir(p: Profile, agent: str) -> str:
    """Where a worker seals its HOME and workspace at shutdown (`agents/<agent>/shutdown/<run id>/state.tar.gz`)."""
    return data_dir(p, "agents", agent, "shutdown", p.run_id)
