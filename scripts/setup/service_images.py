"""Real Gitea and MariaDB images for the demo and the tests, built on this machine without a registry.

- Gitea: the Go module `code.gitea.io/gitea`, built once (`scripts/setup/go_build.py`: its go.mod has replace
  directives, so in a writable copy of the module, not with `go install`). The binary and the `options/`,
  `templates/` and `public/` folders it needs in its work path are cached by version in
  `${AGENSH_CACHE:-~/.cache/agensh}/gitea/<version>/`, outside the checkout, so a fresh clone reuses them. No
  front-end build: the API and Git over HTTP need none.
- MariaDB: Debian's `mariadb-server` installed on the local base image (`scripts/setup/base_image.sh`).

Both images are FROM `agensh-base:bookworm` with their Dockerfile and entrypoint in `demo/services/`. An image is
rebuilt only when its key (base image, build files, version) changes: the key is the image's `agensh.image.key`
label, so a second run does nothing. The demo's MariaDB image is also saved in `<cache>/mariadb/<key>.tar` and
loaded from there once `destroy` removed it (Gitea's image is rebuilt from the cached build in seconds).

    .venv/bin/python -m scripts.setup.service_images        # build what is missing, print the image names
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from model import contract
from model.project import DEMO_SERVICES, ROOT
from scripts.setup import cache_lock, cache_root
from scripts.setup.calculator import BASE_IMAGE
from scripts.setup.go_build import GoBuild, cached, run

SERVICES = ROOT / DEMO_SERVICES
GITEA_MODULE = "code.gitea.io/gitea"
GITEA_VERSION = "1.26.0"
GITEA_IMAGE = f"agensh-gitea:{GITEA_VERSION}"
MARIADB_IMAGE = "agensh-mariadb:bookworm"
GITEA_DIST = ("gitea", "options", "templates", "public")  # the binary and its work path
LEGACY_BUILDER = {"DOCKER_BUILDKIT": "0"}


def say(message: str) -> None:
    print(f"service_images: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ Gitea binary
def gitea_build(version: str = GITEA_VERSION) -> GoBuild:
    """Gitea `version` from its module. No build tags: the project uses MySQL, so no SQLite and no cgo; assets are read
    from the work path (GITEA_DIST), so no front-end build either: the API and Git over HTTP need none."""
    return GoBuild(
        name="gitea",
        module=GITEA_MODULE,
        version=version,
        binary=GITEA_DIST[0],
        ldflags=f"-s -w -X main.Version={version} -X main.Tags=",
        keep=GITEA_DIST[1:],
    )


# ------------------------------------------------------------------------------------------------ images
def image_key(tag: str) -> tuple[str, str] | None:
    """The image id of `tag` and its `agensh.image.key` label, or None when there is no such image."""
    out = subprocess.run(
        ["docker", "image", "inspect", "-f", '{{.Id}} {{index .Config.Labels "agensh.image.key"}}', tag],
        capture_output=True,
        text=True,
    )
    return tuple(out.stdout.split()) if out.returncode == 0 else None  # type: ignore[return-value]


def build_key(files: dict[str, Path], extra: str) -> str:
    """Hash of the base image id, the build files and `extra` (the version): a change rebuilds the image."""
    h = hashlib.sha256(run("docker", "image", "inspect", "-f", "{{.Id}}", BASE_IMAGE).encode())
    for name, path in sorted(files.items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(extra.encode())
    return h.hexdigest()[:16]


def build_image(
    tag: str, files: dict[str, Path], extra: str = "", labels: dict[str, str] | None = None, saved: Path | None = None
) -> bool:
    """Build `tag` from `files` (context name -> file or folder; "Dockerfile" among them) unless an image with the
    same key exists (the files, not the folders, are hashed). The context is streamed to `docker build -` as a tar.
    With `saved` (a folder) the built image is also kept there as `<key>.tar` (`docker save`), and loaded from it
    when the image is gone (after `destroy`): no rebuild, no package mirror. Returns whether it built."""
    with cache_lock(f"image-{tag}"):
        return _build_image(tag, files, extra, labels, saved)


def _build_image(
    tag: str, files: dict[str, Path], extra: str, labels: dict[str, str] | None, saved: Path | None
) -> bool:
    key = build_key({n: p for n, p in files.items() if p.is_file()}, extra)
    old = image_key(tag)
    if old and old[1:] == (key,):
        return False
    if saved and (saved / f"{key}.tar").is_file():
        run("docker", "load", "-q", "-i", str(saved / f"{key}.tar"))
        if (image_key(tag) or ("",))[1:] == (key,):
            say(f"loaded {tag} from {saved / f'{key}.tar'}")
            return False
    t0 = time.monotonic()
    label_args = contract.label_args({**(labels or {}), "agensh.image.key": key})
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: docker's errors cannot block the upload
        proc = subprocess.Popen(
            ["docker", "build", "-q", "-t", tag, *label_args, "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, **LEGACY_BUILDER},
        )
        assert proc.stdin is not None
        try:
            with tarfile.open(fileobj=proc.stdin, mode="w|", format=tarfile.GNU_FORMAT) as tar:
                for name, path in sorted(files.items()):
                    tar.add(path, arcname=name)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # docker stopped reading: its error follows
        if proc.wait():
            err.seek(0)
            raise RuntimeError(f"docker build {tag} failed: {err.read().decode(errors='replace').strip()[-2000:]}")
    if old and old[0] != (image_key(tag) or ("",))[0]:  # the replaced image, unless something still uses it
        subprocess.run(["docker", "rmi", old[0]], capture_output=True)
    if saved:
        saved.mkdir(parents=True, exist_ok=True)
        part = saved / f".{key}.tar.part"
        run("docker", "save", "-o", str(part), tag)
        for stale in saved.glob("*.tar"):
            stale.unlink()
        part.rename(saved / f"{key}.tar")
    say(f"built {tag} in {time.monotonic() - t0:.0f} s")
    return True


def gitea_image(tag: str = GITEA_IMAGE, version: str = GITEA_VERSION, labels: dict[str, str] | None = None) -> str:
    """The real Gitea image: the cached build on the local base, run as user `git` (see demo/services/gitea)."""
    dist, here = cached(gitea_build(version)), SERVICES / "gitea"
    files = {name: here / name for name in ("Dockerfile", "entrypoint.sh", "app.ini")}
    files |= {f"dist/{name}": dist / name for name in (*GITEA_DIST, "BUILD.json")}  # BUILD.json keys the build
    build_image(
        tag,
        files,
        extra=version,
        labels={"org.opencontainers.image.version": version, "agensh.service": "gitea", **(labels or {})},
    )
    return tag


def mariadb_image(tag: str = MARIADB_IMAGE, labels: dict[str, str] | None = None) -> str:
    """The real MariaDB image: Debian's mariadb-server on the local base (see demo/services/mariadb)."""
    here = SERVICES / "mariadb"
    files = {name: here / name for name in ("Dockerfile", "entrypoint.sh", "agensh.cnf")}
    saved = cache_root() / "mariadb" if tag == MARIADB_IMAGE else None  # the demo's tag survives `destroy` as a tar
    build_image(tag, files, labels={"agensh.service": "mysql", **(labels or {})}, saved=saved)
    return tag


def main() -> int:
    try:
        images = [mariadb_image(), gitea_image()]
    except RuntimeError as err:
        say(f"FAILED: {err}")
        return 1
    print(" ".join(images))
    return 0


if __name__ == "__main__":
    sys.exit(main())
