"""One docker.Container from its planned container (model/container_plan.py), field by field: the one place a
container of one host is declared."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pulumi_docker as docker

from model.container_plan import PlannedContainer, Planner
from model.contract import READY_TIMEOUT_S
from model.profile import Profile
from model.services import SecretRef, ServiceSpec, secret_key, secret_setting
from model.topology import Placement

from .images import Images
from .networks import Networks, docker_labels
from .sdk import Container, shared_outputs

# How an engine declares one container of the topology (Platform and Team call it with what it waits for): a
# container here, a swarm service in components/swarm.py. The engine plans it and waits for its image too.
Declare = Callable[[str, Placement, pulumi.ResourceOptions], pulumi.Resource]


NetworkNames = Mapping[str, pulumi.Input[str]]  # by kind: a network's Docker name (its resource's output, or a name)


def network_names(nets: Networks) -> NetworkNames:
    """The names of the stack's own networks, as outputs: a container that joins one waits for it."""
    return {kind: n.name for kind, n in nets.by_kind.items()}


def declarer(p: Profile, nets: NetworkNames, secrets: dict[str, pulumi.Output[str]], images: Images | None) -> Declare:
    """`nets`, `images`: the stack's own networks and images, or (a task stack of a per-task profile) the names of
    those its platform stack made and no images to wait for."""
    entry, planner = secret_entries(secrets), Planner(p)

    def declare(name: str, c: Placement, opts: pulumi.ResourceOptions) -> Container:
        planned = planner.plan(c)
        return container(name, p, planned, nets, entry, after_image(opts, images, planned.spec) if images else opts)

    return declare


def after_image(opts: pulumi.ResourceOptions, images: Images, s: ServiceSpec) -> pulumi.ResourceOptions:
    """The options of a container that waits for its image too."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[images.by_name[s.image]]))


def secret_value(var: str, ref: SecretRef, secrets: dict[str, pulumi.Output[str]]) -> pulumi.Output[str]:
    """A secret as its variable gets it (services.secret_setting), a secret Output still."""
    return secrets[secret_key(ref)].apply(lambda value: secret_setting(var, ref, value))


SecretEntry = Callable[[str, SecretRef], pulumi.Output[str]]  # (variable, its secret) -> `NAME=value`


def secret_entries(secrets: dict[str, pulumi.Output[str]]) -> SecretEntry:
    """`NAME=value` of each secret variable, made once and shared by every container that gets it
    (components/sdk.py)."""

    @shared_outputs
    def entry(var: str, ref: SecretRef) -> pulumi.Output[str]:
        return pulumi.Output.concat(var, "=", secret_value(var, ref, secrets))

    return entry


def env_list(s: ServiceSpec, entry: SecretEntry) -> list[pulumi.Input[str]]:
    """The container's environment as Docker takes it (`NAME=value`), its secrets as they resolve."""
    return [
        *(f"{k}={v}" for k, v in sorted(s.env.items())),
        *(entry(k, key) for k, key in sorted(s.secret_env.items())),
    ]


def container_args(planned: PlannedContainer, entry: SecretEntry, **rest: Any) -> docker.ContainerArgs:
    """A planned container's inputs that are the same on either engine (its name, image, hostname, environment,
    user, labels, mounts and command), with the engine's `rest`."""
    c, s = planned.placement, planned.spec
    return docker.ContainerArgs(
        name=c.name,
        image=s.image,
        hostname=c.hostname,
        envs=env_list(s, entry),
        user=s.user,
        # the stub leaves out the dict form the provider takes (the same as a network's labels)
        labels=docker_labels(planned.labels),  # type: ignore[arg-type]
        volumes=[
            docker.ContainerVolumeArgs(host_path=m.host_path, container_path=m.container_path, read_only=m.read_only)
            for m in s.mounts
        ],
        command=list(s.command) if s.command else None,
        **rest,
    )


def container(
    resource_name: str,
    p: Profile,
    planned: PlannedContainer,
    nets: NetworkNames,
    entry: SecretEntry,
    opts: pulumi.ResourceOptions,
) -> Container:
    s, h = planned.spec, planned.health
    assert planned.restart == "no"  # the provider's default: not given (see below)
    attach = [
        docker.ContainerNetworksAdvancedArgs(
            name=nets[a.network], ipv4_address=a.address, aliases=list(a.aliases) if a.aliases is not None else None
        )
        for a in planned.networks
    ]
    health = (
        docker.ContainerHealthcheckArgs(
            tests=list(h.test), interval=h.interval, timeout=h.timeout, retries=h.retries, start_period=h.start_period
        )
        if h
        else None
    )
    return Container(
        resource_name,
        container_args(
            planned,
            entry,
            networks_advanced=attach,
            ports=[
                docker.ContainerPortArgs(
                    internal=planned.published.internal, external=planned.published.external, ip="127.0.0.1"
                )
            ]
            if planned.published
            else None,
            entrypoints=list(s.entrypoint) if s.entrypoint else None,
            network_mode="none" if not attach else None,
            capabilities=docker.ContainerCapabilitiesArgs(drops=["ALL"]) if s.sandboxed else None,
            security_opts=["no-new-privileges"] if s.sandboxed else None,
            memory=s.memory_mb,
            # the ceiling holds swap too; unset, Docker gives twice the memory and the provider, reading that back,
            # plans to remove it on every later `up` (a perpetual diff)
            memory_swap=s.memory_mb,
            healthcheck=health,
            # Only what differs from the provider's defaults (start, must_run; no wait, attach, logs or restart): every
            # input given costs the provider's Check and Create again per container (docs/performance.md).
            wait=True if s.waited else None,
            wait_timeout=READY_TIMEOUT_S if s.waited else None,
            must_run=False if s.one_shot or s.stopped_on_purpose else None,
            start=False if s.woken else None,
            attach=True if s.one_shot else None,
            logs=True if s.one_shot else None,
            cgroup_parent=p.systemd_slice,
        ),
        opts,
        exit_code=s.one_shot,
    )
