"""The checkout contract: everything the project reads from an Agensh checkout and from the workers it builds.

A researcher brings their own checkout, so what the project needs from it is said in one place: the Dockerfiles and
the build arguments the project passes them, the prompts the steps read, the self-check and its answer, how a worker
reports its session (the activity report), the silence watchdog's setting and where a worker seals its archive.
Where a checkout may choose (its activity report and self-check) it picks a named convention, `CONVENTIONS`, which
its profile names in `checkout_convention`. `check` reads a checkout against it, files only (nothing of the checkout
runs), for `scripts.cli check-checkout` and the preflight; docs/checkout.md explains it to a checkout's author.
`VERSION` is recorded in every run's manifest.

Pure Python, no Pulumi.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from .contract import PREFIX

VERSION = 1  # raised whenever a checkout must change to keep meeting the contract


@dataclass(frozen=True)
class BuildArg:
    """A build argument the project passes: Docker drops one the Dockerfile does not declare (`ARG NAME`)."""

    name: str
    value: str  # what the project passes in it


COPILOT_VERSION = BuildArg("COPILOT_VERSION", "the profile's copilot_version (the Copilot CLI release to install)")
TASK_IMAGE = BuildArg("TASK_IMAGE", "the task's cleanroom image (the worker image is built on it)")
AGENT_BASE_IMAGE = BuildArg("AGENT_BASE_IMAGE", "the agent base image just built (the worker image takes its files)")


@dataclass(frozen=True)
class Image:
    """An image the project builds from the checkout; paths are relative to the checkout."""

    role: str
    dockerfile: str
    context: str
    args: tuple[BuildArg, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SharedImage(Image):
    """An image built once per profile (the worker images are built per task, named by contract.worker_image)."""

    tag: str  # the default tag, which a profile setting may change
    baseline: bool = False  # a baseline builds it too (a team builds every image)


AGENT_BASE = SharedImage(
    "agent-base", "agent/Dockerfile.base", "agent", (COPILOT_VERSION,), tag=f"{PREFIX}-agent-base:pbench", baseline=True
)
SHARED_IMAGES = {
    i.role: i
    for i in (
        AGENT_BASE,
        SharedImage("mini-router", "mini-router/Dockerfile", "mini-router", tag=f"{PREFIX}-mini-router:local"),
        SharedImage("board", "board-service/Dockerfile", "board-service", tag=f"{PREFIX}-board:local"),
        SharedImage(
            "secret-service", "secret-service/Dockerfile", "secret-service", tag=f"{PREFIX}-secret-service:local"
        ),
        SharedImage("bootstrap", "docker/bootstrap/Dockerfile", "docker/bootstrap", tag=f"{PREFIX}-bootstrap:local"),
        SharedImage(
            "egress-proxy",
            "docker/egress-proxy/Dockerfile",
            "docker/egress-proxy",
            tag=f"{PREFIX}-egress-proxy:local",
            baseline=True,
        ),
    )
}
WORKER_IMAGE = Image("worker", "agent/Dockerfile", ".", (TASK_IMAGE, AGENT_BASE_IMAGE))
WORKER_FILES = AGENT_BASE.context  # the folder whose files the worker images install (the agent base's context)


def shared_images(baseline: bool) -> list[SharedImage]:
    """The images a team (or a baseline) builds before its worker images."""
    return [i for i in SHARED_IMAGES.values() if i.baseline or not baseline]


@dataclass(frozen=True)
class Prompt:
    """A file of the checkout's prompts folder that the project reads."""

    path: str  # relative to the checkout
    read_by: str  # who reads it, and how


PROMPTS_DIR = "prompts"  # mounted read-only into every worker at PROMPTS_MOUNT
PROMPTS_MOUNT = "/opt/agensh/prompts"
KICKOFF = Prompt(
    f"{PROMPTS_DIR}/kickoff.md",
    "the kickoff message, which the kickoff step posts in the team chat with $task_id and $deadline filled in "
    "(Python's string.Template) and a baseline's worker reads itself",
)
PROMPTS = (KICKOFF,)


@dataclass(frozen=True)
class SelfCheck:
    """A command of every worker image that says whether its build is whole: the preflight runs it as the
    entrypoint, without network, before a team is started on the image."""

    command: str
    answer: tuple[str, ...]  # words its standard output must hold

    @property
    def line(self) -> str:
        return " ".join(self.answer)


@dataclass(frozen=True)
class Counted:
    """The event kinds a session's summary counts, by the field of `model.records.Session` each is counted in."""

    prompts: str
    turns: str
    tool_calls: str
    watchdog: str
    errors: str


@dataclass(frozen=True)
class ActivityReport:
    """How a worker reports its ACP session, and where the project reads it: the kickoff (each session's Copilot CLI
    version, its own `agentInfo.version`), the nudges and `status` (when it last did something), the shutdown and a
    baseline's stop (the events kept and summarised), the report. `scripts/lib/activity.py` has one reader per
    report; nothing else reads the events."""

    name: str
    where: str  # where the project reads the events, in words
    file: str | None  # the file in the worker holding the events (absolute); None: the container's log
    prefix: str  # one event per line: the prefix (may be empty), then a JSON object
    kind: str  # an event's field holding its kind
    at: str  # an event's field holding its time
    version_event: str  # the kind of the event carrying the CLI's version ...
    version_field: str  # ... and its field
    sign: str  # a text some file of the worker images' context holds when it writes this report
    counted: Counted


DEMO_LOG = ActivityReport(
    name="demo-log",
    where="the worker's container log (`docker logs`, on a swarm `docker service logs`)",
    file=None,
    prefix="activity ",
    kind="kind",
    at="at",
    version_event="session",
    version_field="copilot_version",
    sign="activity {",
    counted=Counted(
        prompts="prompt", turns="turn_end", tool_calls="tool_call", watchdog="watchdog", errors="prompt_error"
    ),
)
WORKER_HOME = "/home/agent"  # the worker image's HOME (a file report lives in it, and is archived with it)
CC_LOG = ActivityReport(
    name="cc-log",
    where=f"the file {WORKER_HOME}/.agensh/cc.log in the worker (copied out with `docker cp`, running or stopped)",
    file=f"{WORKER_HOME}/.agensh/cc.log",
    prefix="",
    kind="type",
    at="ts",
    version_event="session_start",
    version_field="cli_version",
    sign="cc.log",
    counted=Counted(
        prompts="user_prompt", turns="turn_complete", tool_calls="tool_use", watchdog="watchdog", errors="error"
    ),
)


@dataclass(frozen=True)
class Watchdog:
    """The ACP silence watchdog's setting (a team's mini_router_stuck_ms, a baseline's acp_recover_s), given under
    both names: the router or the worker, whichever holds the watchdog, reads its own."""

    router_env: str
    worker_env: str


SILENCE = Watchdog(router_env="MINI_ROUTER_STUCK_MS", worker_env="ACP_SILENCE_MS")


@dataclass(frozen=True)
class Convention:
    """What a checkout chooses where the contract allows a choice (the profile's `checkout_convention` names one):
    its activity report and its self-check. (Which side holds the silence watchdog needs no choice: both get its
    setting, `SILENCE`.)"""

    name: str
    report: ActivityReport
    selfcheck: SelfCheck


CONVENTIONS = {
    c.name: c
    for c in (
        Convention("demo", DEMO_LOG, SelfCheck("pbench-selfcheck", ("board=True", "copilot=yes"))),  # demo/checkout
        Convention(  # the second test checkout's (tests/checkouts/cc_log)
            "cc-log", CC_LOG, SelfCheck("agensh-selfcheck", ("selfcheck=ok", "cli=present"))
        ),
    )
}
DEFAULT_CONVENTION = "demo"


def convention(name: str) -> Convention:
    """The convention of that name; ValueError naming the known ones (the profile's and the steps' validation)."""
    if name not in CONVENTIONS:
        raise ValueError(f"unknown checkout convention {name!r}; the contract knows {', '.join(sorted(CONVENTIONS))}")
    return CONVENTIONS[name]


ConventionName = Annotated[str, AfterValidator(lambda name: convention(name).name)]


@dataclass(frozen=True)
class Archive:
    """Where a stopped worker seals its HOME and workspace: the mount is the agent's archive directory of the run on
    the host (`model.rundir.ProfileDir.archive_dir`), which the shutdown verifies and `preserve` copies."""

    mount: str
    tarball: str  # a gzipped tar the shutdown opens and lists


ARCHIVE = Archive(mount="/archive", tarball="state.tar.gz")


@dataclass(frozen=True)
class Miss:
    """One thing a checkout lacks: the file (a folder ends in `/`) and the line or file expected there."""

    file: str
    expected: str

    def __str__(self) -> str:
        return f"{self.file}: {self.expected}"


ARG_LINE = re.compile(r"^\s*ARG\s+(.*)$", re.IGNORECASE | re.MULTILINE)
MAX_READ = 1 << 20  # a file read for a text: programs and scripts, not data


def declared_args(dockerfile: str) -> set[str]:
    """The names a Dockerfile's ARG lines declare (`ARG NAME`, `ARG NAME=default`, several on one line)."""
    return {word.split("=", 1)[0] for line in ARG_LINE.findall(dockerfile) for word in line.split()}


def files(folder: Path) -> Iterator[Path]:
    """The regular files below a folder, links and Git's own files left out."""
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(top) / name
            if path.is_file() and not path.is_symlink():
                yield path


def holds(path: Path, text: str) -> bool:
    """Whether a file holds a text (one too large or unreadable does not)."""
    try:
        return path.stat().st_size <= MAX_READ and text in path.read_text(errors="replace")
    except OSError:
        return False


def image_misses(root: Path, image: Image) -> list[Miss]:
    path = root / image.dockerfile
    if not path.is_file():
        context = "the checkout" if image.context == "." else f"{image.context}/"
        return [Miss(image.dockerfile, f"missing: the Dockerfile of the {image.role} image (context {context})")]
    declared = declared_args(path.read_text(errors="replace"))
    return [
        Miss(image.dockerfile, f"no line `ARG {a.name}`: the project passes {a.value} in it")
        for a in image.args
        if a.name not in declared
    ]


def worker_misses(root: Path, conv: Convention) -> list[Miss]:
    """The self-check and the activity report, as far as the worker images' files show them."""
    folder, selfcheck, report = root / WORKER_FILES, conv.selfcheck, conv.report
    cmd = selfcheck.command
    found = list(files(folder)) if folder.is_dir() else []
    out = []
    if not any(p.name == cmd for p in found):
        out.append(
            Miss(
                f"{WORKER_FILES}/",
                f"no file {cmd}: the worker images' self-check of the {conv.name} convention, which the preflight "
                f"runs in each of them and which must print `{selfcheck.line}`",
            )
        )
    dockerfiles = [f for f in (AGENT_BASE.dockerfile, WORKER_IMAGE.dockerfile) if (root / f).is_file()]
    if dockerfiles and not any(holds(root / f, cmd) for f in dockerfiles):
        out.append(
            Miss(
                " and ".join(dockerfiles),
                f"no line names {cmd}: one of them must install it into the worker image "
                f"(e.g. `COPY bin/{cmd} /usr/local/bin/`)",
            )
        )
    if not any(holds(p, report.sign) for p in found):
        line = f"`{report.prefix}{{json}}`" if report.prefix else "JSON"
        out.append(
            Miss(
                f"{WORKER_FILES}/",
                f"no file holds `{report.sign}`: in the {report.name} activity report of the {conv.name} convention "
                f"each worker writes its session's events, one {line} line each, to {report.where}, and its "
                f"`{report.version_event}` event carries the Copilot CLI's version in `{report.version_field}`",
            )
        )
    return out


def revision(root: Path) -> str | None:
    """The checkout's Git commit (None outside Git): the label of the images built from it, which the preflight
    compares with the checkout it finds."""
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


def check(root: Path, baseline: bool = False, conv: Convention = CONVENTIONS[DEFAULT_CONVENTION]) -> list[Miss]:
    """Every miss of a checkout against the contract with its convention, read from its files only: nothing of the
    checkout runs."""
    if not root.is_dir():
        return [Miss(str(root), "not a directory: the Agensh checkout")]
    misses = [m for image in (*shared_images(baseline), WORKER_IMAGE) for m in image_misses(root, image)]
    misses += [Miss(p.path, f"missing: {p.read_by}") for p in PROMPTS if not (root / p.path).is_file()]
    return misses + worker_misses(root, conv)


def refusal(root: Path, baseline: bool, conv_name: str) -> str | None:
    """Why a checkout cannot be used with a convention (every miss, one line), or None: the program's, the
    preflight's and `check`'s one message."""
    misses = check(root, baseline, convention(conv_name))
    if not misses:
        return None
    return (
        f"the Agensh checkout {root} does not meet the checkout contract v{VERSION} with the {conv_name} convention "
        "(docs/checkout.md): " + "; ".join(map(str, misses))
    )
