"""The project's contract: names, labels, the worker identity, image tags, limits and the rules derived from them.

One place for each fact. The profile validates against these rules, the components build names and labels
from them, the policy pack checks the rendered resources with the same rules and numbers, and the step programs
(preflight, seed, ...) use the same identities. What the project reads from an Agensh checkout is the checkout
contract's (model/checkout.py). Pure Python: no Pulumi imports, so every layer can import it.
"""

from __future__ import annotations

import re
from typing import Final

# --- names (Agensh's Compose naming: omcgitea-<profile>-<service>[-<n>]) -------------------------------------
PREFIX = "omcgitea"
MAX_NAME = 63  # Docker names and hostnames
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9-]*")  # docs/requirements.md R9
RUN_ID_RE = re.compile(r"\d{8}t\d{6}z")  # docs/requirements.md R8: date -u +%Y%m%dt%H%M%Sz
SLICE = "pbench.slice"  # the host units' systemd slice (components/host_units.py)


# Docker references (https://github.com/distribution/reference): a repository path with an optional registry host,
# then a tag or a digest. Nothing may start with "-", which `docker` would read as an option.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)"
REPOSITORY_RE = re.compile(rf"{_HOST}?{_COMPONENT}(?:/{_COMPONENT})*")
TAG_RE = re.compile(r"[\w][\w.-]{0,127}")
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
IMAGE_RE = re.compile(rf"{REPOSITORY_RE.pattern}(?::{TAG_RE.pattern})?(?:@{DIGEST_RE.pattern})?")
# Directories no profile may put its data in (destroy deletes <data root>/<profile>) and no worker may mount.
SYSTEM_DIRS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/var/lib",
    "/var/run",
    "/var/lib/docker",
)


def task_slug(task_id: str) -> str:
    """`jgm__pandoc.5caad90` -> `jgm-pandoc-5caad90`: usable in image and container names."""
    return re.sub(r"[^a-z0-9]+", "-", task_id.lower()).strip("-")


def compose_project(profile: str) -> str:
    return f"{PREFIX}-{profile}"


def resource_name(profile: str, service: str, n: int | None = None) -> str:
    """`omcgitea-<profile>-<service>[-<n>]`."""
    base = f"{PREFIX}-{profile}-{service}"
    return base if n is None else f"{base}-{n}"


def member_name(profile: str, task_id: str, role: str, n: int) -> str:
    """A task's router or worker number n: `omcgitea-<profile>-<slug>-<role>-<n>`."""
    return resource_name(profile, f"{task_slug(task_id)}-{role}", n)


CLEANROOM_COPY_ROLE = "cleanroom-copy"  # the container a seed copies /workspace out of (step_inputs.CleanroomCopy)


def cleanroom_copy_name(profile: str, task_id: str) -> str:
    """One per profile and task: a seed run again finds (and removes) the one a killed seed left."""
    return resource_name(profile, f"{task_slug(task_id)}-{CLEANROOM_COPY_ROLE}")


def agent_id(task_id: str, n: int) -> str:
    """The agent id of a task's worker n (token file name, Gitea and Mattermost identity)."""
    return f"{task_id}-{n}"


def team_repo(task_id: str) -> str:
    """The task's repository in Gitea: `team/<slug>`."""
    return f"{TEAM_ORG}/{task_slug(task_id)}"


def image_repository(image: str) -> str:
    """An image name without its tag; a registry's port (`host:5000/repo`) is not a tag."""
    return image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image


def worker_image(task_id: str, tag: str) -> str:
    """docs/requirements.md R17: `omcgitea-agent-<slug>:<tag>`."""
    return f"{PREFIX}-agent-{task_slug(task_id)}:{tag}"


# --- labels (every container, network, volume and built image of a profile) ---------------------------------
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"  # existing Agensh reboot guards stop by this label
PROFILE_LABEL = "agensh.profile"
RUN_LABEL = "agensh.run-id"
ROLE_LABEL = "agensh.role"
TASK_LABEL = "agensh.task"
KIND_LABEL = "agensh.kind"
REVISION_LABEL = "agensh.checkout-revision"  # preflight rejects router and board images of another revision
NODE_LABEL = "agensh.node"  # swarm: a node's name (node label; hostnames may repeat) and a service's planned node


def labels(profile: str, run_id: str, role: str, task_id: str | None = None, kind: str = "team") -> dict[str, str]:
    out = {
        COMPOSE_PROJECT_LABEL: compose_project(profile),
        PROFILE_LABEL: profile,
        RUN_LABEL: run_id,
        ROLE_LABEL: role,
        KIND_LABEL: kind,
    }
    if task_id is not None:
        out[TASK_LABEL] = task_id
    return out


def node_constraint(node: str) -> str:
    """Swarm placement constraint pinning a service to the node labelled `agensh.node=<node>`."""
    return f"node.labels.{NODE_LABEL}=={node}"


def profile_filter(profile: str) -> str:
    """`docker ... --filter` value selecting every object of a profile."""
    return f"label={PROFILE_LABEL}={profile}"


def label_args(labels: dict[str, str]) -> list[str]:
    """`docker create` / `docker build` arguments setting these labels."""
    return [arg for k, v in sorted(labels.items()) for arg in ("--label", f"{k}={v}")]


def role_filter(role: str) -> str:
    """`docker ... --filter` value selecting the objects of one role (with profile_filter: of one profile)."""
    return f"label={ROLE_LABEL}={role}"


# --- identities and images --------------------------------------------------------------------------------
WORKER_UID = 10000  # docs/requirements.md R21: workers run as 10000:10000
WORKER_USER = f"{WORKER_UID}:{WORKER_UID}"
REFERENCE_BINARY = "/opt/pbench/executable"  # root-owned, mode 0111: executable, never readable
REFERENCE_OWNER_MODE = "root 111"  # `stat -c '%U %a'`
CLEANROOM_TAG = "task_cleanroom_v6"  # docs/requirements.md R15
CLEANROOM_ORG = "programbench"
ADMIN_USER = "pbench-admin"  # the platform administrator in Gitea and Mattermost
ROUTER_DB = "router"  # the routers' own database user and database (never root)
MATTERMOST_DB = "mattermost"  # Mattermost's own database user and database (never root)
TEAM_ORG = "team"  # the Gitea organisation holding every task repository
GITEA_DATABASE = "gitea"  # the database Gitea uses; the MySQL image creates it on its first start (MYSQL_DATABASE)
TEAM_NAME, TEAM_CHANNEL = "pbench", "town-square"  # the Mattermost team and channel


def cleanroom_image(task_id: str, org: str = CLEANROOM_ORG, tag: str = CLEANROOM_TAG) -> str:
    """`programbench/<id with "__" -> "_1776_">:task_cleanroom_v6`."""
    return f"{org}/{task_id.replace('__', '_1776_')}:{tag}"


# --- credentials --------------------------------------------------------------------------------------------
MODEL_CREDENTIAL_ENV = "LLM_UPSTREAM_TOKEN"  # only the egress proxy holds it (docs/requirements.md R13)
PROXY_CREDENTIAL_ENV = "LLM_PROXY_TOKEN"  # the local proxy credential: the only secret a worker holds
MODEL_CREDENTIAL_ENVS = (MODEL_CREDENTIAL_ENV, "UPSTREAM_AUTH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
# Names that hold a secret end in one of these words (TOKEN_SERVICE_URL or PROMPT_WINDOW_TOKENS do not).
SECRETISH = re.compile(r"(PASSWORD|PASSWD|TOKEN|SECRET|API_KEY|CREDENTIAL|PRIVATE_KEY|DATASOURCE)$", re.I)
SECRET_KEYS = (
    "llm_upstream_token",
    "worker_proxy_token",
    "mysql_root_password",
    "mysql_router_password",
    "mysql_mattermost_password",
    "gitea_admin_password",
    "mattermost_admin_password",
)  # the stack's encrypted config
GENERATED_SECRETS = tuple(k for k in SECRET_KEYS if k != "llm_upstream_token")  # the model token is the user's

# --- model pins (docs/requirements.md R6) -----------------------------------------------------------------------
PINNED_MODEL = "gpt-5.6-sol"
PINNED_EFFORT: Final = "high"  # Final: its type is the literal, one of the profile's efforts
# The worker image's GitHub Copilot CLI (docs/requirements.md R19: the seed pins 1.0.70). Offline with a custom
# provider, 1.0.70 refuses every ACP session ("Authentication required"); 1.0.78 is the oldest release whose ACP
# sessions run offline.
SEED_COPILOT_VERSION = "1.0.70"
OFFLINE_ACP_COPILOT_VERSION = "1.0.78"
SEMVER_RE = re.compile(r"\d+\.\d+\.\d+")
COPILOT_VERSION_OUT = re.compile(r"GitHub Copilot CLI (\d+\.\d+\.\d+)")  # what `copilot --version` prints

# --- limits (docs/requirements.md R20, 22) and the rules derived from them --------------------------------------
GIB_MB = 1024
WORKER_MEMORY_MAX_GIB = 64
ROUTER_MEMORY_MAX_GIB = 8
CONNECTIONS_PER_ROUTER = 4
READY_TIMEOUT_S = 180  # how long a container may take to pass its health check (at creation, or at its worker's wake)
MYSQL_DEFAULT_MAX_CONNECTIONS = 151  # MySQL's own default when no --max-connections is given
MM_DEFAULT_MAX_USERS = 200  # Mattermost's default MM_TEAMSETTINGS_MAXUSERSPERTEAM
ADDRESS_RESERVE = 3  # network address, gateway, broadcast
# What one worker with the real Copilot CLI (OFFLINE_ACP_COPILOT_VERSION) used, measured with
# `scripts.lab.bench --agents` (docs/performance.md): its container working under the scripted model. The ceilings
# above are limits; this is the floor a plan can count on.
MEASURED_AGENT_MB = 220


def mysql_connections_needed(routers: int, platform: int) -> int:
    """MYSQL_MAX_CONNECTIONS must cover 4 per router plus the platform's connections."""
    return CONNECTIONS_PER_ROUTER * routers + platform


def mm_users_needed(workers: int, tasks: int, administrators: int) -> int:
    """The chat users in the one Mattermost team (TEAM_NAME): the bootstrap registers every task's agents there at the
    platform's start, plus the administrators."""
    return workers * tasks + administrators


def mm_max_users_needed(workers: int, tasks: int, administrators: int) -> int:
    """The least team cap that fits: MM_MAX_USERS_PER_TEAM must exceed the users (docs/requirements.md R20)."""
    return mm_users_needed(workers, tasks, administrators) + 1


def deadline_s(hours: float) -> int:
    """The task budget in seconds for `hours` (`deadline_seconds` must equal it)."""
    return round(hours * 3600)


def team_limit_problems(
    workers: int,
    tasks: int,
    routers: int,
    administrators: int,
    mm_max_users: int,
    mysql_max_connections: int,
    platform_connections: int,
) -> list[tuple[str, str]]:
    """The team limits that do not scale by themselves with the worker count, as (profile key, problem). `workers`
    and `routers` are one task's (a task's team runs alone); the chat counts every task's agents."""
    out = []
    users, cap = mm_users_needed(workers, tasks, administrators), mm_max_users_needed(workers, tasks, administrators)
    if mm_max_users < cap:
        out.append(
            (
                "mm_max_users_per_team",
                f"{mm_max_users} must exceed {tasks} task(s) x {workers} workers + {administrators} administrators "
                f"({users}); set it to {cap} or more",
            )
        )
    need = mysql_connections_needed(routers, platform_connections)
    if mysql_max_connections < need:
        out.append(
            (
                "mysql_max_connections",
                f"{mysql_max_connections} must cover {CONNECTIONS_PER_ROUTER} per router x "
                f"{routers} plus the platform's {platform_connections} ({need}); set it to {need} or more",
            )
        )
    return out


def memory_problem(role: str, memory_mb: float | None, max_gib: int) -> str | None:
    """A router's or worker's memory ceiling: present, and within the contract's."""
    if not memory_mb:
        return f"the {role} has no memory ceiling; at most {max_gib * GIB_MB} MB"
    if memory_mb > max_gib * GIB_MB:
        return f"the {role} may use {memory_mb:.0f} MB; the {role} ceiling is {max_gib * GIB_MB} MB ({max_gib} GiB)"
    return None
