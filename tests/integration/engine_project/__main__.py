"""Engine test program: an internal network with a fixed subnet, an image built offline, a container on the
network, and a command that reads the container's address from the outputs."""

import ipaddress

import pulumi
import pulumi_docker as docker
from pulumi_command import local

cfg = pulumi.Config()
run = cfg.require("run")  # unique per test run: names and the label that cleanup looks for
subnet = ipaddress.ip_network(cfg.require("subnet"))
labels = {"agensh.test": run, "agensh.profile": "enginetest", "com.docker.compose.project": "omcgitea-enginetest"}
label_list = [{"label": k, "value": v} for k, v in labels.items()]

net = docker.Network(
    "net",
    name=f"agensh-enginetest-{run}",
    internal=True,
    ipam_configs=[docker.NetworkIpamConfigArgs(subnet=str(subnet))],
    labels=label_list,
    opts=pulumi.ResourceOptions(delete_before_replace=True),
)
image = docker.RemoteImage(
    "image",
    name=f"agensh-enginetest:{run}",
    keep_locally=False,
    build=docker.RemoteImageBuildArgs(context=cfg.require("context"), label=labels),
)
address = str(subnet.network_address + 5)
ports = []
if cfg.get_bool("breakPolicy"):  # publishes on every interface: the loopback-ports-only rule refuses it
    ports = [docker.ContainerPortArgs(internal=8080, external=cfg.require_int("port"), ip="0.0.0.0")]
container = docker.Container(
    "box",
    name=f"agensh-enginetest-{run}",
    image=image.image_id,
    labels=label_list,
    networks_advanced=[docker.ContainerNetworksAdvancedArgs(name=net.name, ipv4_address=address)],
    command=["/bin/busybox", "sleep", "3600"],
    ports=ports,
)
read_ip = local.Command(
    "read-ip", create='echo "$IP"', environment={"IP": container.network_datas.apply(lambda nets: nets[0].ip_address)}
)
pulumi.export("ip", read_ip.stdout)
pulumi.export("network", net.name)
