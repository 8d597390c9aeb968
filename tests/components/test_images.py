"""A profile's destroy removes only the images under its run's private tag: pulled images and shared build tags are
used by the other profiles of the host, and stay."""

from __future__ import annotations

from pathlib import Path

from components.experiment import Experiment
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
