"""profile_data: the profile's data directory, created first and removed by `pulumi destroy`, nothing lost.

`create` makes `<data root>/<profile>` and leaves a marker in it. `delete` removes it (and the profile's untagged
images left by rebuilds, and the cleanroom copies a killed seed left) only when every run in it has its verified
copy under the trajectory root (`scripts/preserve.py`), its shutdown archives are complete, and the marker says
agensh created it; otherwise it refuses, says what and how to override (inspect first; AGENSH_FORCE_CLEAN=1 deletes
anyway, except a directory agensh did not create, which it never deletes). `make down` never calls this: it keeps data.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from model import contract, steps
from model.records import ShutdownResult
from model.rundir import CopyDir, ProfileDir
from model.step_inputs import ProfileDataInputs
from scripts.lib import copies, privilege  # copies.problems() is the one verification
from scripts.lib.step import load_inputs, mode_of, now

FORCE = "AGENSH_FORCE_CLEAN"


def incomplete_archives(pd: ProfileDir) -> list[str]:
    """Tasks whose shutdown left archives missing or corrupt."""
    out = []
    for rd in pd.runs():
        for task in rd.task_ids():
            receipt = steps.read_receipt(rd, steps.SHUTDOWN, task)
            if receipt and isinstance(receipt.result, ShutdownResult) and not receipt.result.archives_complete:
                out.append(f"{rd.path.name}/{task}: shutdown archives incomplete")
    return out


def unsaved(pd: ProfileDir, traj_root: str) -> list[str]:
    """Runs whose results have no verified copy under the trajectory root."""
    out = []
    for rd in pd.runs():
        copy = CopyDir.of(traj_root, pd.path.name, rd.path.name)
        out += [f"{rd.path.name}: {p}" for p in copies.problems(rd, pd.run_archives(rd.path.name), copy)]
    return out


def refusal(a: ProfileDataInputs, env: Mapping[str, str]) -> str | None:
    """Why the profile's data may not be deleted now, or None. Used first thing in a destroy (the run's last step
    checks it before anything else is deleted) and again when the data itself is deleted."""
    pd = ProfileDir(Path(a.profile_dir))
    if not pd.path.exists():
        return None
    if not pd.created_marker.is_file():
        return (
            f"refusing to delete {pd.path}: agensh did not create it (no {pd.created_marker.name}); remove it by "
            "hand if it is yours"
        )
    blocking = incomplete_archives(pd) + unsaved(pd, a.traj_root)
    if not blocking or env.get(FORCE) == "1":
        return None
    shown = "\n  ".join(blocking[:10]) + (f"\n  ... and {len(blocking) - 10} more" if len(blocking) > 10 else "")
    return (
        f"refusing to delete {pd.path}; nothing was deleted:\n  {shown}\nInspect it; copy and verify every run "
        f"with `.venv/bin/python -m scripts.cli save {pd.path} {a.traj_root}`, or destroy with {FORCE}=1 to "
        "delete it anyway."
    )


def remove_cleanroom_copies(profile: str) -> None:
    """A seed killed between creating and removing its cleanroom copy leaves it (never started, outside the state)."""
    found = ["docker", "ps", "-aq", "--filter", contract.profile_filter(profile)]
    role = contract.role_filter(contract.CLEANROOM_COPY_ROLE)
    ids = subprocess.run([*found, "--filter", role], capture_output=True, text=True).stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)


def delete(a: ProfileDataInputs, env: Mapping[str, str]) -> int:
    pd = ProfileDir(Path(a.profile_dir))
    if (reason := refusal(a, env)) is not None:
        print(f"profile_data: {reason}", file=sys.stderr)
        return 1
    remove_cleanroom_copies(a.profile)
    if not pd.path.exists():
        print(f'{{"removed": null, "reason": "{pd.path} does not exist"}}')
        return 0
    try:  # the services and workers own much of it (their own uids)
        privilege.remove_tree(pd.path, f"deleting {pd.path}, whose files the containers own")
    except privilege.NotRoot as err:
        print(f"profile_data: {err}; nothing was deleted", file=sys.stderr)
        return 1
    # Images replaced by rebuilds during the stack's life are left untagged; they still carry the profile label.
    subprocess.run(
        ["docker", "image", "prune", "-f", "--filter", contract.profile_filter(a.profile)], capture_output=True
    )
    print(f'{{"removed": "{pd.path}"}}')
    return 0


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode = mode_of("profile_data", argv, steps.PROFILE_DATA.args, steps.PROFILE_DATA.delete)
    a = load_inputs(ProfileDataInputs, env)
    pd = ProfileDir(Path(a.profile_dir))
    if mode == steps.PROFILE_DATA.args:
        try:
            pd.claim(a.profile, now())
        except ValueError as err:
            print(f"profile_data: {err}", file=sys.stderr)
            return 1
        print(f'{{"profile_dir": "{pd.path}"}}')
        return 0
    return delete(a, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
