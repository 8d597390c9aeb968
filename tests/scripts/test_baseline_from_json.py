"""The converter from the standalone launcher's baseline.json (the seed's documented template) to a stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from scripts.cli.baseline_from_json import settings

TASK = "jgm__pandoc.5caad90"


def documented(tmp_path: Path, **over) -> dict:
    """The seed's template with its placeholders filled in."""
    env = tmp_path / "model.env"
    env.write_text(
        "UPSTREAM=https://gateway.example\nUPSTREAM_AUTH_STYLE=bearer\nUPSTREAM_AUTH_TOKEN=model-token-0123\n"
    )
    env.chmod(0o600)
    doc = {
        "task": TASK,
        "model": "gpt-5.6-sol",
        "reasoning_effort": "high",
        "hours": 6,
        "deadline_seconds": 21600,
        "project": "omcgitea-pbench-single-agent-pandoc",
        "agent_image": "omcgitea-agent-jgm-pandoc-5caad90:pbench",
        "cleanroom_image": "programbench/jgm_1776_pandoc.5caad90:task_cleanroom_v6",
        "run_dir": str(tmp_path / "runs" / "baseline-1"),
        "model_env_file": str(env),
        "programbench_repo": "/opt/programbench",
        "subnet_default": "10.177.242.0/24",
        "subnet_egress": "10.177.243.0/24",
    }
    doc.update(over)
    return doc


def convert(proj: Path, doc: dict, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doc))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.cli",
            "baseline-from-json",
            str(path),
            "baseline-pandoc",
            "--checkout",
            "/opt/agensh",
        ],
        cwd=proj,
        capture_output=True,
        text=True,
    )


def test_settings_of_the_documented_example(tmp_path: Path):
    values, env_file = settings(documented(tmp_path))
    assert values["kind"] == "baseline" and values["tasks"] == [TASK] and values["workers"] == 1
    assert (values["hours"], values["deadline_seconds"], values["snapshot_seconds"]) == (6, 21600, 1200)
    assert (values["internal_subnet"], values["egress_subnet"]) == ("10.177.242.0/24", "10.177.243.0/24")
    assert values["agent_image_tag"] == "pbench" and values["cleanroom_org"] == "programbench"
    assert values["data_root"] == str(tmp_path / "runs") and env_file == tmp_path / "model.env"


def test_converted_stack(project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.delenv("LLM_UPSTREAM_TOKEN")
    monkeypatch.delenv("LLM_UPSTREAM")
    out = convert(project, documented(tmp_path, skip_eval=True, pytest_addopts="--rootdir=."), tmp_path)
    assert out.returncode == 0, out.stderr
    cfg = yaml.safe_load((project / "stacks" / "Pulumi.baseline-pandoc.yaml").read_text())["config"]
    # pulumi rewrites the file with every top-level value as a string; the program reads them back typed
    assert cfg["agensh:kind"] == "baseline" and str(cfg["agensh:deadline_seconds"]) == "21600"
    assert cfg["agensh:llm_upstream"] == "https://gateway.example" and str(cfg["agensh:skip_eval"]).lower() == "true"
    assert cfg["agensh:eval_pytest_addopts"] == "--rootdir=."
    token = subprocess.run(
        ["pulumi", "config", "get", "-s", "baseline-pandoc", "agensh:llm_upstream_token"],
        cwd=project,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert token == "model-token-0123" and "model-token-0123" not in str(cfg)


def test_mismatched_hours_and_deadline_are_refused(project: Path, tmp_path: Path):
    out = convert(project, documented(tmp_path, hours=5), tmp_path)
    assert out.returncode == 2 and "hours 5 and deadline_seconds 21600 disagree" in out.stderr
    assert not (project / "stacks" / "Pulumi.baseline-pandoc.yaml").exists()
