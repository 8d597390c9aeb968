"""The toolchain is the official one: every plugin the engine uses, and the language host it starts, is the binary
`toolchain/build.sh` built from the vendored upstream sources (its checksum and Go main module recorded in built.tsv),
so no look-alike can slip back in."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from model.project import ROOT
from tests.conftest import require

VERSIONS = dict(
    line.split("=", 1)
    for line in (ROOT / "scripts" / "setup" / "versions.env").read_text().splitlines()
    if line and not line.startswith("#")
)
OFFICIAL = {  # built program -> (version, vendored archive sha256, the upstream Go main module)
    "pulumi-language-python": (
        VERSIONS["PULUMI_LANGHOST_VERSION"],
        VERSIONS["PULUMI_LANGHOST_SHA256"],
        "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3",
    ),
    "pulumi-resource-command": (
        VERSIONS["PULUMI_COMMAND_VERSION"],
        VERSIONS["PULUMI_COMMAND_SHA256"],
        "github.com/pulumi/pulumi-command/provider/cmd/pulumi-resource-command",
    ),
    "pulumi-resource-docker": (
        VERSIONS["PULUMI_DOCKER_VERSION"],
        VERSIONS["PULUMI_DOCKER_SHA256"],
        "github.com/pulumi/pulumi-docker/provider/v5/cmd/pulumi-resource-docker",
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def built(pulumi_cli: str) -> dict[str, list[str]]:
    toolchain = os.environ.get("AGENSH_TOOLCHAIN", "")
    record = Path(toolchain) / "built.tsv"
    require(record.is_file(), f"the toolchain's build record {record} (an official CLI from elsewhere has none)")
    return {row[0]: row for row in (line.split("\t") for line in record.read_text().splitlines())}


def test_the_record_names_the_vendored_sources_and_official_modules(built):
    for name, (version, archive, module) in OFFICIAL.items():
        assert built[name][1:3] == [version, archive] and built[name][4] == module, built[name]
    sources = ROOT.parent / "shared" / "vendor" / "SOURCES.md"
    if sources.exists():  # the record's archive checksums are the ones the vendor folder publishes
        assert all(archive in sources.read_text() for _, archive, _ in OFFICIAL.values())


def test_installed_plugins_are_the_built_binaries(built, pulumi_cli: str):
    listed = json.loads(
        subprocess.run([pulumi_cli, "plugin", "ls", "--json"], capture_output=True, text=True, check=True).stdout
    )
    plugins = {p["name"]: p for p in listed if p["kind"] == "resource"}
    for name in ("command", "docker"):
        program = f"pulumi-resource-{name}"
        assert plugins[name]["version"] == OFFICIAL[program][0]
        # the engine runs a plugin from PULUMI_HOME/plugins/<kind>-<name>-v<version>/ (where `plugin ls` lists it)
        home = Path(os.environ.get("PULUMI_HOME", Path.home() / ".pulumi"))
        binary = home / "plugins" / f"resource-{name}-v{plugins[name]['version']}" / program
        assert sha256(binary) == built[program][3], f"{binary} is not the binary built from the vendored source"
        info = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True).stdout
        assert f"path\t{OFFICIAL[program][2]}" in info


def test_the_language_host_on_path_is_the_built_one(built, pulumi_cli: str):
    host = shutil.which("pulumi-language-python")
    assert host is not None and Path(host).parent == Path(pulumi_cli).parent
    assert sha256(Path(host)) == built["pulumi-language-python"][3]
    for helper in ("pulumi-language-python-exec", "pulumi-resource-pulumi-python"):
        assert (Path(host).parent / helper).is_file()


def test_the_engine_launches_the_built_language_host(built, pulumi_cli: str, tmp_path: Path):
    """Not only on PATH: the engine's own log says which language host it starts for a Python program."""
    (tmp_path / "Pulumi.yaml").write_text(
        f"name: hostcheck\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n"
    )
    (tmp_path / "__main__.py").write_text("import pulumi\npulumi.export('ok', 1)\n")
    (tmp_path / "state").mkdir()
    env = dict(os.environ, PULUMI_BACKEND_URL=f"file://{tmp_path / 'state'}", PULUMI_CONFIG_PASSPHRASE="t")
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    subprocess.run(
        [pulumi_cli, "stack", "init", "t", "--non-interactive"], cwd=tmp_path, env=env, check=True, capture_output=True
    )
    out = subprocess.run(
        [pulumi_cli, "preview", "--non-interactive", "-v=9", "--logtostderr"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    launched = re.findall(r"Launching plugin 'python' from '([^']+)'", out.stderr)
    assert launched and all(sha256(Path(p)) == built["pulumi-language-python"][3] for p in launched), launched
