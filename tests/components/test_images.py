"""A profile's destroy removes only the images under its run's private tag: pulled images and shared build tags are
used by the other profiles of the host, and stay."""

from __future__ import annotations

from pathlib import Path

from components.experiment import Experiment
from model.image_plan import plan
from tests.components.conftest import secrets, stack_profile

IMAGE = "docker:index/remoteImage:RemoteImage"


def kept(tmp_path: Path, run_program, **over) -> dict[str, bool]:
    profile = stack_profile("cohort-w8", tmp_path, **over)
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    return {r.inputs["name"]: r.inputs.get("keepLocally", False) for r in regs.values() if r.type == IMAGE}


def test_shared_images_are_kept_and_private_ones_go(tmp_path: Path, run_program):
    shared = kept(tmp_path / "shared", run_program)
    assert shared and all(shared.values())  # every tag is one other profiles may use
    private = kept(tmp_path / "private", run_program, uncached=True)
    gone = sorted(name for name, keep in private.items() if not keep)
    assert gone and all(name.endswith(":cohort-w8-20261129t120000z") for name in gone)
    assert {name for name, keep in private.items() if keep} >= {"gitea/gitea:1.22", "mysql:8.4"}


def test_the_images_are_the_plan(tmp_path: Path, run_program):
    """One list of images (model/image_plan.py): the component declares each planned image with the plan's Dockerfile,
    context and build arguments, and a built image after the images it is built on."""
    profile = stack_profile("cohort-w8", tmp_path, tasks=["jgm__pandoc.5caad90", "testorg__calculator.abc1234"])
    regs = run_program(lambda: Experiment("experiment", profile, secrets(), project_dir=tmp_path).images.ids)
    images = {r.inputs["name"]: r for r in regs.values() if r.type == IMAGE}
    planned = plan(profile)
    assert sorted(images) == sorted(i.name for i in planned) and len(planned) == len(images)
    urns = {i.key: images[i.name].urn for i in planned}
    checkout = profile.checkout_path(tmp_path)
    for image in planned:
        reg = images[image.name]
        if image.build is None:
            assert "build" not in reg.inputs, image
            continue
        build = reg.inputs["build"]
        assert build["dockerfile"] == str(checkout / image.build.dockerfile)
        assert build["context"] == str(checkout / image.build.context)
        assert build.get("buildArgs", {}) == image.build.args
        assert {urns[k] for k in image.build.after} <= set(reg.deps), image
    workers = [i for i in planned if i.role == "worker-image"]
    assert [w.task for w in workers] == profile.tasks and all(w.build and w.build.after for w in workers)
