"""The real GitHub Copilot CLI at a pinned version, without a registry of images: `npm install @github/copilot@<v>`
once into the cache (keyed by version), checked by running `copilot --version`, then imported into Docker as the
image `agensh-copilot:<v>` (only `/opt/copilot`, the platform package's files), which the demo checkout's agent base
image copies from (`ARG COPILOT_VERSION`). Real Agensh checkouts install the CLI in their own Dockerfile.

The CLI updates itself from npm unless told not to; every run here sets COPILOT_OFFLINE and COPILOT_AUTO_UPDATE.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from model import contract
from model.checkout import AGENT_BASE
from scripts.setup import cache_root

PACKAGE = "@github/copilot"
PLATFORM_PACKAGE = "@github/copilot-linux-x64"  # the CLI itself: one executable with its bundled files
CLI = Path("node_modules") / PLATFORM_PACKAGE / "copilot"  # where npm puts it, below the install folder
IMAGE_REPOSITORY = "agensh-copilot"
NO_UPDATE = {"COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false"}


class CopilotError(RuntimeError):
    """The pinned CLI cannot be had or is not what it says."""


def image_name(version: str) -> str:
    return f"{IMAGE_REPOSITORY}:{version}"


def wanted_by(checkout: Path) -> bool:
    """Whether a checkout's agent base image copies the CLI from `agensh-copilot:<version>` (the demo's does; a real
    Agensh checkout installs the CLI in its own Dockerfile)."""
    dockerfile = checkout / AGENT_BASE.dockerfile
    return dockerfile.exists() and f"{IMAGE_REPOSITORY}:" in dockerfile.read_text()


def install_dir(version: str) -> Path:
    return cache_root() / "copilot" / version


def reported_version(executable: Path) -> str:
    """What the CLI says it is (`copilot --version`), run with auto-update off in a throwaway HOME."""
    with tempfile.TemporaryDirectory() as home:
        out = subprocess.run(
            [str(executable), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": home, **NO_UPDATE},
        )
    found = contract.COPILOT_VERSION_OUT.search(out.stdout)
    if not found:
        raise CopilotError(f"{executable} --version said {(out.stdout + out.stderr).strip()[-200:]!r}")
    return found.group(1)


def install(version: str) -> Path:
    """The CLI at `version` in the cache; installed from npm when absent. A version npm does not serve (or whose
    Linux package it lacks) is refused with npm's answer."""
    if not contract.SEMVER_RE.fullmatch(version):
        raise CopilotError(f"copilot_version {version!r} is not a version such as 1.0.78")
    dest = install_dir(version)
    exe = dest / CLI
    if exe.exists() and reported_version(exe) == version:
        return exe
    npm = shutil.which("npm")
    if npm is None:
        raise CopilotError("npm is needed to install the Copilot CLI (apt-get install npm)")
    served = subprocess.run([npm, "view", f"{PACKAGE}@{version}", "version"], capture_output=True, text=True)
    if served.returncode or version not in served.stdout.split():
        said = next((line for line in (served.stderr or served.stdout).splitlines() if line.strip()), "no answer")
        raise CopilotError(
            f"npm does not serve {PACKAGE}@{version} ({said.strip()}); `npm view {PACKAGE} versions` "
            "lists those it does"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=dest.parent))
    t0 = time.monotonic()
    try:
        out = subprocess.run(
            [npm, "install", "--prefix", str(part), "--no-audit", "--no-fund", "--no-save", f"{PACKAGE}@{version}"],
            capture_output=True,
            text=True,
        )
        if out.returncode:
            raise CopilotError(f"npm install {PACKAGE}@{version} failed: {out.stderr.strip()[-400:]}")
        cli = part / CLI
        if not cli.exists():
            raise CopilotError(
                f"npm installed {PACKAGE}@{version} without its CLI: npm does not serve "
                f"{PLATFORM_PACKAGE}@{version} (choose another version)"
            )
        got = reported_version(cli)
        if got != version:
            raise CopilotError(f"npm installed {PACKAGE}@{version} but its CLI says {got}")
        shutil.rmtree(dest, ignore_errors=True)
        part.rename(dest)
    finally:
        shutil.rmtree(part, ignore_errors=True)
    print(f"copilot: installed {PACKAGE}@{version} into {dest} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return exe


def image(version: str) -> str:
    """`agensh-copilot:<version>`: the CLI's files at /opt/copilot, imported (no base image, no registry)."""
    name = image_name(version)
    if subprocess.run(["docker", "image", "inspect", name], capture_output=True).returncode == 0:
        return name
    root = install(version).parent
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "copilot.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(root, arcname="opt/copilot")
        subprocess.run(
            ["docker", "import", "--change", f"LABEL agensh.copilot.version={version}", str(archive), name],
            check=True,
            capture_output=True,
        )
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "version",
        nargs="?",
        default=contract.OFFLINE_ACP_COPILOT_VERSION,
        help="the @github/copilot version (default: the demo's, %(default)s)",
    )
    try:
        print(image(parser.parse_args(argv).version))
    except (CopilotError, subprocess.CalledProcessError) as err:
        print(f"copilot: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
