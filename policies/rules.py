"""The agensh policy rules. `__main__.py` only builds the pack from `POLICIES`; tests import this module.

Policies see the engine's view of resources: camelCase property names, numbers as floats, values unknown
at preview absent. Every rule reports the resource's name and the fix.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

CONTAINER = "docker:index/container:Container"
NETWORK = "docker:index/network:Network"
VOLUME = "docker:index/volume:Volume"
IMAGE = "docker:index/remoteImage:RemoteImage"
LABELLED = (CONTAINER, NETWORK, VOLUME)
PROFILE_LABEL = "agensh.profile"
ROLE_LABEL = "agensh.role"
COMPOSE_LABEL = "com.docker.compose.project"
WORKER_UID = "10000:10000"


def label_map(props: dict[str, Any]) -> dict[str, str]:
    return {item.get("label"): item.get("value") for item in props.get("labels") or [] if isinstance(item, dict)}


def role(props: dict[str, Any]) -> str | None:
    return label_map(props).get(ROLE_LABEL)


def _name(args: ResourceValidationArgs) -> str:
    return f"{args.resource_type.split(':')[-1]} {args.name!r}"


# --- rule 10: labels ----------------------------------------------------------------------------
def _labels(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in LABELLED or "labels" not in args.props:
        return
    labels = label_map(args.props)
    missing = [k for k in (PROFILE_LABEL, COMPOSE_LABEL) if not labels.get(k)]
    if missing:
        report(f"{_name(args)} lacks the label(s) {', '.join(missing)}: the reboot guard and `destroy` "
               "find a profile's objects by them. Build labels with components.naming.labels().")
    elif not str(labels[COMPOSE_LABEL]).startswith("omcgitea-"):
        report(f"{_name(args)} has Compose project {labels[COMPOSE_LABEL]!r}; it must start with 'omcgitea-' "
               "so Agensh reboot guards recognise it.")


labels_present = ResourceValidationPolicy(
    name="labels-present",
    description="Every container, network and volume carries the profile and Compose-project labels.",
    validate=_labels,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# --- rule 6: published ports bind 127.0.0.1 --------------------------------------------------------
def _loopback_ports(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CONTAINER:
        return
    for port in args.props.get("ports") or []:
        ip = port.get("ip", "0.0.0.0")
        if ip is not None and ip != "127.0.0.1":
            report(f"{_name(args)} publishes port {port.get('external', '?')} on {ip}; operator ports bind "
                   "127.0.0.1 only (set ip='127.0.0.1').")


loopback_ports = ResourceValidationPolicy(
    name="loopback-ports-only",
    description="Published ports bind 127.0.0.1 only.",
    validate=_loopback_ports,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# --- rule 3: worker isolation ---------------------------------------------------------------------
def _worker_isolation(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CONTAINER or role(args.props) != "worker":
        return
    p = args.props
    nets = p.get("networksAdvanced") or []
    if len(nets) > 1:
        report(f"{_name(args)} joins {len(nets)} networks; a worker joins the internal team network only.")
    if p.get("networkMode") not in (None, "", "bridge") and not nets:
        report(f"{_name(args)} uses network mode {p.get('networkMode')!r}; a worker joins the internal team network only.")
    if p.get("ports"):
        report(f"{_name(args)} publishes ports; workers publish none.")
    if p.get("privileged"):
        report(f"{_name(args)} is privileged; workers never are.")
    for v in p.get("volumes") or []:
        if "docker.sock" in str(v.get("hostPath", "")) or "docker.sock" in str(v.get("containerPath", "")):
            report(f"{_name(args)} mounts the Docker socket; workers must not control Docker.")
    if "user" in p and p.get("user") != WORKER_UID:
        report(f"{_name(args)} runs as {p.get('user')!r}; workers run as {WORKER_UID}.")


worker_isolation = ResourceValidationPolicy(
    name="worker-isolation",
    description="Workers join only the internal network, publish no ports, are not privileged, mount no "
                "Docker socket and run as 10000:10000.",
    validate=_worker_isolation,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# --- rule 2: networks do not overlap; static addresses inside their subnet and unique ---------------
def _subnets(args: StackValidationArgs, report: ReportViolation) -> None:
    nets: dict[str, ipaddress.IPv4Network] = {}
    for r in args.resources:
        if r.resource_type != NETWORK:
            continue
        for cfg in r.props.get("ipamConfigs") or []:
            if cfg.get("subnet"):
                nets[r.props.get("name", r.name)] = ipaddress.IPv4Network(cfg["subnet"])
    names = sorted(nets)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if nets[a].overlaps(nets[b]):
                report(f"networks {a!r} ({nets[a]}) and {b!r} ({nets[b]}) overlap; give each its own subnet.")
    seen: dict[tuple[str, str], str] = {}
    for r in args.resources:
        if r.resource_type != CONTAINER:
            continue
        for n in r.props.get("networksAdvanced") or []:
            addr, net = n.get("ipv4Address"), n.get("name")
            if not addr or net not in nets:
                continue
            if ipaddress.IPv4Address(addr) not in nets[net]:
                report(f"container {r.name!r} has address {addr} outside {net!r} ({nets[net]}).")
            if (net, addr) in seen:
                report(f"containers {seen[(net, addr)]!r} and {r.name!r} share address {addr} on {net!r}.")
            seen[(net, addr)] = r.name


subnets_disjoint = StackValidationPolicy(
    name="subnets-disjoint",
    description="No two networks overlap; static addresses lie inside their subnet and are unique.",
    validate=_subnets,
    enforcement_level=EnforcementLevel.MANDATORY,
)


POLICIES: list[Any] = [labels_present, loopback_ports, worker_isolation, subnets_disjoint]
