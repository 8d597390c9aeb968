"""The preflight's live checks (docs/requirements.md R26), shared by the preflight step (scripts/preflight.py, its
phases inside `up`) and `scripts.cli check` (all of them alone, before anything is created): each check takes the
step's inputs and returns what it found, raises AssertionError with what to do, or CheckWarning for a caveat;
`run_checks` runs them all and reports every failure at once.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from model import checkout, contract
from model.records import Check, PreflightResult
from model.rundir import RunDir
from model.step_inputs import PreflightHostInputs, PreflightModelInputs
from scripts.lib.http import HTTPFailure, request
from scripts.lib.scoring import PROGRAMBENCH, blob_env, blob_paths
from scripts.lib.step import StepFailed, progress

NO_MODEL_LIST = (404, 405, 501)  # the gateway (or the proxy) has no /v1/models


class CheckWarning(Exception):
    """A check that passes with a caveat: recorded as a warning in the receipt, the launch goes on."""


def sh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True)


def in_image(image: str, entrypoint: str, *args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`entrypoint args` run in a throwaway container of `image` without network (`docker run --rm`, with `flags`)."""
    return sh("docker", "run", "--rm", "--network", "none", *flags, "--entrypoint", entrypoint, image, *args)


def check_docker(a: PreflightHostInputs) -> str:
    out = sh("docker", "info", "--format", "{{.ServerVersion}}")
    if out.returncode:
        raise AssertionError(f"Docker is not reachable: {out.stderr.strip()}")
    return f"Docker {out.stdout.strip()}"


def check_host_units(a: PreflightHostInputs) -> str:
    if a.host_units == "off":
        return "host units off in this profile"
    return check_units_receipt(json.loads(a.host_units_receipt or "{}"))


def check_units_receipt(receipt: dict[str, str]) -> str:
    """The host units as scripts/host/host_units.sh reports them: the guard enabled and the slice memory-bounded."""
    if receipt.get("guard") not in ("installed", "reused"):
        raise AssertionError("pbench-reboot-guard.service is not enabled")
    if receipt.get("slice_memory_max") in (None, "", "infinity", "unknown"):
        raise AssertionError(f"pbench.slice has no memory limit ({receipt.get('slice_memory_max')})")
    return f"slice MemoryMax={receipt['slice_memory_max']}, guard {receipt['guard']}"


def check_checkout(a: PreflightHostInputs) -> str:
    """The checkout against the checkout contract, files only: the misses `scripts.cli check-checkout` names."""
    if problem := checkout.refusal(Path(a.checkout), a.baseline, a.convention):
        raise AssertionError(problem)
    return f"{a.checkout} meets the checkout contract v{checkout.VERSION} with the {a.convention} convention"


def check_images(a: PreflightHostInputs) -> str:
    missing = [i for i in a.images if sh("docker", "image", "inspect", i).returncode]
    if missing:
        raise AssertionError(f"images missing: {', '.join(missing)}")
    return f"{len(a.images)} images present"


def check_workers(a: PreflightHostInputs) -> str:
    selfcheck = checkout.convention(a.convention).selfcheck
    for image in a.worker_images:
        out = in_image(image, selfcheck.command)
        if not all(word in out.stdout for word in selfcheck.answer):
            raise AssertionError(
                f"{image}: entrypoint not baked ({selfcheck.command} said "
                f"{out.stdout.strip() or out.stderr.strip()!r}, not {selfcheck.line!r})"
            )
        copilot_offline = ("-e", "COPILOT_AUTO_UPDATE=false", "-e", "COPILOT_OFFLINE=true")
        says = in_image(image, "copilot", "--version", flags=copilot_offline)
        found = contract.COPILOT_VERSION_OUT.search(says.stdout)
        if found is None or found.group(1) != a.copilot_version:
            raise AssertionError(
                f"{image}: its Copilot CLI says {(says.stdout or says.stderr).strip()[:120]!r}; the "
                f"profile pins copilot_version {a.copilot_version}"
            )
        ref = in_image(image, "stat", "-c", "%U %a", contract.REFERENCE_BINARY, flags=("--user", "0"))
        if ref.stdout.strip() != contract.REFERENCE_OWNER_MODE:
            raise AssertionError(
                f"{image}: {contract.REFERENCE_BINARY} must be root-owned mode 0111, is {ref.stdout.strip()!r}"
            )
    return f"{len(a.worker_images)} worker images: {selfcheck.line}, Copilot CLI {a.copilot_version}, reference 0111"


def check_fresh_images(a: PreflightHostInputs) -> str:
    want = a.checkout_revision
    for image in a.revisioned_images:
        got = sh(
            "docker", "image", "inspect", "-f", f'{{{{index .Config.Labels "{contract.REVISION_LABEL}"}}}}', image
        ).stdout.strip()
        if want and got != want:
            raise AssertionError(
                f"{image} is stale: built from checkout revision {got or 'unknown'}, the checkout is at {want}"
            )
    return f"router and board images built from {want or 'an unversioned checkout'}"


def check_state(a: PreflightHostInputs) -> str:
    run = Path(a.run_dir)
    ours = ("receipts", *RunDir(run).launch_files)  # what the launch itself wrote before this check
    leftovers = [p.name for p in run.iterdir() if p.name not in ours] if run.exists() else []
    if leftovers:
        raise AssertionError(
            f"{run} already holds output ({', '.join(sorted(leftovers)[:5])}); preserve it and start a new run id"
        )
    left = sh("docker", "ps", "-aq", "--filter", contract.profile_filter(a.profile)).stdout.split()
    if left:
        raise AssertionError(f"{len(left)} containers of profile {a.profile} exist; run `make down` or destroy first")
    return "no leftover output or containers"


def check_subnets(a: PreflightHostInputs) -> str:
    ours = [ipaddress.ip_network(s) for s in a.subnets]
    own_names = set(a.networks)
    for line in sh("ip", "-4", "route").stdout.splitlines():
        words = line.split()
        dest, dev = words[0], words[words.index("dev") + 1] if "dev" in words else ""
        if "/" not in dest:  # default and host routes
            continue
        net = ipaddress.ip_network(dest, strict=False)
        for mine in ours:
            if net.overlaps(mine) and not dev.startswith("br-"):
                raise AssertionError(f"subnet {mine} collides with the host route {dest} dev {dev}")
    for nid in sh("docker", "network", "ls", "-q").stdout.split():
        found = json.loads(sh("docker", "network", "inspect", nid).stdout or "[]")
        if not found:  # removed since the listing (a neighbour's destroy)
            continue
        info = found[0]
        if info["Name"] in own_names:
            continue
        for cfg in (info.get("IPAM") or {}).get("Config") or []:
            if cfg.get("Subnet") and ":" not in cfg["Subnet"]:
                other = ipaddress.ip_network(cfg["Subnet"])
                for mine in ours:
                    if other.overlaps(mine):
                        raise AssertionError(f"subnet {mine} collides with Docker network {info['Name']} ({other})")
    return f"subnets {', '.join(map(str, ours))} are free"


def check_ports(a: PreflightHostInputs) -> str:
    taken = []
    for port in a.ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                taken.append(port)
    if taken:
        raise AssertionError(f"ports in use on 127.0.0.1: {taken}")
    return f"{len(a.ports)} operator ports free"


def check_limits(a: PreflightHostInputs) -> str:
    """The team limits as rendered, by the same rule the profile and the policy pack apply."""
    problems = contract.team_limit_problems(**a.limits)
    if problems:
        raise AssertionError("; ".join(f"{key}: {msg}" for key, msg in problems))
    return f"team limits hold for {a.limits['workers']} workers"


SYNC_TIMEOUT_S = 3 * 3600  # a large task's blobs over a slow link
SYNC = ".venv/bin/programbench blob sync"  # as the operator types it in the project


def synced_root(task: str) -> Path:
    """`programbench blob sync TASK` into ProgramBench's blob store (huggingface_hub's cache), under the environment the
    evaluation reads blobs with; the root of the store's snapshot (the command prints the task's folder in it)."""
    progress(f"preflight: programbench blob sync {task}")
    try:
        out = subprocess.run(
            [str(PROGRAMBENCH), "blob", "sync", task],
            capture_output=True,
            text=True,
            env=blob_env(None),
            timeout=SYNC_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{task}: `{SYNC} {task}` took over {SYNC_TIMEOUT_S} s") from None
    found = re.search(r"^Blobs cached at (.+)$", out.stdout, re.MULTILINE)
    if out.returncode or found is None:
        said = (out.stdout + out.stderr).strip()[-300:] or f"exit {out.returncode}"
        if "Blob store is disabled" in said:  # programbench 1.2.5 says so too when the store has no such folder
            said += " Or the store holds no blobs for this task."
        raise AssertionError(
            f"{task}: `{SYNC} {task}` failed ({said}); fix the access to ProgramBench's blob store or the room where "
            "it keeps it, or set eval_blob_dir to a folder holding <task>/tests/<branch>.tar.gz"
        )
    return Path(found.group(1)).parent


def check_blobs(a: PreflightHostInputs) -> str:
    """Every test blob the evaluation will read is there before six hours of inference (synced first when the profile
    names no local blob directory), and the data root has at least as much room free as they take (a floor: the
    run's own output comes on top). Every task is tried, so one refusal names every command to run."""
    size, misses, roots = 0, [], set()
    for task in a.tasks:
        try:
            root = Path(a.blob_dir).expanduser() if a.blob_dir else synced_root(task)
        except AssertionError as err:
            misses.append(str(err))
            continue
        roots.add(str(root))
        paths = blob_paths(root, task)
        absent = [p for p in paths if not p.is_file()]
        size += sum(p.stat().st_size for p in paths if p.is_file())
        if absent:
            fix = (
                f"where ProgramBench's blob store can be reached, run `{SYNC} {task}` and copy the folder it prints "
                f"here (`cp -rL <folder> {root}/`), or unset eval_blob_dir to have the preflight sync them"
                if a.blob_dir
                else f"run `{SYNC} {task}` again; if they stay missing, the store's revision "
                "(PROGRAMBENCH_HF_REVISION) does not match the installed programbench"
            )
            misses.append(f"{task}: {len(absent)} of {len(paths)} test blobs missing in {root} ({absent[0]}); {fix}")
    if misses:
        raise AssertionError("; ".join(misses))
    data_root = next(p for p in Path(a.run_dir).parents if p.exists())
    free = shutil.disk_usage(data_root).free
    if free < size:
        raise AssertionError(
            f"{data_root} has {free >> 20} MiB free; the tasks' test blobs alone take {size >> 20} MiB: free room on "
            "the data root or move data_root"
        )
    return (
        f"{len(a.tasks)} task(s): every test blob in {', '.join(sorted(roots))} ({size >> 20} MiB); "
        f"{free >> 30} GiB free on the data root"
    )


def listed_models(body: Any) -> list[str] | None:
    """The ids of an OpenAI-style model list (`{"data": [{"id": ...}, ...]}`), or None when `body` is none."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in data):
        return None
    return [m["id"] for m in data]


LISTED = 12  # ids named in a failure: a gateway that lists hundreds still gives one readable line


def check_model_list(a: PreflightModelInputs, token: str) -> str:
    """The model id is one the gateway lists (docs/requirements.md R46), asked through the egress proxy with the
    workers' credential, so only the proxy holds the real one."""
    url = f"{a.proxy_url.rstrip('/')}/v1/models"
    try:
        status, body, _ = request("GET", url, token=token, attempts=10, ok=NO_MODEL_LIST)
    except HTTPFailure as err:
        raise AssertionError(f"the model list through the egress proxy failed: {err}") from None
    except ValueError:  # a 2xx answer that is not JSON
        raise CheckWarning(
            f"GET /v1/models did not answer JSON: the gateway offers no model list; {a.model} was not "
            "checked against one"
        ) from None
    ids = None if status in NO_MODEL_LIST else listed_models(body)
    if ids is None:
        raise CheckWarning(
            f"the gateway offers no model list (GET /v1/models: HTTP {status}"
            f"{'' if status in NO_MODEL_LIST else ', not a list of models'}); {a.model} was not checked "
            "against one"
        )
    if a.model not in ids:
        close = difflib.get_close_matches(a.model, ids, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        shown = ", ".join(sorted(ids)[:LISTED]) + (f" and {len(ids) - LISTED} more" if len(ids) > LISTED else "")
        raise AssertionError(
            f"model {a.model} is not offered by the gateway, which lists: {shown or 'no model'}. "
            f"Set agensh:model to one of them{hint} "
            "(`.venv/bin/python -m scripts.cli new-stack <stack> --set model=<id>`) and run "
            "`pulumi up` again"
        )
    return f"{a.model} is one of the {len(ids)} models the gateway lists"


def check_model(a: PreflightModelInputs, token: str) -> str:
    body = {"model": a.model, "input": "agensh preflight: reply with one word.", "reasoning": {"effort": a.effort}}
    try:
        status, _, _ = request("POST", f"{a.proxy_url.rstrip('/')}/v1/responses", body, token=token, attempts=10)
    except HTTPFailure as err:
        raise AssertionError(f"model request through the egress proxy failed: {err}") from None
    return f"model {a.model} answered through the egress proxy (HTTP {status})"


HOST_CHECKS: dict[str, Callable[[PreflightHostInputs], str]] = {
    "docker": check_docker,
    "host-units": check_host_units,
    "checkout": check_checkout,
    "images": check_images,
    "workers": check_workers,
    "fresh-images": check_fresh_images,
    "state": check_state,
    "subnets": check_subnets,
    "ports": check_ports,
    "limits": check_limits,
    "blobs": check_blobs,
}


def run_checks(checks: dict[str, Callable[[], str]], who: str = "preflight", passes: bool = False) -> PreflightResult:
    """Every check runs; all failures are reported at once. `who` starts each console line; `passes`: a line for each
    check that passes too (`scripts.cli check`, where nothing else shows progress)."""
    results, failed = {}, []
    for name, fn in checks.items():
        try:
            results[name] = Check(ok=True, detail=fn())
            if passes:
                progress(f"{who}: {name} ok: {results[name].detail}")
        except CheckWarning as caveat:
            results[name] = Check(ok=True, detail=str(caveat), warning=True)
            progress(f"{who}: warning: {name}: {caveat}")
        except AssertionError as err:
            results[name] = Check(ok=False, detail=str(err))
            failed.append(f"{name}: {err}")
            progress(f"{who}: {name} failed: {str(err)[:400]}")  # every failure and its fix on the console
    if failed:
        raise StepFailed(
            f"{len(failed)} {who} check(s) failed:\n  " + "\n  ".join(failed),
            checks={k: v.model_dump() for k, v in results.items()},
        )
    return PreflightResult(checks=results)
