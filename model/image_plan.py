"""The image plan: every image a profile needs, in the order they are made, pulled or built from which Dockerfile and
context with which build arguments and labels.

One plan for both its readers: `components/images.py` declares a RemoteImage per entry, and `scripts.cli check`
pulls or builds the same images the same way before anything is created, so the two can never name different images.

Pure Python, no Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import contract
from .checkout import AGENT_BASE, AGENT_BASE_IMAGE, COPILOT_VERSION, TASK_IMAGE, WORKER_IMAGE, shared_images
from .profile import Profile

THIRD_PARTY = ("mysql", "gitea", "mattermost")  # pulled for a team: the profile's <role>_image


@dataclass(frozen=True)
class Build:
    """How an image is built: paths relative to the checkout; `args` maps a build argument to its value, and `after`
    names the keys of the planned images it is built on (their names are in `args`)."""

    dockerfile: str
    context: str
    args: dict[str, str] = field(default_factory=dict)
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlannedImage:
    key: str  # unique in the plan; the RemoteImage's name is `<component>-<key>`
    name: str  # the image's name and tag
    role: str  # its role label
    task: str | None = None
    build: Build | None = None  # None: pulled (used as found locally, else pulled)


def plan(p: Profile) -> list[PlannedImage]:
    """The profile's images in the order they are made: the cleanroom images, a team's third-party services, the
    shared images built from the checkout, then one worker image per task built on its cleanroom and the agent base."""
    out = [PlannedImage(f"cleanroom-{contract.task_slug(t)}", p.cleanroom_image(t), "cleanroom", t) for t in p.tasks]
    if p.kind == "team":
        out += [PlannedImage(r, getattr(p, f"{r}_image"), r) for r in THIRD_PARTY]
    values = {COPILOT_VERSION: p.copilot_version}
    out += [
        PlannedImage(
            i.role, p.image(i.role), i.role, build=Build(i.dockerfile, i.context, {a.name: values[a] for a in i.args})
        )
        for i in shared_images(p.kind == "baseline")
    ]
    for t in p.tasks:
        cleanroom = f"cleanroom-{contract.task_slug(t)}"
        args = {TASK_IMAGE.name: p.cleanroom_image(t), AGENT_BASE_IMAGE.name: p.image(AGENT_BASE.role)}
        out.append(
            PlannedImage(
                f"worker-{contract.task_slug(t)}",
                p.worker_image(t),
                "worker-image",
                t,
                Build(WORKER_IMAGE.dockerfile, WORKER_IMAGE.context, args, after=(AGENT_BASE.role, cleanroom)),
            )
        )
    return out


def private(p: Profile, image: PlannedImage) -> bool:
    """Under this run's private tag (an uncached profile's build): no other profile names it, so it is not kept."""
    return p.private_tag is not None and image.name.rsplit(":", 1)[-1] == p.private_tag


def build_labels(p: Profile, image: PlannedImage, revision: str | None) -> dict[str, str]:
    """The labels a built image carries: the profile's, and the checkout revision it was built from."""
    return p.labels(image.role, image.task) | ({contract.REVISION_LABEL: revision} if revision else {})
