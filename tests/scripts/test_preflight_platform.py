"""The `platform` phase of preflight: a one-shot platform service (the bootstrap) must have exited 0 before any task
starts. The engine counts such a container created whatever its exit code, so this step is what stops the launch; a
failure names the container's log and how to make it again, and a later run with the container made again passes."""

from __future__ import annotations

import json
from pathlib import Path

from scripts import preflight

URN = "urn:pulumi:cohort-w8.platform::agensh::agensh:index:Platform$docker:index/container:Container::x-bootstrap"


def run(tmp_path: Path, capsys, **exits: int | None) -> tuple[int, dict, str]:
    inputs = {
        "run_dir": str(tmp_path),
        "one_shots": {name: {"urn": URN, "exit_code": code} for name, code in exits.items()},
    }
    rc = preflight.main(["platform"], {"AGENSH_INPUT": json.dumps(inputs)})
    receipt = json.loads((tmp_path / "receipts" / "preflight-platform.json").read_text())
    return rc, receipt, capsys.readouterr().err


def test_a_bootstrap_that_exited_0_passes(tmp_path: Path, capsys):
    rc, receipt, _ = run(tmp_path, capsys, bootstrap=0)
    assert rc == 0 and receipt["status"] == "ok"
    assert receipt["result"]["checks"] == {"bootstrap": {"ok": True, "detail": "exited 0", "warning": False}}


def test_a_failed_bootstrap_stops_the_launch_and_says_how_to_run_it_again(tmp_path: Path, capsys):
    rc, receipt, err = run(tmp_path, capsys, bootstrap=3)
    assert rc != 0 and receipt["status"] == "failed"
    detail = receipt["details"]["checks"]["bootstrap"]["detail"]
    assert detail.startswith("it exited 3 (its output: `docker logs bootstrap`)")
    assert f"pulumi up -s cohort-w8.platform --replace '{URN}'" in detail
    assert "bootstrap failed" in err  # on the console of `up`

    # made again (`--replace`), it exited 0: its new exit code is a new input, so the step runs again and passes
    rc, receipt, _ = run(tmp_path, capsys, bootstrap=0)
    assert rc == 0 and receipt["status"] == "ok"


def test_an_exit_code_not_read_back_is_a_failure(tmp_path: Path, capsys):
    rc, receipt, _ = run(tmp_path, capsys, bootstrap=None)
    assert rc != 0
    assert receipt["details"]["checks"]["bootstrap"]["detail"].startswith("its exit code was not read back")


def test_a_platform_without_one_shot_services_passes(tmp_path: Path, capsys):
    rc, receipt, _ = run(tmp_path, capsys)
    assert rc == 0 and receipt["result"]["checks"] == {}
