"""Swarm: one team over several Docker hosts (engine: swarm), declared with the official docker provider's Swarm
resources.

Everything is created through the manager's Docker API (`docker.Provider(host=swarm.docker_host)`):
- overlay networks: the internal team network (`internal`, attachable for the one-shot bootstrap), the data network
  (internal: MySQL only there, with Gitea, Mattermost and the routers), the egress network (internal when
  `egress_internal`), and the operator network that carries the ports the steps reach on the manager (Docker
  publishes no port of a task on internal networks only);
- every image the services run is tagged into the registry on the manager and pushed (`docker.Tag`,
  `docker.RegistryImage`); services run it by digest, so every node pulls the same bytes;
- the model credential as a `docker.Secret`, given only to the egress proxy (as a file, `<ENV>_FILE` names it);
- the files the containers mount from the manager only (the Agensh checkout's prompts, the project's script that
  creates the routers' database user in MySQL's initdb.d) as `docker.ServiceConfig`s;
- each container of the container plan (model/container_plan.py) as a one-replica `docker.Service` (same image, user,
  environment, mounts, memory ceiling, health check, no restart; a worker with every capability dropped, and created
  with 0 replicas: the wake step scales it to 1 at its ramp offset), pinned by a placement constraint to the node the
  plan gives it; its data is on that node (the node's `data_root`). The one-shot bootstrap runs to completion as a
  container on the manager, attached to the internal overlay network.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pulumi
import pulumi_docker as docker

from model import contract, steps
from model import step_inputs as si
from model.container_plan import MIB, MODEL_SECRET_KEY, ContainerPlan, PlannedContainer, on_node
from model.profile import Profile
from model.project import SCRIPTS
from model.rundir import ProfileDir
from model.services import Mount
from model.settings import SwarmNode
from model.topology import Layout, Placement

from .containers import after_image, container_args, secret_entries, secret_value
from .host_units import HostUnits
from .images import Images
from .networks import docker_networks
from .sdk import Container
from .step_resources import Step

CONVERGE = {"delay": "2s", "timeout": "5m"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def registry_name(registry: str, image: str) -> str:
    """`omcgitea-board:local` -> `<registry>/omcgitea-board:local` (an image of another registry keeps its path)."""
    return f"{registry}/{image}"


class Swarm(pulumi.ComponentResource):
    provider: docker.Provider
    networks: dict[str, docker.Network]
    images: Images  # what the services' images are built from (set by `publish`)
    refs: dict[str, pulumi.Output[str]]  # image name -> `<registry>/<repo>@<digest>`
    digests: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        p: Profile,
        layout: Layout,
        secrets: dict[str, pulumi.Output[str]],
        checkout: Path,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("agensh:index:Swarm", name, None, opts)
        assert p.swarm is not None
        self.name, self.p, self.s, self.secrets, self.checkout = name, p, p.swarm, secrets, checkout
        self.layout = layout
        self.entry = secret_entries(secrets)
        self.containers = ContainerPlan.of(p, layout)  # each on the node that runs it
        self.planned = self.containers.by_name
        self.provider = docker.Provider(
            f"{name}-manager",
            host=self.s.docker_host,
            registry_auth=[docker.ProviderRegistryAuthArgs(address=f"http://{self.s.registry}", auth_disabled=True)],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.networks = docker_networks(name, p, layout, self._child(), overlay=True)
        self.model_secret = docker.Secret(
            f"{name}-model-credential",
            data=secrets[MODEL_SECRET_KEY].apply(b64),
            labels=[docker.SecretLabelArgs(label=k, value=v) for k, v in sorted(p.labels("model-credential").items())],
            opts=self._child(),
        )
        self.configs = self._checkout_configs()
        self.refs: dict[str, pulumi.Output[str]] = {}
        self.digests = pulumi.Output.from_input({})
        self.register_outputs({"networks": layout.network_names})

    def _child(self, **kw) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=self.provider, **kw)

    def _checkout_configs(self) -> dict[str, docker.ServiceConfig]:
        """Each file the services mount from the manager only (see `from_manager`), by its path, as a swarm config."""
        out = {}
        sources = {
            Path(m.host_path)
            for c in self.containers.containers
            for m in c.spec.mounts
            if not c.spec.one_shot and self.from_manager(m)
        }
        files = {f for src in sources for f in ([src] if src.is_file() else src.rglob("*")) if f.is_file()}
        for path in sorted(files):
            base = self.p.checkout_dir if path.is_relative_to(self.p.checkout_dir) else SCRIPTS.parent
            out[str(path)] = docker.ServiceConfig(
                f"{self.name}-config-{contract.task_slug(str(path.relative_to(base)))}",
                data=b64(path.read_text()),
                labels=[
                    docker.ServiceConfigLabelArgs(label=k, value=v)
                    for k, v in sorted(self.p.labels("checkout-config").items())
                ],
                opts=self._child(),
            )
        return out

    def publish(self, images: Images) -> None:
        """Tag every image a service runs into the manager's registry and push it; services run it by digest."""
        self.images = images
        wanted = sorted({c.spec.image for c in self.containers.containers if not c.spec.one_shot})
        pushed = {}
        for image in wanted:
            built = images.by_name[image]
            key = contract.task_slug(image)
            target = registry_name(self.s.registry, image)
            tag = docker.Tag(
                f"{self.name}-tag-{key}",
                source_image=built.name,
                target_image=target,
                tag_triggers=[built.image_id],
                opts=self._child(),
            )
            pushed[image] = docker.RegistryImage(
                f"{self.name}-push-{key}",
                name=tag.target_image,
                insecure_skip_verify=True,
                keep_remotely=False,
                triggers={"image": built.image_id},
                opts=self._child(),
            )
            self.refs[image] = pulumi.Output.concat(contract.image_repository(target), "@", pushed[image].sha256_digest)
        self.digests = pulumi.Output.all(**self.refs)

    def from_manager(self, m: Mount) -> bool:
        """A mount of the Agensh checkout or of this project's scripts, which only the manager has: its files travel as
        swarm configs."""
        return any(Path(m.host_path).is_relative_to(root) for root in (self.p.checkout_dir, SCRIPTS))

    def on(self, c: Placement) -> SwarmNode:
        node = self.planned[c.name].node
        assert node is not None
        return self.s.node(node)

    def prepare_nodes(self, after: pulumi.Resource, opts: pulumi.ResourceOptions) -> Step:
        """The step that makes every bind source on its node before any service starts (and removes the nodes'
        profile directories and pulled images on destroy)."""

        def node_dirs(image: str) -> list[si.NodeDirs]:
            views = {node.name: on_node(self.p, node) for node in self.s.nodes}
            dirs: dict[str, set[str]] = {name: set() for name in views}
            owned: dict[str, set[str]] = {name: set() for name in views}
            for planned in self.containers.containers:  # each container once, on the node the plan gives it
                c, s, node_name = planned.placement, planned.spec, planned.node
                assert node_name is not None
                for m in () if s.one_shot else s.mounts:
                    if not self.from_manager(m):
                        archive = c.role == "worker" and m.host_path == self._archive(views[node_name], c)
                        (owned if archive else dirs)[node_name].add(m.host_path)
            out = []
            for node in self.s.nodes:
                docker_host = self.s.docker_host_of(node)
                assert docker_host is not None, node.name  # placement.problems refuses a node without one
                out.append(
                    si.NodeDirs(
                        node=node.name,
                        docker_host=docker_host,
                        profile_dir=str(ProfileDir.of(views[node.name]).path),
                        dirs=sorted(dirs[node.name]),
                        owned=sorted(owned[node.name]),
                        image=image,
                        manager=node.role == "manager",
                    )
                )
            return out

        helper = self.refs[self.p.worker_image(self.p.tasks[0])]
        published = sorted(registry_name(self.s.registry, image) for image in self.refs)
        return Step(
            self.name,
            steps.SWARM_NODES,
            si.SwarmNodesInputs(profile=self.p.profile, nodes=[], published=published),
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[after])),
            late={"nodes": helper.apply(node_dirs)},
        )

    def _archive(self, pn: Profile, c: Placement) -> str:
        assert c.task is not None and c.index is not None
        return str(ProfileDir.of(pn).archive_dir(contract.agent_id(c.task, c.index), pn.run_id))

    def archives(self, task: str) -> pulumi.Output[dict[str, si.NodeArchive]]:
        """Where each worker of the task that runs off the manager seals its archive, for the shutdown to collect."""
        image = self.refs[self.p.worker_image(task)]

        def where(ref: str) -> dict[str, si.NodeArchive]:
            out = {}
            for c in self.layout.members(task, "worker"):
                node = self.on(c)
                host = self.s.docker_host_of(node)
                if node.role != "manager" and host is not None:
                    out[c.name] = si.NodeArchive(
                        docker_host=host, path=self._archive(on_node(self.p, node), c), image=ref
                    )
            return out

        return image.apply(where)

    def host_units(self, ssh_private_key: pulumi.Input[str] | None, opts: pulumi.ResourceOptions) -> list[HostUnits]:
        """The slice and the reboot guard on every node but the manager, over SSH (the manager's are the stack's
        own)."""
        return [
            HostUnits(
                f"{self.name}-host-{n.name}",
                self.p.model_copy(
                    update={
                        "host_units": "remote",
                        "ssh_host": n.ssh_host,
                        "ssh_port": n.ssh_port,
                        "ssh_user": n.ssh_user,
                    }
                ),
                opts,
                ssh_private_key,
            )
            for n in self.s.nodes
            if n.role != "manager" and n.ssh_host
        ]

    def declare(self, resource_name: str, c: Placement, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        """The engine's declaration of one container of the topology (see Platform and Team)."""
        planned = self.planned[c.name]  # its data on the node that runs it
        opts = pulumi.ResourceOptions.merge(
            after_image(opts, self.images, planned.spec), pulumi.ResourceOptions(provider=self.provider)
        )  # parent: the caller's
        if planned.spec.one_shot:
            return self._one_shot(resource_name, planned, opts)
        return self._service(resource_name, planned, opts)

    def _env(
        self, planned: PlannedContainer
    ) -> tuple[dict[str, pulumi.Input[str]], list[docker.ServiceTaskSpecContainerSpecSecretArgs]]:
        s = planned.spec
        env: dict[str, pulumi.Input[str]] = dict(s.env)
        refs = []
        for k, ref in sorted(s.secret_env.items()):
            # the model credential: a swarm secret file, never the environment
            if k in planned.file_secrets:
                path = planned.file_secrets[k]
                env[f"{k}_FILE"] = path
                refs.append(
                    docker.ServiceTaskSpecContainerSpecSecretArgs(
                        secret_id=self.model_secret.id,
                        secret_name=self.model_secret.name,
                        file_name=path,
                        file_uid="0",
                        file_gid="0",
                        file_mode=0o400,
                    )
                )
            else:
                env[k] = secret_value(k, ref, self.secrets)
        return env, refs

    def _service(self, resource_name: str, planned: PlannedContainer, opts: pulumi.ResourceOptions) -> docker.Service:
        c, s, h = planned.placement, planned.spec, planned.health
        assert planned.node is not None and planned.restart == "no"
        env, secret_refs = self._env(planned)
        mounts, configs = [], []
        for m in s.mounts:
            if self.from_manager(m):  # the swarm configs of its files
                for path in (path for path in self.configs if Path(path).is_relative_to(m.host_path)):
                    cfg, rel = self.configs[path], Path(path).relative_to(m.host_path)
                    configs.append(
                        docker.ServiceTaskSpecContainerSpecConfigArgs(
                            config_id=cfg.id,
                            config_name=cfg.name,
                            file_mode=0o444,
                            file_name=m.container_path if rel == Path(".") else f"{m.container_path}/{rel}",
                        )
                    )
            else:
                mounts.append(
                    docker.ServiceTaskSpecContainerSpecMountArgs(
                        type="bind", source=m.host_path, target=m.container_path, read_only=m.read_only
                    )
                )
        attach = [
            docker.ServiceTaskSpecNetworksAdvancedArgs(
                id=self.networks[a.network].id, aliases=list(a.aliases) if a.aliases is not None else None
            )
            for a in planned.networks
        ]
        labels = planned.labels
        health = (
            docker.ServiceTaskSpecContainerSpecHealthcheckArgs(
                tests=list(h.test),
                interval=h.interval,
                timeout=h.timeout,
                retries=h.retries,
                start_period=h.start_period,
            )
            if h
            else None
        )
        return docker.Service(
            resource_name,
            name=c.name,
            labels=[docker.ServiceLabelArgs(label=k, value=v) for k, v in sorted(labels.items())],
            task_spec=docker.ServiceTaskSpecArgs(
                container_spec=docker.ServiceTaskSpecContainerSpecArgs(
                    image=self.refs[s.image],
                    hostname=c.hostname,
                    env=env,
                    user=s.user,
                    commands=list(s.entrypoint) if s.entrypoint else None,
                    args=list(s.command) if s.command else None,
                    mounts=mounts,
                    configs=configs,
                    secrets=secret_refs,
                    healthcheck=health,
                    # sandboxed: every capability dropped; swarm's container spec (API 1.41, the provider) has no
                    # no-new-privileges, so a sandboxed service runs without it (docs/swarm.md says so)
                    cap_drops=["ALL"] if s.sandboxed else None,
                    labels=[
                        docker.ServiceTaskSpecContainerSpecLabelArgs(label=k, value=v)
                        for k, v in sorted(labels.items())
                    ],
                    stop_grace_period=f"{planned.stop_grace_s}s" if planned.stop_grace_s is not None else None,
                ),
                networks_advanceds=attach,
                placement=docker.ServiceTaskSpecPlacementArgs(constraints=[contract.node_constraint(planned.node)]),
                resources=docker.ServiceTaskSpecResourcesArgs(
                    limits=docker.ServiceTaskSpecResourcesLimitsArgs(memory_bytes=s.memory_mb * MIB)
                )
                if s.memory_mb
                else None,
                restart_policy=docker.ServiceTaskSpecRestartPolicyArgs(condition="none", delay="0s", window="0s"),
            ),
            # a woken worker is created with no task: the wake step scales it to 1 at its ramp offset
            mode=docker.ServiceModeArgs(replicated=docker.ServiceModeReplicatedArgs(replicas=0 if s.woken else 1)),
            # names resolve to the task itself (DNS round robin of one): no virtual IP, which needs IPVS on every node
            endpoint_spec=docker.ServiceEndpointSpecArgs(
                mode="dnsrr",
                ports=[
                    docker.ServiceEndpointSpecPortArgs(
                        target_port=planned.published.internal,
                        published_port=planned.published.external,
                        publish_mode="host",
                    )
                ]
                if planned.published
                else None,
            ),
            converge_config=docker.ServiceConvergeConfigArgs(**CONVERGE),
            # stopped on purpose (woken, scaled to 0 at shutdown): a refresh must not start or stop it again
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(ignore_changes=["mode"] if s.stopped_on_purpose else None)
            ),
        )

    def _one_shot(self, resource_name: str, planned: PlannedContainer, opts: pulumi.ResourceOptions) -> Container:
        """A container that runs to completion on the manager, attached to the internal overlay network."""
        return Container(
            resource_name,
            container_args(
                planned,
                self.entry,
                networks_advanced=[
                    docker.ContainerNetworksAdvancedArgs(
                        name=self.networks[a.network].name, aliases=list(a.aliases) if a.aliases is not None else None
                    )
                    for a in planned.networks
                ],
                must_run=False,
                attach=True,
                logs=True,
            ),
            opts,
            exit_code=True,
        )
