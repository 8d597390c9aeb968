"""A team declared by hand that breaks policy rules 1 (subnet capacity), 3 (worker isolation: a second network, no
user, a mount of the host's /) and 5 (credentials): the pack must refuse it at preview, before anything exists."""

import pulumi
import pulumi_docker as docker

run = pulumi.Config().require("run")


def labels(role: str) -> list[dict[str, str]]:
    return [
        {"label": k, "value": v}
        for k, v in {
            "agensh.profile": "policytest",
            "com.docker.compose.project": "omcgitea-policytest",
            "agensh.role": role,
            "agensh.task": "t",
            "agensh.test": run,
        }.items()
    ]


tiny = docker.Network(
    "tiny",
    name=f"agensh-policytest-{run}-tiny",
    internal=True,
    labels=labels("net"),
    ipam_configs=[docker.NetworkIpamConfigArgs(subnet="10.253.9.0/29")],
)
egress = docker.Network(
    "egress",
    name=f"agensh-policytest-{run}-egress",
    internal=True,
    labels=labels("net"),
    ipam_configs=[docker.NetworkIpamConfigArgs(subnet="10.253.10.0/29")],
)
for n in range(6):  # six containers and three reserved addresses do not fit a /29 (rule 1)
    nets = [docker.ContainerNetworksAdvancedArgs(name=tiny.name, ipv4_address=f"10.253.9.{n + 2}")]
    envs = ["LLM_PROXY_TOKEN=proxy-credential-1234"]
    if n == 0:  # a worker on the egress network too (rule 3), holding the model credential (rule 5)
        nets.append(docker.ContainerNetworksAdvancedArgs(name=egress.name, ipv4_address="10.253.10.2"))
        envs = ["LLM_UPSTREAM_TOKEN=sk-the-real-model-credential"]
    hostile = n == 1  # no user (the image's root) and the host's / mounted
    docker.Container(
        f"worker-{n}",
        name=f"agensh-policytest-{run}-w{n}",
        image="agensh-base:bookworm",
        labels=labels("worker"),
        networks_advanced=nets,
        envs=envs,
        user=None if hostile else "10000:10000",
        volumes=[docker.ContainerVolumeArgs(host_path="/", container_path="/host")] if hostile else None,
        memory=1024,
        must_run=False,
    )
