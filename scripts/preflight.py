"""preflight: the live checks a launch must pass (docs/requirements.md R26). Nothing is started unless they pass.
The checks themselves are scripts/lib/checks.py, which `scripts.cli check` runs alone before a launch.

`host` phase (after networks and images, before any service): Docker reachable; slice and guard in place
(unless host units are off); the Agensh checkout against the checkout contract (model/checkout.py, its files only);
images present; the worker entrypoint baked (its self-check) and the reference binary root-owned
mode 0111 (temporary check containers without network); router and board images built from the current
checkout revision; state empty (no leftover output, no labelled containers); subnets colliding neither with host
routes nor other Docker networks; operator ports free; the team limits as rendered (the contract's rule); every
task's test blobs where `programbench eval` will read them (`programbench blob sync` first when the profile names no
local blob directory), and room for them on the data root.
`model` phase (after the egress proxy is up, before any other platform service): the gateway's model list through
the proxy (`GET /v1/models`), which must hold the profile's model id (a gateway without a list is a warning in the
receipt, not a failure), and one small live model request through the proxy.
`platform` phase (after every platform service, before any task): each one-shot service (the bootstrap, which makes
the accounts and tokens the teams use) exited 0. The engine waits for such a container to end but counts it created
whatever its exit code, so without this check a failed bootstrap would start six hours of teams without accounts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from model import steps
from model.records import PreflightResult
from model.rundir import RunDir
from model.step_inputs import OneShot, PreflightHostInputs, PreflightModelInputs, PreflightPlatformInputs
from scripts.lib.checks import HOST_CHECKS, check_model, check_model_list, run_checks
from scripts.lib.step import load_inputs, mode_of, run_step


def check_one_shot(name: str, o: OneShot) -> str:
    if o.exit_code == 0:
        return "exited 0"
    stack = o.urn.split("::", 1)[0].removeprefix("urn:pulumi:")
    how = "its exit code was not read back" if o.exit_code is None else f"it exited {o.exit_code}"
    raise AssertionError(
        f"{how} (its output: `docker logs {name}`). Once the cause is fixed, make it again with "
        f"`pulumi up -s {stack} --replace '{o.urn}'` (after `. scripts/env.sh`), then `make up` again"
    )


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    phase = mode_of(
        "preflight", argv, steps.PREFLIGHT_HOST.args, steps.PREFLIGHT_MODEL.args, steps.PREFLIGHT_PLATFORM.args
    )
    if phase == steps.PREFLIGHT_HOST.args:
        a = load_inputs(PreflightHostInputs, env)

        def body() -> PreflightResult:
            return run_checks({n: partial(f, a) for n, f in HOST_CHECKS.items()})

        return run_step(steps.PREFLIGHT_HOST, RunDir(Path(a.run_dir)), None, a, body)
    if phase == steps.PREFLIGHT_PLATFORM.args:
        f = load_inputs(PreflightPlatformInputs, env)

        def one_shots() -> PreflightResult:
            return run_checks({n: partial(check_one_shot, n, o) for n, o in sorted(f.one_shots.items())})

        return run_step(steps.PREFLIGHT_PLATFORM, RunDir(Path(f.run_dir)), None, f, one_shots)
    m = load_inputs(PreflightModelInputs, env)
    token = env.get("AGENSH_PROXY_TOKEN", "")
    return run_step(
        steps.PREFLIGHT_MODEL,
        RunDir(Path(m.run_dir)),
        None,
        m,
        lambda: run_checks({"model-list": lambda: check_model_list(m, token), "model": lambda: check_model(m, token)}),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
