"""The agensh policy rules. `__main__.py` only builds the pack from `POLICIES`; tests import this module.

Policies see the engine's view of resources: camelCase property names, numbers as floats, values unknown
at preview absent. Every message names the resource and the fix. Each rule's numbers for a stack are the ones
`new-stack` wrote to `stacks/<stack>.policy.json`, which the pack finds by itself (`stack_policy_config`), so a plain
`pulumi preview` or `pulumi up` checks as `make preview` does; `--policy-pack-config` still overrides any of them.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from model import contract, parts, placement
from model.container_plan import Declared, declared_container, declared_service, label_map
from model.contract import KIND_LABEL, PROFILE_LABEL, SECRETISH, TASK_LABEL
from model.profile import NAMESPACE, Profile
from model.rundir import ProfileDir
from model.stackfiles import policy_config_path

# pulumi_policy's ReportViolation requires the urn; the engine's callback takes it as optional: (message, urn=None)
Report = Callable[..., None]


def profile_default(key: str) -> Any:
    """A profile setting's default: what the pack assumes when no policy config from `new_stack` says otherwise."""
    return Profile.model_fields[key].default


STACK_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")  # what the engine allows in a stack's name


def stack_policy_config(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The stack's own numbers: `stacks/<stack>.policy.json` of the profile being checked, read from the stack's name
    and config that the engine hands every policy pack (PULUMI_STACK, PULUMI_CONFIG; a part stack names its profile's
    stack in `agensh:part_of`). Empty for a stack of no profile file. The pack starts from it, so typing
    `pulumi up -s <stack>` checks with the same numbers as `make up`."""
    stack = environ.get("PULUMI_STACK", "")
    owner = json.loads(environ.get("PULUMI_CONFIG") or "{}").get(f"{NAMESPACE}:{parts.PART_OF_KEY}") or stack
    if not STACK_NAME_RE.fullmatch(owner) or not (path := policy_config_path(owner)).is_file():
        return {}
    return {
        policy: {k: EnforcementLevel(v) if k == "enforcementLevel" else v for k, v in values.items()}
        for policy, values in json.loads(path.read_text()).items()
    }


CONTAINER = "docker:index/container:Container"
NETWORK = "docker:index/network:Network"
VOLUME = "docker:index/volume:Volume"
IMAGE = "docker:index/remoteImage:RemoteImage"
SERVICE = "docker:index/service:Service"
LABELLED = (CONTAINER, NETWORK, VOLUME, SERVICE)


# --- reading properties ---------------------------------------------------------------------------
# A container, or a swarm service, is read back into the container plan's own records (model/container_plan.py,
# `Declared`): the rules read one shape, whichever engine runs it.
@dataclass(frozen=True)
class Viewed:
    """A container, or a swarm service as the container it runs, by its resource's type and name."""

    resource_type: str
    name: str
    c: Declared


def view(resource_type: str, name: str, props: Mapping[str, Any]) -> Viewed | None:
    if resource_type == CONTAINER:
        return Viewed(resource_type, name, declared_container(props))
    if resource_type == SERVICE:
        return Viewed(resource_type, name, declared_service(props))
    return None


def containers(args: StackValidationArgs) -> list[Viewed]:
    """Every container of the stack, and every swarm service as the container it runs."""
    return [v for r in args.resources if (v := view(r.resource_type, r.name, r.props)) is not None]


def viewed(args: ResourceValidationArgs) -> Viewed | None:
    return view(args.resource_type, args.name, args.props)


def _name(args: ResourceValidationArgs | PolicyResource | Viewed) -> str:
    return f"{args.resource_type.split(':')[-1]} {args.name!r}"


def _policy(
    kind: type, name: str, description: str, config: dict[str, dict[str, Any]] | None = None
) -> Callable[[Callable[..., None]], Any]:
    """Declares the rule below it a mandatory policy of `kind` (a stack's or a resource's), with its name,
    description and configuration schema."""

    def declare(validate: Callable[..., None]) -> Any:
        return kind(
            name=name,
            description=description,
            validate=validate,
            enforcement_level=EnforcementLevel.MANDATORY,
            config_schema=PolicyConfigSchema(properties=config) if config else None,
        )

    return declare


# --- 1: subnet capacity -------------------------------------------------------------------------------
@_policy(
    StackValidationPolicy,
    "subnet-capacity",
    "Every network's subnet holds all containers attached to it plus gateway and reserve.",
    {"reserve": {"type": "integer", "default": contract.ADDRESS_RESERVE}},
)
def subnet_capacity(args: StackValidationArgs, report: Report) -> None:
    reserve = int(args.get_config().get("reserve", contract.ADDRESS_RESERVE))
    attached: Counter[str] = Counter()
    for c in containers(args):
        for n in c.c.networks:
            attached[n.network] += 1
    for r in args.resources:
        if r.resource_type != NETWORK:
            continue
        name = r.props.get("name", r.name)
        for cfg in r.props.get("ipamConfigs") or []:
            if not cfg.get("subnet"):
                continue
            size = ipaddress.IPv4Network(cfg["subnet"]).num_addresses
            if attached[name] + reserve > size:
                report(
                    f"network {name!r} ({cfg['subnet']}, {size} addresses) cannot hold its {attached[name]} "
                    f"containers plus {reserve} reserved addresses; give it a larger subnet."
                )


# --- 2: networks do not overlap; static addresses inside their subnet and unique ---------------------
@_policy(
    StackValidationPolicy,
    "subnets-disjoint",
    "No two networks overlap; static addresses lie inside their subnet and are unique.",
)
def subnets_disjoint(args: StackValidationArgs, report: Report) -> None:
    nets: dict[str, ipaddress.IPv4Network] = {}
    for r in args.resources:
        if r.resource_type != NETWORK:
            continue
        for cfg in r.props.get("ipamConfigs") or []:
            if cfg.get("subnet"):
                nets[r.props.get("name", r.name)] = ipaddress.IPv4Network(cfg["subnet"])
    names = sorted(nets)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if nets[a].overlaps(nets[b]):
                report(f"networks {a!r} ({nets[a]}) and {b!r} ({nets[b]}) overlap; give each its own subnet.")
    seen: dict[tuple[str, str], str] = {}
    for c in containers(args):
        for n in c.c.networks:
            addr, net = n.address, n.network
            if not addr or net not in nets:
                continue
            if ipaddress.IPv4Address(addr) not in nets[net]:
                report(f"container {c.name!r} has address {addr} outside {net!r} ({nets[net]}).")
            if (net, addr) in seen:
                report(f"containers {seen[(net, addr)]!r} and {c.name!r} share address {addr} on {net!r}.")
            seen[(net, addr)] = c.name


# --- 3: worker isolation -------------------------------------------------------------------------------
@_policy(
    ResourceValidationPolicy,
    "worker-isolation",
    "Workers join only the internal network, publish no ports, are not privileged, mount no "
    f"Docker socket or system directory, write only into the profile's data and run as "
    f"{contract.WORKER_USER}.",
    {"dataDir": {"type": "string"}, "nodeDataDirs": {"type": "array", "items": {"type": "string"}}},
)
def worker_isolation(args: ResourceValidationArgs, report: Report) -> None:
    v = viewed(args)
    if v is None or v.c.role != "worker":
        return
    p, cfg = v.c, args.get_config()
    profile = p.labels.get(PROFILE_LABEL) or ""
    data_dirs = [cfg.get("dataDir"), *(cfg.get("nodeDataDirs") or [])]  # a swarm's nodes may keep data elsewhere
    internal = contract.resource_name(profile, "internal")
    nets = [n.network for n in p.networks]
    # a swarm service names its networks by id, unknown to the pack before they exist: one network, by count
    if (len(nets) != 1) if v.resource_type == SERVICE else (nets != [internal]):
        report(
            f"{_name(args)} joins {len(nets)} networks ({', '.join(map(str, nets)) or 'none'}); a worker joins the "
            f"internal team network {internal!r} only."
        )
    if p.network_mode not in (None, "", "bridge"):
        report(f"{_name(args)} uses network mode {p.network_mode!r}; a worker joins the internal team network only.")
    if p.ports:
        report(f"{_name(args)} publishes ports; workers publish none.")
    if p.privileged:
        report(f"{_name(args)} is privileged; workers never are.")
    if p.user != contract.WORKER_USER:
        report(
            f"{_name(args)} runs as {p.user or 'the image default (often root)'}; workers run as "
            f"{contract.WORKER_USER} (set user)."
        )
    for m in p.mounts:
        host = m.host_path
        if "docker.sock" in f"{host}{m.container_path}":
            report(f"{_name(args)} mounts the Docker socket; workers must not control Docker.")
        elif host.rstrip("/") in ("", *contract.SYSTEM_DIRS) or host == "/":
            report(
                f"{_name(args)} mounts the host's {host or '/'}; workers mount only the profile's data and "
                "read-only prompts."
            )
        elif not m.read_only and not any(ProfileDir.holds_data(host, profile, d) for d in data_dirs):
            report(f"{_name(args)} mounts {host} writable, outside the profile's data; workers write only there.")


# --- 4: memory ceilings ----------------------------------------------------------------------------------
@_policy(
    ResourceValidationPolicy,
    "memory-ceilings",
    f"Workers and routers have memory ceilings within the profile's and at most the contract's "
    f"({contract.WORKER_MEMORY_MAX_GIB} GiB and {contract.ROUTER_MEMORY_MAX_GIB} GiB).",
    {"workerMaxMb": {"type": "integer"}, "routerMaxMb": {"type": "integer"}},
)
def memory_ceilings(args: ResourceValidationArgs, report: Report) -> None:
    v = viewed(args)
    if v is None:
        return
    cfg = args.get_config()
    contract_max = {"worker": contract.WORKER_MEMORY_MAX_GIB, "router": contract.ROUTER_MEMORY_MAX_GIB}
    r = v.c.role
    if r not in contract_max:
        return
    # the profile's own ceiling (policy config from new_stack), never above the contract's
    limit_mb = min(cfg.get(f"{r}MaxMb") or contract_max[r] * contract.GIB_MB, contract_max[r] * contract.GIB_MB)
    memory = v.c.memory_mb
    problem = contract.memory_problem(r, memory, contract_max[r])
    if problem is None and memory is not None and memory > limit_mb:  # no problem: the memory is there
        problem = f"the {r} may use {memory:.0f} MB; the profile's {r} ceiling is {limit_mb:.0f} MB"
    if problem:
        report(f"{_name(args)}: {problem}.")


# --- 5: credentials stay where they belong ----------------------------------------------------------------
@_policy(
    StackValidationPolicy,
    "credentials-contained",
    "Only the egress proxy holds the model credential; workers hold only the local proxy "
    "credential; no label carries a password or token.",
    {"modelCredentialRoles": {"type": "array", "items": {"type": "string"}, "default": ["egress-proxy"]}},
)
def credentials_contained(args: StackValidationArgs, report: Report) -> None:
    allowed = args.get_config().get("modelCredentialRoles", ["egress-proxy"])
    model_values, secret_values = set(), set()
    cs = containers(args)
    for c in cs:
        for key, value in c.c.env.items():
            if len(value) >= 8 and SECRETISH.search(key):
                secret_values.add(value)
                if key in contract.MODEL_CREDENTIAL_ENVS:
                    model_values.add(value)
    for c in cs:
        r, env = c.c.role, c.c.env
        if c.c.secrets and r not in allowed:
            report(
                f"service {c.name!r} ({r}) is given the swarm secret(s) {list(c.c.secrets)}; only the "
                "egress proxy holds the model credential."
            )
        for key, value in env.items():
            if key in contract.MODEL_CREDENTIAL_ENVS and r not in allowed:
                report(
                    f"container {c.name!r} ({r}) carries the model credential {key}; only the egress proxy may. "
                    "Give it the local proxy credential instead."
                )
            elif r not in allowed and value in model_values:
                report(
                    f"container {c.name!r} carries the model credential's value in {key}; only the egress proxy may."
                )
            elif r == "worker" and SECRETISH.search(key) and key != contract.PROXY_CREDENTIAL_ENV:
                report(f"worker {c.name!r} has {key} in its environment; workers hold only the local proxy credential.")
            elif r == "worker" and value in secret_values and key != contract.PROXY_CREDENTIAL_ENV:
                report(
                    f"worker {c.name!r} holds a password or token in {key}; workers hold only the local proxy "
                    "credential."
                )
    for res in args.resources:
        for label, value in label_map(res.props).items():
            if SECRETISH.search(str(label)) or any(s in str(value) for s in secret_values):
                report(
                    f"{_name(res)} carries a password or token in label {label!r}; labels are not secret, remove it."
                )


# --- 6: published ports bind 127.0.0.1; a baseline publishes none ---------------------------------------
@_policy(
    ResourceValidationPolicy,
    "loopback-ports-only",
    "Published ports bind 127.0.0.1 only; a baseline publishes none.",
)
def loopback_ports(args: ResourceValidationArgs, report: Report) -> None:
    v = viewed(args)
    if v is None:
        return
    ports = v.c.ports
    if ports and v.c.labels.get(KIND_LABEL) == "baseline":
        report(f"{_name(args)} belongs to a baseline, which publishes no host port; remove its ports.")
    if v.resource_type == SERVICE:  # swarm cannot bind 127.0.0.1: host mode, on the node the service is pinned to
        for port in ports:
            if port.mode != "host" or v.c.node is None:
                report(
                    f"{_name(args)} publishes port {port.external} in {port.mode} mode; a swarm "
                    "service publishes operator ports in host mode, pinned to the manager (never the routing mesh)."
                )
        return
    for port in ports:
        if port.ip != "127.0.0.1":
            report(
                f"{_name(args)} publishes port {port.external} on {port.ip}; operator ports bind "
                "127.0.0.1 only (set ip='127.0.0.1')."
            )


# --- 7: images --------------------------------------------------------------------------------------------
@_policy(
    ResourceValidationPolicy,
    "image-pins",
    "Cleanroom images pinned by digest; no built image tagged latest; private tags for uncached builds.",
    {"allowUnpinnedCleanroom": {"type": "boolean", "default": False}},
)
def image_pins(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type != IMAGE:
        return
    name = str(args.props.get("name", ""))
    build = args.props.get("build")
    if not build:
        if (
            contract.CLEANROOM_TAG in name
            and "@sha256:" not in name
            and not args.get_config().get("allowUnpinnedCleanroom")
        ):
            report(
                f"{_name(args)} pulls {name} by tag; pin it by digest (cleanroom_digests) so every run uses the "
                "same cleanroom."
            )
        return
    tags = [name, *(build.get("tags") or [])]
    for tag in tags:
        last = tag.rsplit("/", 1)[-1]
        if ":" not in last or last.endswith(":latest"):
            report(f"{_name(args)} is tagged {tag!r}; built images carry an explicit tag other than latest.")
    if build.get("noCache"):
        shared = [t for t in tags if t.endswith((":local", ":pbench"))]
        if shared:
            report(f"{_name(args)} is an uncached build under the shared tag {shared[0]!r}; use a private tag.")


# --- 8: team limits ------------------------------------------------------------------------------------------
@_policy(
    StackValidationPolicy,
    "team-limits",
    "Mattermost users exceed every task's workers plus administrators; MySQL connections cover "
    f"{contract.CONNECTIONS_PER_ROUTER} per router plus the platform.",
    {"administrators": {"type": "integer"}, "platformConnections": {"type": "integer"}},
)
def team_limits(args: StackValidationArgs, report: Report) -> None:
    """The contract's team-limit rule on the rendered containers; the profile's numbers come from the policy config
    `new_stack` writes (the profile's defaults otherwise). The team's size is the bootstrap's own WORKERS (one task's,
    each with its router) and TASKS (every task's agents join the chat): the bootstrap sits beside Mattermost and MySQL
    in the platform, and with a stack per task no stack holds every task's workers and routers to count."""
    cfg = args.get_config()
    by_role = {c.c.role: c for c in containers(args)}
    registers = by_role["bootstrap"].c.env if "bootstrap" in by_role else {}
    workers = int(registers.get("WORKERS", 0))
    holder = {"mm_max_users_per_team": by_role.get("mattermost"), "mysql_max_connections": by_role.get("mysql")}
    mm, mysql = holder["mm_max_users_per_team"], holder["mysql_max_connections"]
    flags = [a for a in (mysql.c.command if mysql else ()) if str(a).startswith("--max-connections=")]
    problems = contract.team_limit_problems(
        workers=workers,
        tasks=len(registers.get("TASKS", "").split()),
        routers=workers,
        administrators=int(cfg.get("administrators", profile_default("administrators"))),
        mm_max_users=int(mm.c.env.get("MM_TEAMSETTINGS_MAXUSERSPERTEAM", contract.MM_DEFAULT_MAX_USERS))
        if mm
        else contract.MM_DEFAULT_MAX_USERS,
        mysql_max_connections=int(flags[-1].split("=", 1)[1]) if flags else contract.MYSQL_DEFAULT_MAX_CONNECTIONS,
        platform_connections=int(cfg.get("platformConnections", profile_default("mysql_platform_connections"))),
    )
    for key, problem in problems:
        if (where := holder[key]) is not None:
            report(f"container {where.name!r}: {key} {problem}.")


# --- 9: model settings ----------------------------------------------------------------------------------------
@_policy(
    ResourceValidationPolicy,
    "model-settings",
    "Model and effort match the pinned ones unless allowed; hours and deadline agree.",
    {
        "allowedModels": {"type": "array", "items": {"type": "string"}, "default": [contract.PINNED_MODEL]},
        "allowedEfforts": {"type": "array", "items": {"type": "string"}, "default": [contract.PINNED_EFFORT]},
    },
)
def model_settings(args: ResourceValidationArgs, report: Report) -> None:
    v = viewed(args)
    if v is None or v.c.role not in ("egress-proxy", "worker"):
        return
    cfg, env = args.get_config(), v.c.env
    models = cfg.get("allowedModels", [contract.PINNED_MODEL])
    efforts = cfg.get("allowedEfforts", [contract.PINNED_EFFORT])
    if "MODEL" in env and env["MODEL"] not in models:
        report(
            f"{_name(args)} uses model {env['MODEL']!r}; the pinned model is {models}. Set model, or allow it "
            "in the policy config (allowedModels)."
        )
    if "REASONING_EFFORT" in env and env["REASONING_EFFORT"] not in efforts:
        report(f"{_name(args)} uses reasoning effort {env['REASONING_EFFORT']!r}; the pinned effort is {efforts}.")
    if "PBENCH_HOURS" in env and "PBENCH_DEADLINE_SECONDS" in env:
        if contract.deadline_s(float(env["PBENCH_HOURS"])) != int(env["PBENCH_DEADLINE_SECONDS"]):
            report(
                f"{_name(args)}: hours {env['PBENCH_HOURS']} and deadline {env['PBENCH_DEADLINE_SECONDS']} s disagree."
            )


# --- 10: labels --------------------------------------------------------------------------------------------------
@_policy(
    ResourceValidationPolicy,
    "labels-present",
    "Every container, network and volume carries the profile and Compose-project labels.",
)
def labels_present(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type not in LABELLED:
        return
    labels = label_map(args.props)
    missing = [k for k in (PROFILE_LABEL, contract.COMPOSE_PROJECT_LABEL) if not labels.get(k)]
    if missing:
        report(
            f"{_name(args)} lacks the label(s) {', '.join(missing)}: the reboot guard and `destroy` "
            "find a profile's objects by them. Build labels with Profile.labels()."
        )
    elif not str(labels[contract.COMPOSE_PROJECT_LABEL]).startswith(f"{contract.PREFIX}-"):
        report(
            f"{_name(args)} has Compose project {labels[contract.COMPOSE_PROJECT_LABEL]!r}; it must start with "
            f"'{contract.PREFIX}-' so Agensh reboot guards recognise it."
        )


# --- 11: the swarm plan fits its nodes --------------------------------------------------------------------------
@_policy(
    StackValidationPolicy,
    "swarm-placement",
    "Swarm services are pinned to nodes of the profile and what runs on a node at once fits it.",
    {
        "nodes": {"type": "object"},
        "platformNode": {"type": ["string", "null"]},
        "platformMemoryMb": {"type": "integer"},
        "platformCpus": {"type": "number"},
        "workerCpus": {"type": "number"},
        "routerCpus": {"type": "number"},
    },
)
def swarm_placement(args: StackValidationArgs, report: Report) -> None:
    """Every service is pinned to a node of the profile; per node and task, the members' memory ceilings, the CPUs
    they count for and the pairs (plus the platform where it runs) fit the node, by placement.fit_problem."""
    services = [r for r in args.resources if r.resource_type == SERVICE]
    if not services:
        return
    cfg = args.get_config()
    nodes = cfg.get("nodes") or {}
    if not nodes:
        report(
            "the stack has swarm services but the policy config gives no node capacities (swarm-placement.nodes); "
            "run `.venv/bin/python -m scripts.cli new-stack <stack>`, which writes them"
        )
        return
    cpus = {"worker": float(cfg.get("workerCpus", 0)), "router": float(cfg.get("routerCpus", 0))}
    platform = placement.Load(int(cfg.get("platformMemoryMb", 0)), float(cfg.get("platformCpus", 0)))
    loads: dict[tuple[str, str | None], placement.Load] = {}
    platform_on: set[str] = set()
    for r in services:
        d = declared_service(r.props)
        node, r_role, task = d.node, d.role, d.labels.get(TASK_LABEL)
        if node is None:
            report(
                f"service {r.name!r} has no placement constraint {contract.node_constraint('<node>')}; the plan "
                "pins every service to a node."
            )
            continue
        if node not in nodes:
            report(f"service {r.name!r} is pinned to node {node!r}, which the profile's swarm does not list.")
            continue
        if r_role in cpus:
            load = placement.Load(round(d.memory_mb or 0), cpus[r_role], int(r_role == "worker"))
            loads[(node, task)] = loads.get((node, task), placement.Load()) + load
        elif task is None:
            platform_on.add(node)
            if cfg.get("platformNode") and node != cfg["platformNode"]:
                report(
                    f"service {r.name!r} runs on {node!r}; the platform's node is {cfg['platformNode']!r} "
                    "(its data stays there)."
                )
    for node in platform_on:  # the platform alone must fit too
        loads.setdefault((node, None), placement.Load())
    for (node, task), load in sorted(loads.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        n = nodes[node]
        cap = placement.Capacity(
            int(n["memoryMb"]), float(n["cpus"]), int(n["maxMembers"]) if n.get("maxMembers") is not None else None
        )
        if problem := placement.fit_problem(node, cap, load + (platform if node in platform_on else placement.Load())):
            report(f"{problem}{f' (task {task})' if task else ''}; add nodes or lower the ceilings.")


POLICIES = [
    subnet_capacity,
    subnets_disjoint,
    worker_isolation,
    memory_ceilings,
    credentials_contained,
    loopback_ports,
    image_pins,
    team_limits,
    model_settings,
    labels_present,
    swarm_placement,
]
