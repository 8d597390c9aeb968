"""Images: cleanroom and third-party images pulled, shared images built from the Agensh checkout, and the
per-task worker images. Every image's id is exposed for provenance.

`pulumi destroy` removes only the images under this run's private tag (`uncached: true`): every other image is
shared by the profiles of the host (the same pulled tags, the same shared build tags), and removing one would fail
while another profile's containers use it, or take it from under the next one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pulumi
import pulumi_docker as docker

from model import contract
from model.checkout import AGENT_BASE_IMAGE, COPILOT_VERSION, TASK_IMAGE, WORKER_IMAGE, shared_images
from model.profile import Profile

THIRD_PARTY = ("mysql", "gitea", "mattermost")


def context_digest(path: Path) -> str:
    """Hash of a build context's files, so an edited Dockerfile or source rebuilds the image (Git's own files
    are left out: they change with every fetch and can be large)."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and ".git" not in p.relative_to(path).parts):
        h.update(str(f.relative_to(path)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


class Images(pulumi.ComponentResource):
    cleanroom: dict[str, docker.RemoteImage]
    pulled: dict[str, docker.RemoteImage]
    shared: dict[str, docker.RemoteImage]
    workers: dict[str, docker.RemoteImage]

    def __init__(
        self,
        name: str,
        profile: Profile,
        checkout: Path,
        revision: str | None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("agensh:index:Images", name, None, opts)
        p = profile

        def private(image: str) -> bool:
            """Under this run's private tag: no other profile names it."""
            return p.private_tag is not None and image.rsplit(":", 1)[-1] == p.private_tag

        def pull(key: str, image: str) -> docker.RemoteImage:
            return docker.RemoteImage(
                f"{name}-{key}", name=image, keep_locally=True, opts=pulumi.ResourceOptions(parent=self)
            )

        def build(
            key: str,
            image: str,
            dockerfile: str,
            context: Path,
            role: str,
            task: str | None = None,
            args: dict[str, pulumi.Input[str]] | None = None,
            depends: list[pulumi.Resource] | None = None,
        ) -> docker.RemoteImage:
            labels = p.labels(role, task) | ({contract.REVISION_LABEL: revision} if revision else {})
            return docker.RemoteImage(
                f"{name}-{key}",
                name=image,
                keep_locally=not private(image),
                build=docker.RemoteImageBuildArgs(
                    context=str(context),
                    dockerfile=str(checkout / dockerfile),
                    no_cache=p.uncached,
                    build_args=args,
                    label=labels,  # `label`: the bridged provider applies it, `labels` it ignores
                    network_mode=p.swarm.build_network if p.swarm else None,
                ),
                triggers={
                    "context": context_digest(context),
                    "dockerfile": hashlib.sha256((checkout / dockerfile).read_bytes()).hexdigest(),
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends or []),
            )

        self.cleanroom = {t: pull(f"cleanroom-{contract.task_slug(t)}", p.cleanroom_image(t)) for t in p.tasks}
        self.pulled = {r: pull(r, getattr(p, f"{r}_image")) for r in THIRD_PARTY} if p.kind == "team" else {}
        values = {COPILOT_VERSION: p.copilot_version}
        self.shared = {
            i.role: build(
                i.role,
                p.image(i.role),
                i.dockerfile,
                checkout / i.context,
                i.role,
                args={a.name: values[a] for a in i.args} or None,
            )
            for i in shared_images(p.kind == "baseline")
        }
        base = self.shared["agent-base"]
        self.workers = {
            t: build(
                f"worker-{contract.task_slug(t)}",
                p.worker_image(t),
                WORKER_IMAGE.dockerfile,
                checkout / WORKER_IMAGE.context,
                "worker-image",
                t,
                args={TASK_IMAGE.name: self.cleanroom[t].name, AGENT_BASE_IMAGE.name: base.name},
                depends=[base, self.cleanroom[t]],
            )
            for t in p.tasks
        }
        self.by_name: dict[str, docker.RemoteImage] = (
            {p.cleanroom_image(t): i for t, i in self.cleanroom.items()}
            | {getattr(p, f"{r}_image"): i for r, i in self.pulled.items()}
            | {p.image(r): i for r, i in self.shared.items()}
            | {p.worker_image(t): i for t, i in self.workers.items()}
        )
        self.ids: pulumi.Output[dict[str, str]] = pulumi.Output.all(**{k: i.image_id for k, i in self.by_name.items()})
        self.register_outputs({"ids": self.ids})
