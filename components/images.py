"""Images: the profile's image plan (model/image_plan.py) as resources: cleanroom and third-party images pulled, shared
images built from the Agensh checkout, and the per-task worker images. Every image's id is exposed for provenance.

`pulumi destroy` removes only the images under this run's private tag (`uncached: true`): every other image is
shared by the profiles of the host (the same pulled tags, the same shared build tags), and removing one would fail
while another profile's containers use it, or take it from under the next one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pulumi
import pulumi_docker as docker

from model.image_plan import PlannedImage, build_labels, plan, private
from model.profile import Profile


def context_digest(path: Path) -> str:
    """Hash of a build context's files, so an edited Dockerfile or source rebuilds the image (Git's own files
    are left out: they change with every fetch and can be large)."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and ".git" not in p.relative_to(path).parts):
        h.update(str(f.relative_to(path)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


class Images(pulumi.ComponentResource):
    """The profile's image plan (model/image_plan.py), one RemoteImage per entry, in its order."""

    by_name: dict[str, docker.RemoteImage]  # image name -> its resource

    def __init__(
        self,
        name: str,
        profile: Profile,
        checkout: Path,
        revision: str | None,
        opts: pulumi.ResourceOptions | None = None,
        build_network: str | None = None,
    ):
        """`build_network`: the network a build's steps run on (a swarm manager's own, where it has one)."""
        super().__init__("agensh:index:Images", name, None, opts)
        p = profile

        made: dict[str, docker.RemoteImage] = {}  # plan key -> its resource

        def make(image: PlannedImage) -> docker.RemoteImage:
            """Pulled (kept: other profiles use the same tags), or built on the planned images it names."""
            b = image.build
            opts = pulumi.ResourceOptions(parent=self, depends_on=[made[k] for k in b.after] if b else [])
            if b is None:
                return docker.RemoteImage(f"{name}-{image.key}", name=image.name, keep_locally=True, opts=opts)
            context, dockerfile = checkout / b.context, checkout / b.dockerfile
            return docker.RemoteImage(
                f"{name}-{image.key}",
                name=image.name,
                keep_locally=not private(p, image),
                build=docker.RemoteImageBuildArgs(
                    context=str(context),
                    dockerfile=str(dockerfile),
                    no_cache=p.uncached,
                    build_args=b.args or None,
                    label=build_labels(p, image, revision),  # `label`: the bridged provider applies it, `labels` not
                    network_mode=build_network,
                ),
                triggers={
                    "context": context_digest(context),
                    "dockerfile": hashlib.sha256(dockerfile.read_bytes()).hexdigest(),
                },
                opts=opts,
            )

        self.by_name = {}
        for image in plan(p):
            made[image.key] = self.by_name[image.name] = make(image)
        self.ids: pulumi.Output[dict[str, str]] = pulumi.Output.all(**{k: i.image_id for k, i in self.by_name.items()})
        self.register_outputs({"ids": self.ids})
