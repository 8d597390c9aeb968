"""The seed's copy of a task's /workspace out of its cleanroom image goes through a container of that image. It is
named and labelled, so that one a killed seed left is found: the next seed of the task replaces it, destroy's data
deletion removes it, and preflight's leftover check (by the profile label) sees it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from model import contract
from model.step_inputs import CleanroomCopy, ProfileDataInputs
from scripts import profile_data
from scripts.seed import workspace_from_image
from scripts.setup.calculator import TASK

PROFILE = f"seedcopy{os.getpid()}"


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def copies() -> list[str]:
    """The profile's cleanroom copies, as destroy and preflight find them."""
    role = contract.role_filter(contract.CLEANROOM_COPY_ROLE)
    return docker("ps", "-aq", "--filter", contract.profile_filter(PROFILE), "--filter", role).split()


def left_by_a_killed_seed(c: CleanroomCopy) -> str:
    """What `workspace_from_image` leaves when its process is killed between `docker create` and `docker rm`."""
    return docker("create", "--name", c.container, *contract.label_args(c.labels), c.image).strip()


def test_a_killed_seeds_cleanroom_copy_is_replaced_by_the_next_seed_and_removed_by_destroy(
    base_image: str, tmp_path: Path
) -> None:
    image = f"agensh-seedcopy-{os.getpid()}:cleanroom"
    dockerfile = f"FROM {base_image}\nRUN mkdir -p /workspace/src && echo 'int main;' > /workspace/src/main.c \\\n"
    dockerfile += " && echo binary > /workspace/executable\n"
    subprocess.run(
        ["docker", "build", "-q", "-t", image, "-"],
        input=dockerfile,
        text=True,
        check=True,
        capture_output=True,
        env={**os.environ, "DOCKER_BUILDKIT": "0"},
    )
    c = CleanroomCopy(
        image=image,
        container=contract.cleanroom_copy_name(PROFILE, TASK),
        labels=contract.labels(PROFILE, "r1", contract.CLEANROOM_COPY_ROLE, TASK),
    )
    try:
        stale = left_by_a_killed_seed(c)
        assert copies() == [stale[:12]]

        dest = tmp_path / "ws"
        dest.mkdir()
        assert workspace_from_image(c, dest) == ["src/main.c"]  # the reference binary is never copied
        assert copies() == []  # the stale one was replaced, and the step's own removed

        left_by_a_killed_seed(c)
        a = ProfileDataInputs(profile_dir=str(tmp_path / "data"), profile=PROFILE, traj_root=str(tmp_path / "traj"))
        assert profile_data.delete(a, {}) == 0
        assert copies() == []
    finally:
        subprocess.run(["docker", "rm", "-f", c.container], capture_output=True)
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
