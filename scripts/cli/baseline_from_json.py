"""Convert the standalone launcher's `baseline.json` (the seed's single-agent template) into a baseline stack.

    .venv/bin/python -m scripts.cli baseline-from-json baseline.json baseline-pandoc

Field mapping: task -> tasks; model, reasoning_effort, hours, deadline_seconds, snapshot_seconds, skip_eval kept;
pytest_addopts -> eval_pytest_addopts; subnet_default / subnet_egress -> internal_subnet / egress_subnet;
agent_image's tag -> agent_image_tag; cleanroom_image's org (and digest, if pinned) -> cleanroom_org
(cleanroom_digests); run_dir's parent -> data_root; model_env_file's UPSTREAM -> llm_upstream and its
UPSTREAM_AUTH_TOKEN -> the encrypted model token. `project` and `programbench_repo` have no counterpart (names
come from the profile; the evaluator is the pinned package). The stack is then made by new-stack
(scripts/cli/new_stack.py), so the same validation applies; hours and deadline_seconds that disagree are refused before
anything is written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from model import contract
from scripts.cli import app, new_stack, options

cli = options.typer_app()


def settings(doc: dict[str, Any]) -> tuple[dict[str, Any], Path | None]:
    """Profile settings from the JSON document, and the model env file it names."""
    if contract.deadline_s(float(doc["hours"])) != int(doc["deadline_seconds"]):
        raise ValueError(
            f"hours {doc['hours']} and deadline_seconds {doc['deadline_seconds']} disagree "
            f"({contract.deadline_s(float(doc['hours']))} s expected)"
        )
    out: dict[str, Any] = {
        "kind": "baseline",
        "workers": 1,
        "tasks": [doc["task"]],
        "model": doc.get("model", contract.PINNED_MODEL),
        "reasoning_effort": doc.get("reasoning_effort", contract.PINNED_EFFORT),
        "hours": doc["hours"],
        "deadline_seconds": doc["deadline_seconds"],
        "snapshot_seconds": doc.get("snapshot_seconds", 1200),
        "skip_eval": bool(doc.get("skip_eval", False)),
        "eval_pytest_addopts": doc.get("pytest_addopts", ""),
    }
    if doc.get("subnet_default"):
        out["internal_subnet"] = doc["subnet_default"]
    if doc.get("subnet_egress"):
        out["egress_subnet"] = doc["subnet_egress"]
    if ":" in doc.get("agent_image", "").rsplit("/", 1)[-1]:
        out["agent_image_tag"] = doc["agent_image"].rsplit(":", 1)[1]
    cleanroom = doc.get("cleanroom_image", "")
    if "/" in cleanroom:
        out["cleanroom_org"] = cleanroom.split("/", 1)[0]
        if "@sha256:" in cleanroom:
            out["cleanroom_digests"] = {doc["task"]: cleanroom.split("@", 1)[1]}
    if doc.get("run_dir"):
        out["data_root"] = str(Path(doc["run_dir"]).parent)
    env_file = Path(doc["model_env_file"]).expanduser() if doc.get("model_env_file") else None
    return out, env_file


@cli.command(context_settings=options.PASS_THROUGH)
def command(
    ctx: typer.Context,
    baseline_json: Annotated[Path, typer.Argument(metavar="BASELINE_JSON", help="the launcher's baseline.json")],
    stack: options.ProfileStack,
) -> int:
    """Made by new-stack, so the same validation applies; any other option goes to it (`new-stack --help`). Hours and
    deadline_seconds that disagree are refused (exit 2) before anything is written."""
    doc = json.loads(baseline_json.read_text())
    try:
        values, env_file = settings(doc)
    except (KeyError, ValueError) as err:
        print(f"baseline_from_json: {err}", file=sys.stderr)
        return 2
    if env_file is not None:
        model_env = new_stack.read_env_file(env_file)
        if model_env.get("UPSTREAM"):
            values["llm_upstream"] = model_env["UPSTREAM"]
        if model_env.get("UPSTREAM_AUTH_TOKEN") and not os.environ.get(contract.MODEL_CREDENTIAL_ENV):
            os.environ[contract.MODEL_CREDENTIAL_ENV] = model_env["UPSTREAM_AUTH_TOKEN"]
    sets = [a for k, v in values.items() for a in ("--set", f"{k}={json.dumps(v)}")]
    return app.main(["new-stack", stack, *sets, "--env-file", "none", *ctx.args])
