"""Deterministic physical names and labels.

Names follow Agensh's Compose naming, `omcgitea-<profile>-<service>[-<n>]`, and every object carries the
Compose project label so existing Agensh reboot guards recognise (and stop) it.
"""

from __future__ import annotations

import re

PREFIX = "omcgitea"
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
PROFILE_LABEL = "agensh.profile"
RUN_LABEL = "agensh.run-id"
ROLE_LABEL = "agensh.role"
TASK_LABEL = "agensh.task"
KIND_LABEL = "agensh.kind"


def task_slug(task_id: str) -> str:
    """`jgm__pandoc.5caad90` -> `jgm-pandoc-5caad90`: usable in image and container names."""
    return re.sub(r"[^a-z0-9]+", "-", task_id.lower()).strip("-")


def compose_project(profile: str) -> str:
    return f"{PREFIX}-{profile}"


def resource_name(profile: str, service: str, n: int | None = None) -> str:
    """`omcgitea-<profile>-<service>[-<n>]`."""
    base = f"{PREFIX}-{profile}-{service}"
    return base if n is None else f"{base}-{n}"


def worker_name(profile: str, task_id: str, n: int) -> str:
    return resource_name(profile, f"{task_slug(task_id)}-worker", n)


def router_name(profile: str, task_id: str, n: int) -> str:
    return resource_name(profile, f"{task_slug(task_id)}-router", n)


def labels(profile: str, run_id: str, role: str, task_id: str | None = None, kind: str = "team") -> dict[str, str]:
    """Labels every container, network, volume and built image of a profile carries."""
    out = {
        COMPOSE_PROJECT_LABEL: compose_project(profile),
        PROFILE_LABEL: profile,
        RUN_LABEL: run_id,
        ROLE_LABEL: role,
        KIND_LABEL: kind,
    }
    if task_id is not None:
        out[TASK_LABEL] = task_id
    return out
