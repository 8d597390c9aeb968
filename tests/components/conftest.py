"""Pulumi mocks that record every registration: type, inputs, parent and dependencies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime.mocks import MockMonitor

from model.checkout import SHARED_IMAGES, WORKER_IMAGE
from model.profile import Profile, parse_profile
from model.project import ROOT

SECRET_VALUES = {
    "llm_upstream_token": "MODEL-TOKEN-0123456789",
    "worker_proxy_token": "PROXY-CRED-0123456789",
    "mysql_root_password": "MYSQL-PW-0123456789",
    "mysql_router_password": "MYSQL-ROUTER-PW-0123456789",
    "mysql_mattermost_password": "MYSQL-MM-PW-0123456789",
    "gitea_admin_password": "GITEA-PW-0123456789",
    "mattermost_admin_password": "MM-PW-0123456789",
}


@dataclass
class Reg:
    type: str
    name: str
    inputs: dict[str, Any]
    parent: str
    deps: list[str]
    urn: str
    aliases: list[str]  # each alias's parent (the engine finds the resource under it in a stack made before)


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        out = dict(args.inputs)
        if args.typ == "docker:index/remoteImage:RemoteImage":
            out["imageId"] = f"sha256:{abs(hash(args.name)):064x}"[:71]
        if args.typ == "docker:index/registryImage:RegistryImage":
            out["sha256Digest"] = f"sha256:{abs(hash(args.name)):064x}"[:71]
        if args.typ.startswith("command:"):
            out["stdout"] = ""  # nothing ran (as in preview)
        if args.typ == "pulumi:pulumi:StackReference":
            out["outputs"] = {"provenance": {"scores": {"jgm__pandoc.5caad90": {"score": 0.75}}}}
        return f"{args.name}-id", out

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: Mocks):
        super().__init__(mocks)
        self.regs: dict[str, Reg] = {}

    def RegisterResource(self, request):  # noqa: N802 (gRPC name)
        resp = super().RegisterResource(request)
        inputs = pulumi.runtime.rpc.deserialize_properties(request.object) if request.custom else {}
        aliases = [a.spec.parentUrn for a in request.aliases]
        self.regs[request.name] = Reg(
            request.type, request.name, inputs, request.parent, list(request.dependencies), resp.urn, aliases
        )
        return resp


def checkout(tmp: Path) -> Path:
    """A stand-in Agensh checkout with the real layout (Dockerfiles only)."""
    for image in SHARED_IMAGES.values():
        (tmp / image.dockerfile).parent.mkdir(parents=True, exist_ok=True)
        (tmp / image.dockerfile).write_text("FROM scratch\n")
    (tmp / WORKER_IMAGE.dockerfile).write_text("ARG AGENT_BASE_IMAGE\nFROM $AGENT_BASE_IMAGE\n")
    (tmp / "prompts").mkdir(exist_ok=True)
    return tmp


def stack_profile(stack: str, tmp: Path, **over: Any) -> Profile:
    cfg = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    raw = {k.split(":", 1)[1]: v for k, v in cfg.items()}
    raw.update(agensh_checkout=str(checkout(tmp)), data_root=str(tmp / "data"), **over)
    return parse_profile(raw)


@pytest.fixture
def run_program() -> Callable[[Callable[[], Any]], dict[str, Reg]]:
    """Run a program under mocks; return every registration by logical name."""

    def run(program: Callable[[], Any]) -> dict[str, Reg]:
        mocks = Mocks()
        monitor = RecordingMonitor(mocks)
        pulumi.runtime.set_mocks(mocks, preview=False, monitor=monitor)
        pulumi.runtime.test(program)()
        return monitor.regs

    return run


def secrets() -> dict[str, pulumi.Output[str]]:
    return {k: pulumi.Output.secret(v) for k, v in SECRET_VALUES.items()}
