"""The demo's pre-built images, all without a registry: the real Gitea and MariaDB images
(scripts/setup/service_images.py: Gitea built once from its Go module and cached by version), the stand-in service image
(demo/checkout/standin) and the Mattermost stand-in the demo profile names, the real GitHub Copilot CLI at the demo
profile's pinned version (scripts/setup/copilot_cli.py: from npm, cached by version, imported as
`agensh-copilot:<version>`), and the calculator task's cleanroom image and test blobs. The stack pulls these by name
(they are local), and `destroy` removes them; a second run of this program rebuilds only what is gone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from model import contract
from model.project import DEMO_CHECKOUT, ROOT
from scripts.setup import cache_root, calculator, copilot_cli, service_images


def standin_images(tag: str = "demo") -> tuple[str, str]:
    """The stand-in service image (the checkout's Dockerfiles build FROM it) and the Mattermost stand-in, by tag: the
    tests use a private tag, so they never rebuild what another run uses."""
    return f"{contract.PREFIX}-standin:{tag}", f"{contract.PREFIX}-standin-mattermost:{tag}"


STANDIN, MATTERMOST = standin_images()
BLOBS = cache_root() / "demo" / "blobs"


def build(tag: str, context: Path | None = None, dockerfile: str | None = None, label: str = "") -> None:
    args = ["docker", "build", "-q", "-t", tag, "--label", f"agensh.standin={label or tag}"]
    env = {**os.environ, **service_images.LEGACY_BUILDER}
    if dockerfile is not None:
        subprocess.run([*args, "-"], input=dockerfile.encode(), env=env, check=True, capture_output=True)
    else:
        subprocess.run([*args, str(context)], env=env, check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--standin-tag", default="demo", help="tag of the stand-in images (a test's private tag)")
    standin, mattermost = standin_images(parser.parse_args(argv).standin_tag)
    t0 = time.monotonic()
    try:
        real = [
            service_images.mariadb_image(),
            service_images.gitea_image(),
            copilot_cli.image(contract.OFFLINE_ACP_COPILOT_VERSION),
        ]
    except RuntimeError as err:
        print(f"demo images: {err}", file=sys.stderr)
        return 1
    build(standin, ROOT / DEMO_CHECKOUT / "standin", label="services")
    # its own tag, so destroy can remove it on its own
    build(mattermost, dockerfile=f"FROM {standin}\nLABEL agensh.standin.role=mattermost\n", label="mattermost")
    image = calculator.build_cleanroom("agensh-demo", {"agensh.standin": "cleanroom"})
    calculator.blob_dir(BLOBS)
    print(
        f"demo images ({time.monotonic() - t0:.0f} s): real {', '.join(real)}; stand-ins {standin}, {mattermost}; "
        f"{image}; test blobs in {BLOBS}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
