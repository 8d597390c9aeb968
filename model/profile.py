"""The team profile: its settings (`settings.py`) with what is derived from them, validated before anything is
created.

A profile is what one Pulumi stack's `agensh:` config holds (docs/requirements.md RB-E, J). `parse_profile` reports
every problem at once, each naming its config key, so a bad stack is refused with one message. The rules
and limits are the contract's (`contract.py`), which the policy pack and the preflight apply too.
Secrets are not part of the profile: they travel separately (`contract.SECRET_KEYS`) so the profile can be
hashed and recorded in provenance as it is.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from . import addressing, catalog, contract, placement
from .checkout import CONVENTIONS
from .ramp import Ramp, TaskBudget, budget
from .roles import ROLES
from .rundir import ProfileDir
from .settings import ProfileSettings

NAMESPACE = "agensh"


class Profile(ProfileSettings):
    """The settings with what is derived from them: networks, addresses, ports, images, the task budget."""

    @property
    def start_time(self) -> datetime | None:
        """`start_at` as an aware UTC time (validated by `check`)."""
        return parse_utc(self.start_at) if self.start_at else None

    @property
    def systemd_slice(self) -> str | None:
        """The slice its containers, launcher and deadline keepers run in: the host units', when it has them."""
        return contract.SLICE if self.host_units != "off" else None

    @property
    def compose_project(self) -> str:
        return contract.compose_project(self.profile)

    def labels(self, role: str, task: str | None = None) -> dict[str, str]:
        return contract.labels(self.profile, self.run_id, role, task, self.kind)

    @property
    def deadline(self) -> int:
        """The task budget in seconds (hours * 3600 unless deadline_seconds says so; they must agree)."""
        return self.deadline_seconds if self.deadline_seconds is not None else contract.deadline_s(self.hours)

    @property
    def ramp(self) -> Ramp:
        return Ramp(
            stagger_s=self.wake_stagger_s,
            fast_stagger_s=self.wake_fast_stagger_s,
            slow_workers=self.wake_slow_workers,
            settle_s=self.bringup_settle_s,
            min_wait_s=self.wake_ramp_subj_s,
        )

    @property
    def task_budget(self) -> TaskBudget:
        return budget(self.ramp, self.workers, self.hours)

    @property
    def routers(self) -> int:
        """Routers running at once: one per worker of the current task; a baseline has none."""
        return self.workers if self.kind == "team" else 0

    @property
    def slots(self) -> int:
        if self.kind == "baseline":
            return addressing.baseline_slots()
        return addressing.team_slots(len(self.tasks), self.workers)

    @property
    def internal_network(self) -> ipaddress.IPv4Network:
        if self.internal_subnet:
            return ipaddress.IPv4Network(self.internal_subnet)
        net = addressing.derived_internal(self.subnet_octet, self.slots)
        if net is None:
            raise ValueError("team too large for a derived subnet")
        return net

    @property
    def egress_network(self) -> ipaddress.IPv4Network:
        if self.egress_subnet:
            return ipaddress.IPv4Network(self.egress_subnet)
        return addressing.derived_egress(self.subnet_octet)

    @property
    def operator_network(self) -> ipaddress.IPv4Network | None:
        """Only teams that publish operator ports have one; on a swarm every team does (the steps reach the services
        through the ports published on the manager)."""
        published = self.publish_ports or self.engine == "swarm"
        return addressing.derived_operator(self.subnet_octet) if self.kind == "team" and published else None

    @property
    def data_network(self) -> ipaddress.IPv4Network | None:
        """A team's database network (MySQL, Gitea, Mattermost, routers; never a worker); a baseline has none."""
        if self.kind != "team":
            return None
        net = addressing.derived_data(self.subnet_octet, addressing.data_slots(len(self.tasks), self.workers))
        if net is None:
            raise ValueError("team too large for a derived data network")
        return net

    def member_ip(self, task: str, role: str, n: int, internal: ipaddress.IPv4Network | None = None) -> str:
        """Address of task `task`'s router or worker number n (1-based) on the internal network (pass the network
        when asking for many: it is derived on each access)."""
        slot = addressing.TeamSlot(self.workers)
        index = slot.router_index if role == "router" else slot.worker_index
        return addressing.host(internal or self.internal_network, index(self.tasks.index(task), n - 1))

    def router_data_ip(self, task: str, n: int, data: ipaddress.IPv4Network | None = None) -> str:
        """Address of task `task`'s router number n on the data network."""
        net = data or self.data_network
        assert net is not None, "a baseline has no data network"
        return addressing.host(net, addressing.TeamSlot(self.workers).router_data_index(self.tasks.index(task), n - 1))

    @property
    def ports(self) -> dict[str, int]:
        """Operator ports by role: on 127.0.0.1 of one host; on a swarm on the manager, with the roles the steps reach
        there (manager_port)."""
        if not self.operator_network:
            return {}
        offsets = {
            r.name: r.operator_port if r.operator_port is not None or self.engine != "swarm" else r.manager_port
            for r in ROLES.values()
        }
        return {role: self.port_base + o for role, o in offsets.items() if o is not None}

    @property
    def private_tag(self) -> str | None:
        """Tag for every project image of an uncached experiment (docs/requirements.md R18)."""
        return f"{self.profile}-{self.run_id}" if self.uncached else None

    def image(self, role: str) -> str:
        """Name of a shared image; uncached experiments get the private tag."""
        name = getattr(self, role.replace("-", "_") + "_image")
        return _retag(name, self.private_tag)

    def worker_image(self, task_id: str) -> str:
        return contract.worker_image(task_id, self.private_tag or self.agent_image_tag)

    def cleanroom_image(self, task_id: str) -> str:
        image = contract.cleanroom_image(task_id, self.cleanroom_org)
        digest = self.cleanroom_digests.get(task_id)
        return f"{image.split(':')[0]}@{digest}" if digest else image

    def checkout_path(self, project_dir: Path) -> Path:
        return (project_dir / Path(self.agensh_checkout).expanduser()).resolve()

    @property
    def checkout_dir(self) -> Path:
        """The checkout as given (absolute once `config.load` resolved it)."""
        return Path(self.agensh_checkout)

    @property
    def limits(self) -> dict[str, int]:
        """The team limits as `contract.team_limit_problems` takes them."""
        return {
            "workers": self.workers,
            "tasks": len(self.tasks),
            "routers": self.routers,
            "administrators": self.administrators,
            "mm_max_users": self.mm_max_users_per_team,
            "mysql_max_connections": self.mysql_max_connections,
            "platform_connections": self.mysql_platform_connections,
        }

    def _data_dir(self, data_root: str) -> str:
        return str(ProfileDir(Path(data_root) / self.profile).data())

    def policy_config(self) -> dict[str, dict[str, Any]]:
        """The policy pack's settings that come from this profile (`new_stack` writes them beside the stack), so
        the pack checks the rendered stack with the profile's own numbers."""
        return {
            "team-limits": {
                "administrators": self.administrators,
                "platformConnections": self.mysql_platform_connections,
            },
            "memory-ceilings": {
                "workerMaxMb": self.worker_memory_gib * contract.GIB_MB,
                "routerMaxMb": self.router_memory_gib * contract.GIB_MB,
            },
            "worker-isolation": {
                "dataDir": self._data_dir(self.data_root),
                **(
                    {"nodeDataDirs": sorted({self._data_dir(n.data_root) for n in self.swarm.nodes if n.data_root})}
                    if self.swarm and self.engine == "swarm"
                    else {}
                ),
            },
            **({"swarm-placement": placement.policy_config(self)} if self.swarm and self.engine == "swarm" else {}),
        }

    def digest(self) -> str:
        """Hash of every setting, recorded in provenance."""
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


class ProfileError(ValueError):
    """Every problem of a profile, each naming its config key."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        lines = "\n".join(f"  {NAMESPACE}:{key}: {msg}" for key, msg in problems)
        super().__init__(f"the profile has {len(problems)} problem(s):\n{lines}")


def parse_utc(value: str) -> datetime:
    """A UTC time in ISO 8601 with whole seconds (`2026-12-02T06:00:00Z` or `...+00:00`), else ValueError."""
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time; expected UTC like 2026-12-02T06:00:00Z") from None
    if t.utcoffset() != timedelta(0):
        raise ValueError(f"{value!r}: give the time in UTC, ending in Z (like 2026-12-02T06:00:00Z)")
    if t.microsecond:
        raise ValueError(f"{value!r}: give whole seconds")
    return t.astimezone(UTC)


def from_config_strings(values: dict[str, str]) -> dict[str, Any]:
    """Config values as Pulumi hands them over (strings; structured values as JSON) -> raw profile values."""
    out: dict[str, Any] = {}
    problems = []
    for key, value in values.items():
        try:
            out[key] = json.loads(value) if value.lstrip()[:1] in ("[", "{") else value
        except json.JSONDecodeError as err:
            problems.append((key, f"not valid JSON ({err.msg} at character {err.pos})"))
    if problems:
        raise ProfileError(problems)
    return out


# Settings a profile may no longer hold, each with the reason a stack that still has one is told.
RETIRED = {
    "keep_pulled_images": "retired: pulled images are always kept on destroy, since the other profiles on the host "
    "use them (only a run's private tags are removed); remove the setting",
}


def parse_profile(raw: dict[str, Any]) -> Profile:
    """Validate raw config values into a Profile, or raise ProfileError listing every problem."""
    try:
        prof = Profile.model_validate(raw)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            key = ".".join(str(p) for p in e["loc"]) or "(profile)"
            msg = e["msg"]
            if e["type"] == "extra_forbidden":
                msg = RETIRED.get(key, "unknown setting (typo?)")
            problems.append((key, msg))
        raise ProfileError(problems) from None
    problems = check(prof)
    if problems:
        raise ProfileError(problems)
    return prof


def check(p: Profile) -> list[tuple[str, str]]:
    """Rules across settings; every rule adds (config key, message)."""
    out: list[tuple[str, str]] = []
    if not contract.PROFILE_RE.fullmatch(p.profile):
        out.append(("profile", "use lowercase letters, digits and hyphens, starting with a letter or digit"))
    if not contract.RUN_ID_RE.fullmatch(p.run_id):
        out.append(("run_id", "expected UTC `YYYYMMDDtHHMMSSz`, as `date -u +%Y%m%dt%H%M%Sz` prints"))
    known = catalog.tasks()
    seen: set[str] = set()
    for t in p.tasks:
        if t not in known:
            out.append(("tasks", f"{t!r} is not a ProgramBench task (see `programbench` task data)"))
        if t in seen:
            out.append(("tasks", f"{t!r} is listed twice"))
        seen.add(t)
    for t in p.cleanroom_digests:
        if t not in p.tasks:
            out.append(("cleanroom_digests", f"{t!r} is not one of this profile's tasks"))
    for t, d in p.cleanroom_digests.items():
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", d):
            out.append(("cleanroom_digests", f"{t}: digest must look like sha256:<64 hex>"))
    if p.deadline_seconds is not None and p.deadline_seconds != contract.deadline_s(p.hours):
        out.append(
            (
                "deadline_seconds",
                f"{p.deadline_seconds} disagrees with hours={p.hours} ({contract.deadline_s(p.hours)} s)",
            )
        )
    out += _check_upstream(p.llm_upstream)
    out += _check_images(p)
    out += _check_paths(p)
    if p.kind == "baseline":
        if p.workers != 1:
            out.append(("workers", "a baseline has exactly one worker"))
        if len(p.tasks) != 1:
            out.append(("tasks", "a baseline runs exactly one task"))
        if p.host_units == "remote":
            out.append(("host_units", "a baseline runs on the local host"))
    else:
        out += contract.team_limit_problems(**p.limits)
    for key, role, gib, max_gib in (
        ("worker_memory_gib", "worker", p.worker_memory_gib, contract.WORKER_MEMORY_MAX_GIB),
        ("router_memory_gib", "router", p.router_memory_gib, contract.ROUTER_MEMORY_MAX_GIB),
    ):
        if problem := contract.memory_problem(role, gib * contract.GIB_MB, max_gib):
            out.append((key, problem))
    if p.host_units == "remote" and not p.ssh_host:
        out.append(("ssh_host", "required when host_units is remote"))
    if p.host_units == "remote" and not p.ssh_host_key:
        out.append(
            (
                "ssh_host_key",
                "required when host_units is remote: the host's public key, e.g. the "
                "`ssh-ed25519 AAAA...` line of `ssh-keyscan -t ed25519 <host>`, so no other host "
                "can answer in its place",
            )
        )
    if p.ssh_host_key and not re.fullmatch(r"(ssh|ecdsa)-[\w@.-]+ [A-Za-z0-9+/=]+( .*)?", p.ssh_host_key.strip()):
        out.append(("ssh_host_key", "expected a public key line such as `ssh-ed25519 AAAA...`"))
    if p.start_at is not None:  # a time in the past is refused by the command that schedules, not here
        try:
            parse_utc(p.start_at)
        except ValueError as err:
            out.append(("start_at", str(err)))
    for t in p.tasks:
        if len(contract.member_name(p.profile, t, "worker", p.workers)) > contract.MAX_NAME:
            out.append(("profile", f"names for task {t} exceed {contract.MAX_NAME} characters; use a shorter profile"))
            break
    if p.stacks == "per-task" and p.engine == "swarm":
        out.append(("stacks", "per-task stacks run on one Docker host; a swarm profile runs as one stack"))
    report = CONVENTIONS[p.checkout_convention].report
    if report.file and p.engine == "swarm":
        out.append(
            (
                "checkout_convention",
                f"{p.checkout_convention}: its activity report is a file the project copies out of a container of "
                "this host, and a swarm's workers run on other nodes; use a convention whose report is the log",
            )
        )
    out += _check_subnets(p)
    out += placement.problems(p)
    return out


def _check_subnets(p: Profile) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    nets: dict[str, ipaddress.IPv4Network] = {}
    for key in ("internal_subnet", "egress_subnet"):
        value = getattr(p, key)
        if value is None:
            continue
        try:
            net = ipaddress.IPv4Network(value)
        except ValueError as err:
            out.append((key, f"not an IPv4 subnet: {err}"))
            continue
        if not net.is_private:
            out.append((key, f"{net} is not a private range"))
        nets[key] = net
    if "internal_subnet" not in nets and p.internal_subnet is None:
        if addressing.derived_internal(p.subnet_octet, p.slots) is None:
            out.append(("workers", f"{p.slots} addresses do not fit a derived subnet; set internal_subnet"))
        else:
            nets["internal_subnet"] = p.internal_network
    if "egress_subnet" not in nets and p.egress_subnet is None:
        nets["egress_subnet"] = p.egress_network
    internal, egress = nets.get("internal_subnet"), nets.get("egress_subnet")
    derived = {"operator network (10.<subnet_octet>.254.0/24)": p.operator_network}
    if p.kind == "team":
        data = addressing.derived_data(p.subnet_octet, addressing.data_slots(len(p.tasks), p.workers))
        if data is None:
            out.append(("workers", "the routers do not fit the data network (10.<subnet_octet>.128.0/18)"))
        derived["data network (10.<subnet_octet>.128.0/N)"] = data
    for name, other in derived.items():
        for key, subnet in (("internal_subnet", internal), ("egress_subnet", egress)):
            if other is not None and subnet is not None and subnet.overlaps(other):
                out.append((key, f"{subnet} overlaps the {name}: {other}"))
    if internal is not None and internal.num_addresses < p.slots:
        out.append(
            ("internal_subnet", f"{internal} holds {internal.num_addresses} addresses; the profile needs {p.slots}")
        )
    if internal is not None and egress is not None and internal.overlaps(egress):
        out.append(("egress_subnet", f"{egress} overlaps the internal subnet {internal}"))
    if egress is not None and egress.num_addresses < 8:
        out.append(("egress_subnet", f"{egress} is too small for the egress proxy and gateway"))
    return out


def _check_upstream(url: str) -> list[tuple[str, str]]:
    """The gateway's base URL: http(s), a host, and nothing secret or extra (it is recorded in plain provenance)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as err:
        return [("llm_upstream", f"not a URL: {err}")]
    out = []
    if parts.scheme not in ("http", "https") or not parts.hostname:
        out.append(("llm_upstream", "expected an http(s) URL with a host"))
    if parts.username or parts.password:
        out.append(
            (
                "llm_upstream",
                f"carries credentials; give the token as {contract.MODEL_CREDENTIAL_ENV} (kept "
                "encrypted), not in the URL",
            )
        )
    if parts.query or parts.fragment:
        out.append(("llm_upstream", "has a query or fragment; give the plain base URL"))
    if parts.path.rstrip("/").endswith("/v1/responses"):
        out.append(("llm_upstream", "give the base URL, without /v1/responses"))
    return out


def _check_images(p: Profile) -> list[tuple[str, str]]:
    out = []
    for key in [k for k in Profile.model_fields if k.endswith("_image")]:
        if not contract.IMAGE_RE.fullmatch(getattr(p, key)):
            out.append((key, f"{getattr(p, key)!r} is not a Docker image reference (repository[:tag][@sha256:...])"))
    if not contract.REPOSITORY_RE.fullmatch(p.cleanroom_org):
        out.append(("cleanroom_org", f"{p.cleanroom_org!r} is not a Docker repository path"))
    if not contract.TAG_RE.fullmatch(p.agent_image_tag):
        out.append(("agent_image_tag", f"{p.agent_image_tag!r} is not a Docker tag"))
    return out


def _check_paths(p: Profile) -> list[tuple[str, str]]:
    """destroy deletes <data root>/<profile>: the data root must be an absolute directory of its own."""
    out = []
    roots = {}
    for key in ("data_root", "traj_root"):
        value = getattr(p, key)
        path = Path(value).expanduser() if value else None
        if path is None or not path.is_absolute():
            out.append((key, f"{value!r}: give an absolute path (~ is allowed)"))
            continue
        resolved = path.resolve()
        if str(resolved) in contract.SYSTEM_DIRS or resolved == Path.home().resolve():
            out.append((key, f"{value!r} is a system directory; give a directory of its own, e.g. ~/.agensh/data"))
            continue
        roots[key] = resolved
    if len(roots) == 2:
        profile_dir = roots["data_root"] / p.profile
        if roots["traj_root"] == profile_dir or profile_dir in roots["traj_root"].parents:
            out.append(("traj_root", f"is inside the profile's data ({profile_dir}), which destroy deletes"))
    if p.ssh_key_path and not Path(p.ssh_key_path).expanduser().is_absolute():
        out.append(("ssh_key_path", "give an absolute path (~ is allowed)"))
    return out


def _retag(image: str, tag: str | None) -> str:
    if tag is None:
        return image
    return f"{contract.image_repository(image)}:{tag}"
