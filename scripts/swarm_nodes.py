"""swarm_nodes: a swarm profile's directories on each node, made before any service mounts them and removed by
`pulumi destroy`, with the images the nodes pulled; and the archives a node's workers sealed, brought to the
manager at shutdown.

Everything goes through the node's own Docker API (`docker -H <node>`, e.g. `ssh://root@node`): a short-lived
container of an image the node has (by digest from the manager's registry), with no network, the node's data root
mounted. Swarm refuses to start a task whose bind source does not exist, and its data must stay on its node.

    create: mkdir every bind source (archives owned by the worker uid)
    delete: once the swarm has removed the services' containers from a node, remove the profile's directory there
            (not on the manager: the profile_data step removes that one, after its own checks), then the profile's
            images and the registry names they were tagged or pulled with
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from model import contract, steps
from model.step_inputs import NodeArchive, NodeDirs, SwarmNodesInputs
from scripts.lib.step import load_inputs, mode_of, progress

HELPER_MOUNT = "/node"
CONTAINERS_GONE_S = 120  # swarm removes a removed service's task containers on each node in its own time


def helper(
    docker_host: str, image: str, mount: str, script: str, read_only: bool = False, **kw
) -> subprocess.CompletedProcess[bytes]:
    """`sh -c script` as root in a throwaway container on the node, with `mount` (a node path) at /node."""
    return subprocess.run(
        [
            "docker",
            "-H",
            docker_host,
            "run",
            "--rm",
            "--network",
            "none",
            "--user",
            "0",
            "--entrypoint",
            "sh",
            "-v",
            f"{mount}:{HELPER_MOUNT}{':ro' if read_only else ''}",
            image,
            "-c",
            script,
        ],
        capture_output=True,
        **kw,
    )


def create(node: NodeDirs) -> None:
    root = Path(node.profile_dir).parent  # the node's data root (`docker run -v` makes it when missing)

    def there(path: str) -> str:
        return f"'{HELPER_MOUNT}/{Path(path).relative_to(root)}'"

    script = "mkdir -p " + " ".join(there(d) for d in [node.profile_dir, *node.dirs, *node.owned])
    if node.owned:
        script += f" && chown {contract.WORKER_USER} " + " ".join(there(d) for d in node.owned)
    out = helper(node.docker_host, node.image, str(root), script)
    if out.returncode:
        raise RuntimeError(f"{node.node}: {out.stderr.decode(errors='replace').strip()}")
    progress(f"swarm_nodes: {node.node}: {len(node.dirs) + len(node.owned)} directories under {node.profile_dir}")


def docker(node: NodeDirs, *args: str) -> list[str]:
    return subprocess.run(["docker", "-H", node.docker_host, *args], capture_output=True, text=True).stdout.split()


def delete(node: NodeDirs, profile: str, published: list[str]) -> None:
    deadline = time.monotonic() + CONTAINERS_GONE_S
    while docker(node, "ps", "-aq", "--filter", contract.profile_filter(profile)) and time.monotonic() < deadline:
        time.sleep(2)
    if not node.manager:
        helper(
            node.docker_host,
            node.image,
            str(Path(node.profile_dir).parent),
            f"rm -rf '{HELPER_MOUNT}/{Path(node.profile_dir).name}'",
        )
    repos = {contract.image_repository(name) for name in published}
    # the registry names: by name where tagged (other names of the image stay), else (pulled by digest) by id
    names = []
    for line in docker(node, "images", "--format", "{{.ID}}={{.Repository}}:{{.Tag}}"):
        image_id, ref = line.split("=", 1)
        if contract.image_repository(ref) in repos:
            names.append(image_id if ref.endswith(":<none>") else ref)
    ids = docker(node, "images", "-q", "--filter", contract.profile_filter(profile))
    if names or ids:
        subprocess.run(
            ["docker", "-H", node.docker_host, "rmi", "-f", *sorted(set(names)), *sorted(set(ids))], capture_output=True
        )
    progress(f"swarm_nodes: {node.node}: the profile's directory and images removed")


def collect(archive: NodeArchive, dest: Path) -> None:
    """A worker's archive directory on its node -> `dest` on the manager (tar through the node's Docker API)."""
    dest.mkdir(parents=True, exist_ok=True)
    tar = helper(archive.docker_host, archive.image, archive.path, f"tar -C {HELPER_MOUNT} -c .", read_only=True)
    if tar.returncode:
        raise RuntimeError(f"reading {archive.path} on {archive.docker_host}: {tar.stderr.decode(errors='replace')}")
    subprocess.run(["tar", "-x", "-C", str(dest), "--no-same-owner"], input=tar.stdout, check=True)


def main(argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    mode = mode_of("swarm_nodes", argv, steps.SWARM_NODES.args, steps.SWARM_NODES.delete)
    a = load_inputs(SwarmNodesInputs, env)
    problems = []
    for node in a.nodes:
        try:
            create(node) if mode == steps.SWARM_NODES.args else delete(node, a.profile, a.published)
        except (RuntimeError, OSError) as err:
            problems.append(str(err))
    for problem in problems:
        print(f"swarm_nodes {mode}: {problem}", file=sys.stderr)
    print(f'{{"nodes": {len(a.nodes)}, "problems": {len(problems)}}}')
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
