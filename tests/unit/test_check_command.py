"""`scripts.cli check` before it touches Docker: it builds each image of the plan with the plan's Dockerfile, context,
arguments, labels and tag (no second list), and refuses what it cannot check with exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.image_plan import build_labels, plan
from model.stackfiles import load_profile
from scripts.cli import check
from scripts.cli.app import main as cli


@pytest.mark.parametrize("uncached", [False, True])
def test_each_build_is_the_plans(uncached: bool):
    p = load_profile("cohort-w8").model_copy(update={"uncached": uncached})
    checkout = Path(p.agensh_checkout)
    built = [i for i in plan(p) if i.build]
    assert built
    for image in built:
        assert image.build is not None
        args = check.build_args(p, checkout, image, image.build, "abc123")
        assert args[:6] == ["docker", "build", "--file", str(checkout / image.build.dockerfile), "--tag", image.name]
        assert args[-1] == str(checkout / image.build.context)
        assert {a.removeprefix("--build-arg=") for a in args if a.startswith("--build-arg=")} == {
            f"{k}={v}" for k, v in image.build.args.items()
        }
        labels = build_labels(p, image, "abc123")
        assert {a.removeprefix("--label=") for a in args if a.startswith("--label=")} == {
            f"{k}={v}" for k, v in labels.items()
        }
        assert ("--no-cache" in args) == uncached


def test_a_stack_it_cannot_check_exits_2(capsys: pytest.CaptureFixture[str]):
    assert cli(["check", "no-such-stack"]) == 2
    assert "no stack file" in capsys.readouterr().err
    assert cli(["check", "cohort-w120-swarm"]) == 2
    assert "runs on a swarm; its live checks run at `make up`" in capsys.readouterr().err
