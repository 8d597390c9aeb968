"""The demo's team services against real Docker: the real Gitea and MariaDB (demo/services), and the stand-in
Agensh services and Mattermost of the demo's stand-in checkout (demo/checkout), and workers that run the real GitHub
Copilot CLI in ACP sessions (the checkout's ACP driver) against the scripted stand-in model behind the egress proxy.

Every container is started from the project's own contract (`model.roles.spec` of a small test
profile): its env, secret env, mounts, command, user, hostname and health check. Each group sits on one internal
network created here with a free 10.x subnet; the test process reaches the containers by their address. Images
are built under private test tags and removed at the end, as are the containers and the networks.

The real Gitea is built once from its Go module and cached (scripts/setup/service_images.py): a cold cache adds a few
minutes to the first run.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import ipaddress
import json
import os
import secrets
import shutil
import socket
import string
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import programbench
import pytest
import yaml

from model import addressing, contract
from model.checkout import DEFAULT_CONVENTION, SHARED_IMAGES, WORKER_IMAGE
from model.contract import ADMIN_USER, TEAM_ORG
from model.profile import Profile, parse_profile
from model.project import DEMO_CHECKOUT, ROOT
from model.records import Receipt, Wake, WakeResult
from model.roles import HTTP_PORT, ROLES
from model.rundir import ProfileDir, RunDir
from model.services import secret_key, secret_setting, spec
from model.step_inputs import NudgesInputs
from model.topology import Layout
from scripts import export, nudges, preflight, score, seed
from scripts.lab.sandbox import free_octet
from scripts.lib import activity
from scripts.lib.chat import post_to_team
from scripts.lib.gitops import git, with_user
from scripts.lib.step import now, write_atomic
from scripts.setup import calculator, copilot_cli, demo_images, service_images
from tests.scripts.conftest import kicked_off

DEMO = ROOT / DEMO_CHECKOUT
TASK = calculator.TASK
SLUG = contract.task_slug(TASK)
RUN = uuid.uuid4().hex[:8]
TEST_LABEL = f"agensh.test=team-services-{RUN}"
TAG = f"test-{RUN}"
BUILD_ENV = {"DOCKER_BUILDKIT": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
MAX_CONNECTIONS = 237  # not the default, so the query shows the profile's value reached the server
COPILOT = contract.OFFLINE_ACP_COPILOT_VERSION
SILENCE_MS = 20_000  # the workers' ACP silence watchdog here (a profile's is 20 minutes)
BUNDLED_EVAL = Path(programbench.__file__).parent / "data" / "test_runs" / "correct" / TASK / f"{TASK}.eval.json"


def load_standin():
    """The stand-in program (demo/checkout/standin/standin.py) as a module: its user-name mapping."""
    found = importlib.util.spec_from_file_location("standin", DEMO / "standin" / "standin.py")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


standin = load_standin()


def docker(*args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, env=env)
    if check and out.returncode:
        raise AssertionError(f"docker {' '.join(args[:3])} failed: {out.stderr.strip()[-800:]}")
    return out


def build(tag: str, context: Path, dockerfile: Path, **args: str) -> str:
    build_args = [a for k, v in args.items() for a in ("--build-arg", f"{k}={v}")]
    docker(
        "build", "-q", "-t", tag, "--label", TEST_LABEL, "-f", str(dockerfile), *build_args, str(context), env=BUILD_ENV
    )
    return tag


# ------------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def images(docker_engine: None):
    """omcgitea-standin and the checkout's shared images built FROM it, the real MariaDB and Gitea: private tags."""
    made: list[str] = []
    labels = dict([TEST_LABEL.split("=", 1)])
    try:
        made.append(build(f"omcgitea-standin:{TAG}", DEMO / "standin", DEMO / "standin" / "Dockerfile"))
        tags = {}
        copilot_cli.image(COPILOT)  # shared and cached by version, like the toolchain: never removed here
        for role, image in SHARED_IMAGES.items():
            tags[role] = build(
                f"{image.tag.split(':')[0]}:{TAG}",
                DEMO / image.context,
                DEMO / image.dockerfile,
                STANDIN_IMAGE=made[0],
                **({"COPILOT_VERSION": COPILOT} if role == "agent-base" else {}),
            )
            made.append(tags[role])
        made.append(service_images.mariadb_image(f"agensh-mariadb:{TAG}", labels=labels))
        made.append(service_images.gitea_image(f"agensh-gitea:{TAG}", labels=labels))
        yield {"standin": made[0], **tags, "mysql": made[-2], "gitea": made[-1]}
    finally:
        for tag in reversed(made):
            docker("rmi", "-f", tag, check=False)


def internal_network(name: str):
    """The team network 10.X.0.0/24 (`name`) and, beside it, the data network 10.X.128.0/24 (`name-data`), as the
    profile derives them: the database sits on the data network only."""
    octet = free_octet()
    subnet = ipaddress.IPv4Network(f"10.{octet}.0.0/24")
    docker("network", "create", "--internal", "--subnet", str(subnet), "--label", TEST_LABEL, name)
    docker("network", "create", "--internal", "--subnet", f"10.{octet}.128.0/24", "--label", TEST_LABEL, f"{name}-data")
    try:
        yield name, subnet
    finally:
        docker("network", "rm", name, f"{name}-data", check=False)


@pytest.fixture(scope="module")
def network(docker_engine: None):
    yield from internal_network(f"agensh-standins-{RUN}")


@pytest.fixture()
def team(images, network, tmp_path: Path):
    """The test profile and a starter for its containers; removes every container it started."""
    t = Team(images, network[0], network[1], tmp_path, "standins")
    try:
        yield t
    finally:
        t.remove_all()


@dataclass
class Team:
    images: dict[str, str]
    network: str
    subnet: ipaddress.IPv4Network
    tmp: Path
    name: str
    started: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        model_ip = addressing.host(self.subnet, addressing.SERVICE_SLOTS - 1)  # one network: the model sits on it too
        image = self.images
        self.profile: Profile = parse_profile(
            {
                "profile": f"{self.name}-{RUN}",
                "run_id": "20250101t000000z",
                "tasks": [TASK],
                "workers": 2,
                "internal_subnet": str(self.subnet),
                "subnet_octet": int(str(self.subnet).split(".")[1]),
                "llm_upstream": f"http://{model_ip}:{HTTP_PORT}",
                "agensh_checkout": str(DEMO),
                "data_root": str(self.tmp / "data"),
                "host_units": "off",
                "wake_stagger_s": 0,
                "model_standin": True,
                "egress_internal": True,
                "mysql_image": image["mysql"],
                "gitea_image": image["gitea"],
                "mysql_max_connections": MAX_CONNECTIONS,
                "mattermost_image": image["standin"],
                "board_image": image["board"],
                "secret_service_image": image["secret-service"],
                "bootstrap_image": image["bootstrap"],
                "egress_proxy_image": image["egress-proxy"],
                "mini_router_image": image["mini-router"],
                "agent_base_image": image["agent-base"],
                "agent_image_tag": TAG,
                "copilot_version": COPILOT,
                "mini_router_stuck_ms": SILENCE_MS,
            }
        )
        self.secrets = {k: f"{k}-{secrets.token_hex(12)}" for k in contract.SECRET_KEYS}
        self.placements = {(c.role, c.index): c for c in Layout.of(self.profile).placements}
        self.model_ip = model_ip

    def ip(self, role: str, n: int | None = None) -> str:
        c = self.placements[(role, n)]
        return c.internal_ip or c.data_ip or self.model_ip

    def url(self, role: str, n: int | None = None) -> str:
        return f"http://{self.ip(role, n)}:{ROLES[role].port}"

    def mount(self, role: str, container_path: str, n: int | None = None) -> Path:
        """The host folder the contract mounts at `container_path` of the role."""
        found = spec(self.profile, self.placements[(role, n)]).mounts
        return Path(next(m.host_path for m in found if m.container_path == container_path))

    def start(self, role: str, n: int | None = None, wait: bool = True, limit: float = 20, **env_override: str) -> str:
        c, s = self.placements[(role, n)], spec(self.profile, self.placements[(role, n)])
        envs = dict(s.env)
        for k, ref in s.secret_env.items():
            envs[k] = secret_setting(k, ref, self.secrets[secret_key(ref)])
        envs.update(env_override)
        first = self.network if c.internal_ip or not c.data_ip else f"{self.network}-data"
        args = [
            "--name",
            c.name,
            "--network",
            first,
            "--ip",
            self.ip(role, n),
            "--hostname",
            c.name if ROLES[c.role].per_task else c.role,
            "--label",
            TEST_LABEL,
        ]
        for k, v in sorted(envs.items()):
            args += ["-e", f"{k}={v}"]
        for m in s.mounts:
            if not Path(m.host_path).exists():  # a data directory (files, such as init scripts, exist already)
                Path(m.host_path).mkdir(parents=True)
            args += ["-v", f"{m.host_path}:{m.container_path}{':ro' if m.read_only else ''}"]
        if s.user:
            args += ["--user", s.user]
        docker("create", *args, s.image, *(s.command or ()))
        self.started.append(c.name)
        if c.internal_ip and c.data_ip:
            docker("network", "connect", "--ip", c.data_ip, f"{self.network}-data", c.name)
        docker("start", c.name)
        if wait and s.healthcheck:
            self.healthy(c.name, s.healthcheck, limit)
        return c.name

    def healthy(self, name: str, check: tuple[str, ...], limit: float = 20) -> None:
        """Run the contract's health check in the container until it passes."""
        cmd = ["sh", "-c", check[1]] if check[0] == "CMD-SHELL" else list(check[1:])
        end = time.monotonic() + limit
        while True:
            out = docker("exec", name, *cmd, check=False)
            if out.returncode == 0:
                return
            if time.monotonic() > end:
                raise AssertionError(f"{name} not healthy: {out.stdout}{out.stderr}\n{logs(name)}")
            time.sleep(0.3)

    def remove_all(self) -> None:
        for name in reversed(self.started):
            docker("rm", "-f", "-v", name, check=False)
        self.started.clear()


def logs(name: str) -> str:
    out = docker("logs", name, check=False)
    return out.stdout + out.stderr


def http(method: str, url: str, body=None, headers: dict[str, str] | None = None) -> tuple[int, Any, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw, status, hdrs = resp.read(), resp.status, dict(resp.headers)
    except urllib.error.HTTPError as err:
        raw, status, hdrs = err.read(), err.code, dict(err.headers)
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        parsed = {"raw": raw.decode(errors="replace")}
    return status, parsed, hdrs


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def raw_request(sock: socket.socket, method: str, path: str, body: bytes = b"") -> tuple[int, dict, bytes]:
    """One HTTP/1.1 keep-alive request on an open socket, with the raw path (no client-side normalising)."""
    sock.sendall(
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        assert chunk, "connection closed before a response"
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    n = int(headers.get("content-length", 0))
    while len(rest) < n:
        rest += sock.recv(4096)
    return int(lines[0].split()[1]), headers, rest[:n]


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(3)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def post_raw(ip: str, port: int, path: str, body: bytes = b"{}") -> int:
    with socket.create_connection((ip, port), timeout=5) as s:
        return raw_request(s, "POST", path, body)[0]


# ------------------------------------------------------------------------------------------------ stand-ins
def test_images_are_labelled(images):
    for role, tag in images.items():
        labels = json.loads(docker("image", "inspect", "-f", "{{json .Config.Labels}}", tag).stdout)
        if role in ("mysql", "gitea"):  # the real services: labelled with the service, never as stand-ins
            assert labels.get("agensh.service") == role and "agensh.standin" not in labels, (role, labels)
        else:
            assert labels.get("agensh.standin") == "true", (role, labels)
    assert "stand-in" in (DEMO / "README.md").read_text().lower()
    kickoff = string.Template((DEMO / "prompts" / "kickoff.md").read_text()).substitute(task_id=TASK, deadline="D")
    assert TASK in kickoff and "$" not in kickoff


def test_agent_usernames_fit_gitea_and_mattermost():
    agents = [
        f"{TASK}-1",
        f"{TASK}-12",
        "jgm__pandoc.5caad90-120",
        "microsoft__typescript-go.0123456789ab-7",
        "x__7zip.abcdef0-3",
        "a_b__c--d..e.1234567-9",
    ]
    names = [standin.agent_username(a) for a in agents]
    assert names[:2] == ["calculator-abc1234-1", "calculator-abc1234-12"]
    assert names[2] == "pandoc-5caad90-120" and names[4] == "a7zip-abcdef0-3"
    for name in names:
        assert 3 <= len(name) <= standin.USERNAME_MAX == 22, name
        assert standin.MM_USERNAME_RE.match(name), name  # Mattermost: a letter first, lowercase, 3-22
        assert "__" not in name and "--" not in name and not name.endswith("-"), name  # Gitea's rules
    assert len(set(names)) == len(names)
    with pytest.raises(RuntimeError, match="agent id"):
        standin.agent_username("not-an-agent")


def test_token_service_security(team: Team):
    tokens = Path(spec(team.profile, team.placements[("secret-service", None)]).mounts[0].host_path)
    tokens.mkdir(parents=True)
    good = secrets.token_hex(16)
    (tokens / f"{TASK}-1.token").write_text(good + "\n")
    (tokens / f"{TASK}-2.token").symlink_to("/etc/passwd")  # a token file resolving outside the store
    (tokens / f"{TASK}-3.token").write_text("someone else's\n")
    # this test process reaches the service from the network's gateway: let it be agent 1 (as the addressing model
    # lets each worker's own address be its agent), and every other agent somewhere else
    gateway = str(team.subnet.network_address + 1)
    callers = {f"{TASK}-1": gateway, f"{TASK}-2": gateway, f"{TASK}-3": team.ip("worker", 2)}
    name = team.start("secret-service", SECRET_SERVICE_CALLERS=json.dumps(callers))
    ip = team.ip("secret-service")
    with socket.create_connection((ip, HTTP_PORT), timeout=5) as s:
        status, _, body = raw_request(s, "GET", f"/token/{TASK}-1")
        assert status == 200 and json.loads(body)["token"] == good
        status, _, _ = raw_request(s, "GET", "/healthz")  # a good request keeps the connection
        assert status == 200
    rejected = [
        f"/token/{TASK}",
        f"/token/{TASK}-",
        f"/token/{TASK}-0",
        "/token/testorg__calculator-1",
        f"/token/../{TASK}-1",
        "/token/..%2F..%2Fetc%2Fpasswd",
        f"/token/{TASK}-1/../../../etc/passwd",
        f"/token/{TASK}-1%2F..%2F..%2Fetc%2Fpasswd",
        "/token/..__..-1",
        f"/token/{TASK}-2",
        f"/token/{TASK}-3",
    ]
    for path in rejected:
        with socket.create_connection((ip, HTTP_PORT), timeout=5) as s:
            status, headers, body = raw_request(s, "GET", path)
            assert 400 <= status < 500, (path, status)
            assert headers.get("connection", "").lower() == "close", path
            assert closed_by_server(s), f"{path}: connection left open"
            assert b"root:" not in body and good.encode() not in body
    out = logs(name)
    assert "/tokens" not in out and good not in out and "stand-in" in out and "someone else" not in out


def test_a_worker_gets_only_its_own_token(team: Team):
    """With the project's own SECRET_SERVICE_CALLERS, from inside the team network: worker 1's address gets worker
    1's token, and nothing of worker 2's."""
    tokens = team.mount("secret-service", "/tokens")
    tokens.mkdir(parents=True)
    for n in (1, 2):
        (tokens / f"{TASK}-{n}.token").write_text(f"token-of-{n}\n")
    team.start("secret-service")
    url = team.url("secret-service")

    def fetch_from(address: str, agent: int) -> str:
        out = docker(
            "run",
            "--rm",
            "--network",
            team.network,
            "--ip",
            address,
            "--label",
            TEST_LABEL,
            team.images["standin"],
            "curl",
            "-s",
            "-w",
            " %{http_code}",
            f"{url}/token/{TASK}-{agent}",
            check=False,
        )
        return out.stdout

    assert fetch_from(team.ip("worker", 1), 1).endswith(" 200") and "token-of-1" in fetch_from(team.ip("worker", 1), 1)
    theirs = fetch_from(team.ip("worker", 1), 2)
    assert theirs.endswith(" 403") and "token-of-2" not in theirs


def test_a_named_caller_gets_only_its_own_token(team: Team):
    """On a swarm there are no fixed addresses: SECRET_SERVICE_CALLERS names each agent's caller (its worker's service
    name), which the token service resolves when asked. The container answering to agent 1's name gets agent 1's
    token; another container does not, and a name that resolves to nothing gets no token."""
    tokens = team.mount("secret-service", "/tokens")
    tokens.mkdir(parents=True)
    for n in (1, 2, 3):
        (tokens / f"{TASK}-{n}.token").write_text(f"token-of-{n}\n")
    one, two = f"{team.network}-caller-1", f"{team.network}-caller-2"
    callers = {f"{TASK}-1": one, f"{TASK}-2": two, f"{TASK}-3": f"{team.network}-nobody"}
    team.start("secret-service", SECRET_SERVICE_CALLERS=json.dumps(callers))
    url = team.url("secret-service")
    # two long-lived callers on the team network under their names (DNS of the network, as a swarm service's)
    for name in (one, two):
        docker(
            "run",
            "-d",
            "--name",
            name,
            "--network",
            team.network,
            "--label",
            TEST_LABEL,
            team.images["standin"],
            "sleep",
            "300",
        )

    def fetch_from(caller: str, agent: int) -> str:
        return docker(
            "exec", caller, "curl", "-s", "-w", " %{http_code}", f"{url}/token/{TASK}-{agent}", check=False
        ).stdout

    try:
        mine = fetch_from(one, 1)
        assert mine.endswith(" 200") and "token-of-1" in mine
        for caller, agent in ((one, 2), (two, 1), (one, 3), (two, 3)):
            theirs = fetch_from(caller, agent)
            assert theirs.endswith(" 403") and f"token-of-{agent}" not in theirs, (caller, agent, theirs)
        assert "token-of-2" in fetch_from(two, 2)
    finally:
        docker("rm", "-f", one, two, check=False)


def test_board_lifecycle_security(team: Team):
    data = Path(spec(team.profile, team.placements[("board", None)]).mounts[0].host_path)
    data.mkdir(parents=True)
    team.start("board")
    ip = team.ip("board")
    for path in (
        "/board/../lifecycle",
        "/board/..%2F..%2Fescape/lifecycle",
        "/board/%2e%2e/lifecycle",
        "/board/a/../../escape/lifecycle",
        "/board/..%2fescape/lifecycle",
        "/board/.hidden/lifecycle",
        "/board/x%00/lifecycle",
    ):
        assert post_raw(ip, HTTP_PORT, path, b'{"event": "claim"}') == 400, path
    assert sorted(p.name for p in data.iterdir()) == [], "a rejected request created something"

    for n in range(2):
        status, reply, _ = http("POST", f"http://{ip}:{HTTP_PORT}/board/task-1/lifecycle", {"event": "claim", "n": n})
        assert status == 200, reply
    lines = (data / "lifecycle" / "task-1.jsonl").read_text().splitlines()
    assert [json.loads(ln)["event"]["n"] for ln in lines] == [0, 1]

    (data / "lifecycle" / "evil.jsonl").symlink_to("../outside.jsonl")  # resolves to /data/outside.jsonl
    (data / "lifecycle" / "abs.jsonl").symlink_to("/etc/hostname-copy")
    for board in ("evil", "abs"):
        assert post_raw(ip, HTTP_PORT, f"/board/{board}/lifecycle") == 400
    assert not (data / "outside.jsonl").exists()
    assert sorted(p.name for p in data.iterdir()) == ["lifecycle"]


def test_egress_proxy_injects_the_model_credential(team: Team):
    model = team.start("model")
    proxy = team.start("egress-proxy")
    url = f"{team.url('egress-proxy')}/v1/responses"
    body = {"model": team.profile.model, "input": "hi", "reasoning": {"effort": "high"}}
    body["reasoning"]["effort"] = "low"  # the proxy sets the profile's effort, whatever the caller asks
    status, reply, _ = http("POST", url, body, {"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"})
    assert status == 200 and reply["output_text"] == "Noted." and reply["model"] == team.profile.model
    stats = http("GET", f"{team.url('model')}/stats")[1]
    assert (stats["ok"], stats["rejected"]) == (1, 0)  # the model saw the real credential
    assert stats["efforts"] == {team.profile.reasoning_effort: 1}
    for auth in (
        {"Authorization": "Bearer wrong"},
        {},
        {"Authorization": f"Bearer {team.secrets['llm_upstream_token']}"},
    ):
        assert http("POST", url, body, auth)[0] == 401
    stats = http("GET", f"{team.url('model')}/stats")[1]
    assert (stats["ok"], stats["rejected"]) == (1, 0)  # refused at the proxy, never forwarded
    # straight to the model with the proxy credential: refused by the model
    assert (
        http(
            "POST",
            f"{team.url('model')}/v1/responses",
            body,
            {"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"},
        )[0]
        == 401
    )
    # the model list: through the proxy with the proxy credential, the pinned model only (whatever the profile says)
    models = f"{team.url('egress-proxy')}/v1/models"
    status, listed, _ = http("GET", models, headers={"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"})
    assert status == 200 and [m["id"] for m in listed["data"]] == [contract.PINNED_MODEL]
    assert http("GET", models, headers={"Authorization": "Bearer wrong"})[0] == 401
    assert (
        http(
            "GET",
            f"{team.url('model')}/v1/models",
            headers={"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"},
        )[0]
        == 401
    )
    for name in (model, proxy):
        assert team.secrets["llm_upstream_token"] not in logs(name)


def test_preflight_model_check_through_the_standin_proxy(team: Team, tmp_path: Path):
    """The preflight's model phase against the stand-in proxy and gateway: the listed id passes, another fails naming
    the list, a gateway without a list (STANDIN_MODELS empty) is a warning."""

    def check(model: str) -> tuple[int, dict]:
        run_dir = tmp_path / model.replace("/", "_")
        inputs = {"run_dir": str(run_dir), "model": model, "effort": "high", "proxy_url": team.url("egress-proxy")}
        rc = preflight.main(
            ["model"], {"AGENSH_INPUT": json.dumps(inputs), "AGENSH_PROXY_TOKEN": team.secrets["worker_proxy_token"]}
        )
        receipt = json.loads((run_dir / "receipts" / "preflight-model.json").read_text())
        return rc, (receipt["result"] or receipt["details"])["checks"]["model-list"]

    team.start("model")
    team.start("egress-proxy")
    assert check(contract.PINNED_MODEL) == (
        0,
        {"ok": True, "warning": False, "detail": f"{contract.PINNED_MODEL} is one of the 1 models the gateway lists"},
    )
    rc, wrong = check("gpt-5.6")
    assert rc == 1 and f"which lists: {contract.PINNED_MODEL}." in wrong["detail"] and "agensh:model" in wrong["detail"]
    docker("rm", "-f", team.placements[("model", None)].name)
    team.start("model", STANDIN_MODELS="")
    rc, unlisted = check("gpt-5.6")
    assert rc == 0 and unlisted["warning"] and "HTTP 404" in unlisted["detail"]


def test_mattermost_standin_speaks_the_v4_api(team: Team):
    """The project's calls (login with the session in the Token header, team, channel, posts) and the bootstrap's
    (users, team membership), with the shapes of the real Mattermost v4 API; the stand-in says what it is."""
    from scripts.kickoff import post_to_team

    team.start("mysql", limit=120)  # the stand-in keeps its data where the real server does: in its own database
    team.start("mattermost", MM_TEAMSETTINGS_MAXUSERSPERTEAM="2")
    base = team.url("mattermost")
    api, admin_pw = f"{base}/api/v4", team.secrets["mattermost_admin_password"]
    status, ping, hdrs = http("GET", f"{api}/system/ping")
    assert (status, ping["status"], hdrs["X-Agensh-Standin"]) == (200, "OK", "mattermost")
    status, err, _ = http("POST", f"{api}/users/login", {"login_id": ADMIN_USER, "password": "wrong"})
    assert status == 401 and err["status_code"] == 401 and err["id"].startswith("api.user.login.")
    status, me, hdrs = http("POST", f"{api}/users/login", {"login_id": ADMIN_USER, "password": admin_pw})
    assert status == 200 and me["username"] == ADMIN_USER and "system_admin" in me["roles"]
    admin = {"Authorization": f"Bearer {hdrs['Token']}"}
    assert http("GET", f"{api}/users/me", None, admin)[1]["id"] == me["id"]

    assert http("GET", f"{api}/teams/name/pbench", None, admin)[0] == 404
    assert http("GET", f"{api}/teams/name/pbench")[0] == 401
    status, made, _ = http("POST", f"{api}/teams", {"name": "pbench", "display_name": "pbench", "type": "O"}, admin)
    assert status == 201 and len(made["id"]) == 26 and made["type"] == "O"
    assert http("POST", f"{api}/teams", {"name": "pbench", "display_name": "pbench", "type": "O"}, admin)[0] == 400
    path = f"{api}/teams/name/pbench/channels/name/town-square"
    status, channel, _ = http("GET", path, None, admin)
    assert status == 200 and channel["team_id"] == made["id"] and channel["name"] == "town-square"

    agent = f"{TASK}-1"
    name, token = standin.agent_username(agent), secrets.token_hex(20)
    body = {"username": agent, "email": "a@agensh.local", "password": token}
    assert http("POST", f"{api}/users", body, admin)[0] == 400  # an agent id is no Mattermost user name
    status, user, _ = http("POST", f"{api}/users", {**body, "username": name}, admin)
    assert status == 201 and user["username"] == name and "password" not in json.dumps(user)
    assert (
        http("POST", f"{api}/users", {**body, "username": name}, admin)[1]["id"]
        == "app.user.save.username_exists.app_error"
    )
    status, _, hdrs = http("POST", f"{api}/users/login", {"login_id": name, "password": token})
    worker = {"Authorization": f"Bearer {hdrs['Token']}"}
    assert status == 200 and http("GET", path, None, worker)[0] == 403  # not in the team yet
    member = {"team_id": made["id"], "user_id": user["id"]}
    assert http("POST", f"{api}/teams/{made['id']}/members", member, worker)[0] == 403  # admins add members
    status, joined, _ = http("POST", f"{api}/teams/{made['id']}/members", member, admin)
    assert status == 201 and joined["user_id"] == user["id"]
    other = http("POST", f"{api}/users", {**body, "username": "someone-else"}, admin)[1]
    full = http("POST", f"{api}/teams/{made['id']}/members", {"team_id": made["id"], "user_id": other["id"]}, admin)
    assert full[0] == 400 and full[1]["id"] == "app.team.join_user_to_team.max_accounts.app_error"

    kickoff = post_to_team(base, ADMIN_USER, admin_pw, "kickoff")  # the project's own client
    assert len(kickoff["id"]) == 26 and kickoff["channel_id"] == channel["id"]
    assert http("POST", f"{api}/posts", {"channel_id": channel["id"], "message": "hello"}, worker)[0] == 201
    read = http("GET", f"{api}/channels/{channel['id']}/posts", None, worker)[1]
    assert [read["posts"][i]["message"] for i in read["order"]] == ["hello", "kickoff"]
    assert http("PUT", f"{api}/users/{user['id']}/password", {"new_password": "x" * 12}, admin)[0] == 200
    assert http("POST", f"{api}/users/login", {"login_id": name, "password": token})[0] == 401

    # its data is in MariaDB, reached through the DSN as its own user, and outlives the container
    mm_pw = team.secrets["mysql_mattermost_password"]
    rows = mariadb(
        team, "SELECT COUNT(*) FROM mattermost.Posts; SELECT COUNT(*) FROM mattermost.Users", mm_pw, "mattermost"
    )
    assert rows.returncode == 0 and rows.stdout.split() == ["2", "3"], rows.stderr
    mm = team.placements[("mattermost", None)]
    check = spec(team.profile, mm).healthcheck
    assert check is not None
    docker("restart", mm.name)
    team.healthy(mm.name, check)
    hdrs = http("POST", f"{api}/users/login", {"login_id": ADMIN_USER, "password": admin_pw})[2]  # sessions end
    again = http("GET", f"{api}/channels/{channel['id']}/posts", None, {"Authorization": f"Bearer {hdrs['Token']}"})[1]
    assert [again["posts"][i]["message"] for i in again["order"]] == ["hello", "kickoff"]
    theirs = mariadb(team, "SELECT COUNT(*) FROM gitea.user", mm_pw, user="mattermost")
    assert theirs.returncode == 1 and "denied" in theirs.stderr  # its user sees only its own database


def test_mattermost_standin_refuses_what_the_real_server_would_not_run_with(team: Team):
    """A setting Mattermost does not have (the project once passed MM_SQLSETTINGS_DATASOURCE_HOST) stops the stand-in,
    and so does a DSN whose password the database refuses: neither becomes healthy."""
    team.start("mysql", limit=120)
    name = team.placements[("mattermost", None)].name
    for override, said in (
        (
            {"MM_SQLSETTINGS_DATASOURCE_HOST": "10.0.0.1:3306"},
            "MM_SQLSETTINGS_DATASOURCE_HOST is not a Mattermost setting",
        ),
        ({"MM_SQLSETTINGS_DRIVERNAME": "postgres"}, "MM_SQLSETTINGS_DRIVERNAME must be mysql"),
        (
            {"MM_SQLSETTINGS_DATASOURCE": f"mattermost:wrong-password@tcp({team.ip('mysql')}:3306)/mattermost"},
            "cannot use the database mattermost",
        ),
    ):
        team.start("mattermost", wait=False, **override)
        code = docker("wait", name).stdout.strip()
        assert code in ("1", "2") and said in logs(name), logs(name)
        docker("rm", "-f", name)
    # a database initialised before Mattermost had a user of its own is refused the same way, until the init script
    # runs once in the running database (docs/operations.md, "A database initialised by an earlier agensh")
    gone = mariadb(team, "DROP USER mattermost; DROP DATABASE mattermost", team.secrets["mysql_root_password"])
    assert gone.returncode == 0, gone.stderr
    team.start("mattermost", wait=False)
    assert docker("wait", name).stdout.strip() == "1" and "cannot use the database mattermost" in logs(name)
    docker("rm", "-f", name)
    mysql = team.placements[("mysql", None)].name
    made = docker("exec", mysql, "sh", "/docker-entrypoint-initdb.d/agensh-users.sh")
    assert "database user mattermost" in made.stdout
    team.start("mattermost")


# ------------------------------------------------------------------------------------------------ real services
def test_demo_profile_names_the_images_the_demo_builds():
    config = yaml.safe_load((ROOT / "stacks" / "demo.profile.yaml").read_text())["config"]
    assert config["agensh:gitea_image"] == service_images.GITEA_IMAGE
    assert config["agensh:mysql_image"] == service_images.MARIADB_IMAGE
    assert config["agensh:mattermost_image"] == demo_images.MATTERMOST
    baseline = yaml.safe_load((ROOT / "stacks" / "demo-baseline.profile.yaml").read_text())["config"]
    assert (
        config["agensh:copilot_version"] == baseline["agensh:copilot_version"] == COPILOT
    )  # the CLI demo_images imports


def test_mariadb_validates_its_first_start(images, tmp_path: Path):
    """A data folder the image did not initialise is refused, never touched; a bad database name stops it early."""

    def first_start(data: Path, **env: str) -> subprocess.CompletedProcess:
        envs = [a for k, v in {"MYSQL_ROOT_PASSWORD": "pw", **env}.items() for a in ("-e", f"{k}={v}")]
        return docker(
            "run",
            "--rm",
            "--network",
            "none",
            "--label",
            TEST_LABEL,
            *envs,
            "-v",
            f"{data}:/var/lib/mysql",
            images["mysql"],
            "mysqld",
            check=False,
        )

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "ibdata1").write_text("someone else's data")
    out = first_start(foreign)
    assert out.returncode == 1 and "refusing to touch it" in out.stdout + out.stderr
    assert (foreign / "ibdata1").read_text() == "someone else's data" and (foreign / "ibdata1").stat().st_uid == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    out = first_start(empty, MYSQL_DATABASE="gitea`; DROP DATABASE mysql; --")
    assert out.returncode == 1 and "MYSQL_DATABASE must be" in out.stdout + out.stderr
    assert not any(empty.iterdir())


@pytest.fixture(scope="module")
def stack(images, tmp_path_factory):
    """MariaDB, the real Gitea, the Mattermost stand-in, the board, the token service, the model and its egress proxy,
    then the bootstrap (run to completion), on their own internal network: one team shared by the real-service
    tests."""
    net = internal_network(f"agensh-real-{RUN}")
    name, subnet = next(net)
    t = Team(images, name, subnet, tmp_path_factory.mktemp("real"), "real")
    try:
        t.start("mysql", limit=120)
        t.start("gitea", limit=300)
        for role in ("mattermost", "board", "secret-service", "model", "egress-proxy"):
            t.start(role)
        t.start("bootstrap", wait=False)
        boot = t.placements[("bootstrap", None)].name
        assert docker("wait", boot).stdout.strip() == "0", logs(boot)
        yield t
    finally:
        t.remove_all()
        net.close()


def repositories(t: Team) -> str:
    """Where the contract keeps the Gitea repositories on the host (the export's fallback reads them)."""
    return str(ProfileDir.of(t.profile).gitea_repositories)


def gitea_api(t: Team) -> tuple[str, dict[str, str]]:
    return f"{t.url('gitea')}/api/v1", basic(ADMIN_USER, t.secrets["gitea_admin_password"])


def tokens(t: Team) -> dict[int, str]:
    return {n: (t.mount("bootstrap", "/tokens") / f"{TASK}-{n}.token").read_text().strip() for n in (1, 2)}


def remote(t: Team, n: int) -> str:
    return with_user(f"{t.url('gitea')}/{TEAM_ORG}/{SLUG}.git", standin.agent_username(f"{TASK}-{n}"))


def mariadb(
    t: Team, query: str, password: str, user: str = "root", network: str = "-data"
) -> subprocess.CompletedProcess:
    """A query from a client container on the data network (or `network` = "" for the team network), over TCP, as
    Gitea (root) or a router (its own user) connects."""
    return docker(
        "run",
        "--rm",
        "--network",
        f"{t.network}{network}",
        "--label",
        TEST_LABEL,
        "-e",
        f"MYSQL_PWD={password}",
        t.images["mysql"],
        "mariadb",
        "--connect-timeout=3",
        "-h",
        t.ip("mysql"),
        f"-u{user}",
        "-N",
        "-B",
        "-e",
        query,
        check=False,
    )


@pytest.mark.slow(60)
def test_mysql_max_connections_verified_by_query(stack: Team):
    out = mariadb(
        stack,
        "SELECT @@max_connections, COUNT(*) FROM information_schema.tables WHERE table_schema = 'gitea'",
        stack.secrets["mysql_root_password"],
    )
    assert out.returncode == 0, out.stderr
    connections, gitea_tables = map(int, out.stdout.split())
    assert connections == MAX_CONNECTIONS == stack.profile.mysql_max_connections
    assert gitea_tables > 50  # Gitea keeps its data in this database
    mysql = stack.placements[("mysql", None)].name
    assert "Access denied" not in logs(mysql)  # the health checks log in as the loopback-only healthcheck user
    denied = mariadb(stack, "SELECT 1", "wrong")
    assert denied.returncode == 1 and "Access denied" in denied.stderr
    idle = docker(
        "run",
        "--rm",
        "--network",
        "none",
        "--label",
        TEST_LABEL,
        stack.images["mysql"],
        "mysqladmin",
        "ping",
        "-h",
        "127.0.0.1",
        check=False,
    )
    assert idle.returncode == 1  # no server, no pong: the contract's health check checks


def test_routers_have_their_own_database_user_and_workers_no_path_to_the_database(stack: Team):
    router_pw = stack.secrets["mysql_router_password"]
    mine = mariadb(
        stack,
        "CREATE TABLE IF NOT EXISTS router.t (x INT); SELECT COUNT(*) FROM router.t",
        router_pw,
        user=contract.ROUTER_DB,
    )
    assert mine.returncode == 0, mine.stderr
    theirs = mariadb(stack, "SELECT COUNT(*) FROM gitea.user", router_pw, user=contract.ROUTER_DB)
    assert theirs.returncode == 1 and "denied" in theirs.stderr  # the router user sees only its own database
    from_team_network = mariadb(stack, "SELECT 1", stack.secrets["mysql_root_password"], network="")
    assert from_team_network.returncode == 1  # the database is not on the team network: workers cannot reach it


def test_bootstrap_registers_the_team(stack: Team):
    """The admin (made by the Gitea entrypoint), a Gitea user and token per agent, the organisation with its agents
    team and the task repository with `main` protected; the agents at the Mattermost stand-in; a re-run keeps all."""
    api, admin = gitea_api(stack)
    issued = tokens(stack)
    names = {n: standin.agent_username(f"{TASK}-{n}") for n in issued}
    tokens_dir = stack.mount("bootstrap", "/tokens")
    assert sorted(p.name for p in tokens_dir.iterdir()) == [f"{TASK}-1.token", f"{TASK}-2.token"]
    for n, token in issued.items():
        assert oct((tokens_dir / f"{TASK}-{n}.token").stat().st_mode & 0o777) == "0o644"
        status, me, _ = http("GET", f"{api}/user", None, {"Authorization": f"token {token}"})
        assert status == 200 and me["login"] == names[n] and me["full_name"] == f"{TASK}-{n}" and not me["is_admin"]
    assert http("GET", f"{api}/user", None, admin)[1]["is_admin"] is True
    assert http("GET", f"{api}/user", None, basic(ADMIN_USER, "wrong"))[0] == 401
    assert http("GET", f"{api}/repos/{TEAM_ORG}/{SLUG}")[0] != 200  # nothing is visible without signing in
    assert http("GET", f"{api}/orgs/{TEAM_ORG}", None, admin)[1]["visibility"] == "private"
    assert http("GET", f"{api}/repos/{TEAM_ORG}/{SLUG}", None, admin)[1]["private"] is True
    rules = http("GET", f"{api}/repos/{TEAM_ORG}/{SLUG}/branch_protections", None, admin)[1]
    assert [
        (
            r["rule_name"],
            r["enable_push"],
            r["enable_push_whitelist"],
            r["push_whitelist_usernames"],
            r["required_approvals"],
            r["enable_status_check"],
        )
        for r in rules
    ] == [("main", True, True, [ADMIN_USER], 0, False)]
    agents = next(t for t in http("GET", f"{api}/orgs/{TEAM_ORG}/teams", None, admin)[1] if t["name"] == "agents")
    assert agents["includes_all_repositories"] is True
    assert {u: agents["units_map"].get(u) for u in ("repo.code", "repo.pulls")} == {
        "repo.code": "write",
        "repo.pulls": "write",
    }
    members = http("GET", f"{api}/teams/{agents['id']}/members", None, admin)[1]
    assert sorted(m["login"] for m in members) == sorted(names.values())

    mm = f"{stack.url('mattermost')}/api/v4"
    for n, token in issued.items():  # the agent's Mattermost password is its token
        status, user, _ = http("POST", f"{mm}/users/login", {"login_id": names[n], "password": token})
        assert status == 200 and user["username"] == names[n]

    boot = stack.placements[("bootstrap", None)].name
    docker("start", "-a", boot)  # idempotent: users, rules and tokens stay
    assert tokens(stack) == issued
    assert logs(boot).count("gitea token kept") == 2
    assert len(http("GET", f"{api}/repos/{TEAM_ORG}/{SLUG}/branch_protections", None, admin)[1]) == 1


def events(name: str) -> list[dict]:
    return activity.reader(DEFAULT_CONVENTION).events(name)


def tool_outputs(name: str) -> str:
    return "\n".join(str(e.get("output", "")) for e in events(name) if e["kind"] == "tool_result")


def kickoff(t: Team) -> None:
    """What the kickoff step posts: the checkout's kickoff prompt, as the administrator, to the team channel."""
    text = (DEMO / "prompts" / "kickoff.md").read_text().replace("$task_id", TASK).replace("$deadline", "soon")
    post_to_team(t.url("mattermost"), ADMIN_USER, t.secrets["mattermost_admin_password"], text)


@pytest.fixture(scope="module")
def merged(stack: Team, tmp_path_factory):
    """The task seeded by the project's seed step and worked by two real Copilot CLI sessions that the scripted model
    drives, kicked off in the team chat: agent 1 merges its pull request through the API, agent 2 pushes its branch,
    claims on the board, posts in the chat and tries a direct push to main."""
    tmp = tmp_path_factory.mktemp("merged")
    cleanroom = calculator.build_cleanroom(f"agensh-services-{RUN}", dict([TEST_LABEL.split("=", 1)]))
    worker_image = stack.profile.worker_image(TASK)
    try:
        build(
            worker_image,
            DEMO,
            DEMO / WORKER_IMAGE.dockerfile,
            TASK_IMAGE=cleanroom,
            AGENT_BASE_IMAGE=stack.images["agent-base"],
        )
        router = stack.start("router", 1)
        workers = {n: stack.start("worker", n) for n in (1, 2)}  # their sessions wait for the kickoff
        a = {
            "run_dir": str(tmp / "run"),
            "task_id": TASK,
            "gitea_url": stack.url("gitea"),
            "gitea_user": ADMIN_USER,
            "repo": contract.team_repo(TASK),
            "gitea_repositories": repositories(stack),
            "cleanroom": {
                "image": cleanroom,
                "container": contract.cleanroom_copy_name(stack.profile.profile, TASK),
                "labels": stack.profile.labels(contract.CLEANROOM_COPY_ROLE, TASK),
            },
            "archive_dirs": [str(stack.mount("worker", "/archive", n)) for n in (1, 2)],
        }
        assert (
            seed.main(
                [], {"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": stack.secrets["gitea_admin_password"]}
            )
            == 0
        )
        receipt = json.loads((tmp / "run" / TASK / "receipts" / "seed.json").read_text())
        read = activity.reader(DEFAULT_CONVENTION)
        sessions = activity.wait_for_sessions(read, {workers[n]: f"{TASK}-{n}" for n in (1, 2)}, 120)
        assert all(sessions.values()), "\n".join(logs(c) for c in workers.values())
        kickoff(stack)
        wanted = {
            workers[1]: ["opened and merged pull #1", "run exit 0"],
            workers[2]: ["pushed branch agent-2", "board: 200", "chat: posted", "direct push to main refused"],
        }
        end = time.monotonic() + 240
        while not all(all(w in tool_outputs(c) for w in want) for c, want in wanted.items()):
            assert time.monotonic() < end, "\n".join(logs(c) for c in wanted)
            time.sleep(1)
        yield {
            "seed": receipt,
            "workers": workers,
            "router": router,
            "worker_image": worker_image,
            "sessions": sessions,
        }
    finally:
        for n in (1, 2):
            docker("rm", "-f", stack.placements[("worker", n)].name, check=False)
        docker("rmi", "-f", worker_image, cleanroom, check=False)


def merge_commit(t: Team) -> str:
    api, admin = gitea_api(t)
    pr = http("GET", f"{api}/repos/{TEAM_ORG}/{SLUG}/pulls/1", None, admin)[1]
    assert pr["merged"] is True, pr
    return pr["merge_commit_sha"]


@pytest.mark.slow(150)
def test_real_copilot_sessions_merge_a_pull_request_and_cannot_push_main(stack: Team, merged, tmp_path: Path):
    api, admin = gitea_api(stack)
    assert merged["sessions"] == {f"{TASK}-1": COPILOT, f"{TASK}-2": COPILOT}  # agentInfo.version of each session
    assert merged["seed"]["status"] == "ok" and merged["seed"]["result"]["seeded"] == "now"
    assert merged["seed"]["result"]["main_protection"] == {
        "enable_push": True,
        "enable_push_whitelist": True,
        "push_whitelist_usernames": [ADMIN_USER],
        "required_approvals": 0,
        "enable_status_check": False,
    }
    worker1 = standin.agent_username(f"{TASK}-1")
    pr = http("GET", f"{api}/repos/{TEAM_ORG}/{SLUG}/pulls/1", None, admin)[1]
    assert (pr["merged"], pr["user"]["login"], pr["merged_by"]["login"], pr["head"]["ref"], pr["base"]["ref"]) == (
        True,
        worker1,
        worker1,
        "agent-1",
        "main",
    )
    assert f"MINI_ROUTER_STUCK_MS={SILENCE_MS}" in logs(merged["router"])
    check = docker("run", "--rm", "--entrypoint", "pbench-selfcheck", merged["worker_image"])
    assert check.stdout.strip() == "board=True copilot=yes"
    version = docker("run", "--rm", "--network", "none", "--entrypoint", "copilot", merged["worker_image"], "--version")
    assert f"GitHub Copilot CLI {COPILOT}." in version.stdout
    # the agents' tool calls ran as uid 10000 in their worker: the first step of each kickoff looks around
    for name in merged["workers"].values():
        assert "baseline=0 workers=2\n10000\n/workspace" in tool_outputs(name)

    token = tokens(stack)
    main = git("ls-remote", remote(stack, 1), "refs/heads/main", password=token[1]).split()[0]
    assert main == pr["merge_commit_sha"]
    clone = tmp_path / "main"
    git("clone", "-q", remote(stack, 1), str(clone), password=token[1])
    assert git("rev-parse", "HEAD^1", cwd=clone) == merged["seed"]["result"]["commit"]  # merged onto the seeded start
    assert subprocess.run(["sh", "compile.sh"], cwd=clone).returncode == 0
    assert subprocess.run(["./executable", "6", "*", "7"], cwd=clone, capture_output=True, text=True).stdout == "42\n"
    assert not (clone / "notes").exists()  # agent 2's notes stay on its branch, its direct push was refused
    assert git("ls-remote", remote(stack, 2), "refs/heads/agent-2", password=token[2])
    lifecycle = stack.mount("board", "/data") / "lifecycle" / f"{TASK}.jsonl"
    assert json.loads(lifecycle.read_text().splitlines()[-1])["event"]["agent"] == f"{TASK}-2"

    git("checkout", "-q", "-B", "direct", cwd=clone)
    (clone / "direct.txt").write_text("must not land\n")
    git("add", "-A", cwd=clone)
    git("commit", "-q", "-m", "direct", cwd=clone)
    with pytest.raises(RuntimeError, match="protected branch"):
        git("push", remote(stack, 2), "HEAD:main", cwd=clone, password=token[2])
    git("push", "-q", remote(stack, 2), "HEAD:refs/heads/agent-2-extra", cwd=clone, password=token[2])  # branches: fine
    assert git("ls-remote", remote(stack, 1), "refs/heads/main", password=token[1]).split()[0] == main


def test_the_reference_cannot_be_read_but_runs(merged):
    """Agent 1's turn through the CLI's own `bash` tool: `cat` and `cp` of the reference fail, running it works."""
    out = tool_outputs(merged["workers"][1])
    assert "cat exit 1" in out and "cp exit 1" in out and "run exit 0" in out
    assert "Permission denied" in out


@pytest.mark.slow(45)
def test_sessions_continue_a_silent_one_is_nudged_and_the_watchdog_recovers_it(stack: Team, merged, tmp_path: Path):
    """After its first turn the model hangs agent 1's next request: the idle watchdog (the nudges step, here with a
    14 s idle time) nudges agent 1 and not agent 2, which keeps working; the ACP watchdog cancels the silent request
    and prompts again, and the nudge reaches agent 1's session as a prompt."""
    end = time.monotonic() + 120
    while not any(e["kind"] == "turn_end" for e in events(merged["workers"][1])):
        assert time.monotonic() < end, logs(merged["workers"][1])
        time.sleep(1)
    auth = {"Authorization": f"Bearer {stack.secrets['llm_upstream_token']}"}
    assert http("POST", f"{stack.url('model')}/faults", {"faults": ["hang@1"]}, auth)[0] == 200  # its next request
    workers = {merged["workers"][n]: f"{TASK}-{n}" for n in (1, 2)}
    start = time.time()
    write_atomic(
        RunDir(tmp_path).receipt("wake", TASK),
        Receipt[WakeResult](
            step="wake",
            task_id=TASK,
            inputs_digest="x",
            started=now(),
            finished=now(),
            status="ok",
            result=WakeResult(
                ramp_start_epoch=start,
                events=[],
                wakes=[Wake(worker=w, due_epoch=start, at_epoch=start, late_s=0) for w in workers],
            ),
        ),
    )
    kicked_off(tmp_path, TASK, start + 45)  # the nudges step watches until then: the hang starts within ~10 s
    a = NudgesInputs(
        run_dir=str(tmp_path),
        task_id=TASK,
        mattermost_url=stack.url("mattermost"),
        mattermost_user=ADMIN_USER,
        workers=workers,
        idle_nudge_s=14,
        idle_check_s=1,
    )
    password = stack.secrets["mattermost_admin_password"]
    assert nudges.main([], {"AGENSH_INPUT": a.model_dump_json(), "AGENSH_MATTERMOST_PASSWORD": password}) == 0
    nudged = json.loads(RunDir(tmp_path).receipt("nudges", TASK).read_text())["result"]["nudges"]
    assert [n["worker"] for n in nudged] == [merged["workers"][1]]
    seen = events(merged["workers"][1])
    kinds = [e["kind"] for e in seen]
    first_end = kinds.index("turn_end")
    assert seen[first_end]["stop_reason"] == "end_turn"
    assert seen[first_end + 1]["kind"] == "prompt" and seen[first_end + 1]["why"] == "continue"
    end = time.monotonic() + SILENCE_MS / 1000 + 90
    while not any(e["kind"] == "watchdog" for e in events(merged["workers"][1])):
        assert time.monotonic() < end, logs(merged["workers"][1])
        time.sleep(2)
    while True:  # then the same prompt again, and a completed turn
        seen = events(merged["workers"][1])
        dog = next(k for k, e in enumerate(seen) if e["kind"] == "watchdog")
        if any(e["kind"] == "turn_end" for e in seen[dog:]):
            break
        assert time.monotonic() < end, logs(merged["workers"][1])
        time.sleep(2)
    assert seen[dog]["silent_s"] >= SILENCE_MS / 1000 and seen[dog + 1]["kind"] == "prompt"
    while not any(e["kind"] == "prompt" and "no activity from you" in e["text"] for e in events(merged["workers"][1])):
        assert time.monotonic() < end, logs(merged["workers"][1])  # the nudge, after the recovered turn
        time.sleep(2)
    stats = http("GET", f"{stack.url('model')}/stats")[1]
    assert [f["fault"] for f in stats["faults"]] == ["hang"]
    assert set(stats["efforts"]) == {"high"} and stats["rejected"] == 0  # only the proxy's injected credential


def test_a_model_error_and_a_cut_stream_are_recovered(stack: Team, merged):
    """The model answers agent 2 once with HTTP 503 and once with a stream cut midway: its session goes on (the CLI
    retries; a prompt that still fails is sent again by the driver), without the watchdog."""
    name = merged["workers"][2]
    auth = {"Authorization": f"Bearer {stack.secrets['llm_upstream_token']}"}
    assert http("POST", f"{stack.url('model')}/faults", {"faults": ["error@2", "cut@2"]}, auth)[0] == 200
    end = time.monotonic() + 120
    while True:
        stats = http("GET", f"{stack.url('model')}/stats")[1]
        faulted = [f for f in stats["faults"] if f["agent"] == f"{TASK}-2"]
        if len(faulted) == 2:
            after = max(f["at"] for f in faulted)
            ended = [e for e in events(name) if e["kind"] == "turn_end" and activity_epoch(e) > after]
            if len(ended) >= 2:
                break
        assert time.monotonic() < end, logs(name)
        time.sleep(2)
    assert [f["fault"] for f in faulted] == ["error", "cut"]
    assert not any(e["kind"] == "watchdog" for e in events(name))


def activity_epoch(event: dict) -> float:
    return datetime.fromisoformat(str(event["at"]).replace("Z", "+00:00")).timestamp()


def test_no_model_credential_reaches_a_worker_and_archives_restore_the_session(stack: Team, merged, tmp_path: Path):
    """The real model token is nowhere in a worker: not its environment, not its CLI's config, logs or session state
    (its HOME), not its workspace, not its archive. SIGTERM seals HOME and the workspace; a restored archive lets a
    new CLI load the session."""
    real = stack.secrets["llm_upstream_token"].encode()
    for n, name in merged["workers"].items():
        env = docker("inspect", "-f", "{{json .Config.Env}}", name).stdout
        assert real.decode() not in env and "LLM_UPSTREAM_TOKEN" not in env
        assert stack.secrets["worker_proxy_token"] in env  # the local proxy credential is all it holds
        assert real.decode() not in logs(name)
        archive = stack.mount("worker", "/archive", n)
        t0 = time.monotonic()
        docker("stop", "-t", "20", name)
        assert time.monotonic() - t0 < 15
        assert docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout.strip() == "0", logs(name)
        data = (archive / "state.tar.gz").read_bytes()
        assert (archive / "state.sha256").read_text().split()[0] == hashlib.sha256(data).hexdigest()
        with tarfile.open(archive / "state.tar.gz") as tar:
            names = set(tar.getnames())
            assert {
                "home/agent",
                "home/agent/.copilot/config.json",
                "home/agent/.agensh/activity.jsonl",
                "workspace/.git/HEAD",
                "workspace/scratch/notes.txt",
            } <= names
            assert not any(".cache/copilot/pkg" in m for m in names)  # the image's unpacked CLI stays out
            assert any(m.startswith("home/agent/.copilot/session-state/") for m in names)
            for member in tar.getmembers():
                if member.isfile():
                    assert real not in tar.extractfile(member).read(), member.name  # type: ignore[union-attr]
    status = json.loads(
        subprocess.run(
            [
                "tar",
                "-xzOf",
                str(stack.mount("worker", "/archive", 1) / "state.tar.gz"),
                "home/agent/.agensh/status.json",
            ],
            capture_output=True,
            check=True,
        ).stdout
    )
    assert status["copilot_version"] == COPILOT and status["watchdog_recoveries"] >= 1 and status["turns"] >= 2
    restore = (
        f"tar -xzf /restore/state.tar.gz -C / && cd /workspace && PYTHONPATH=/opt/agensh python3 -c '"
        "from pathlib import Path; from acp_driver import Acp; "
        'acp = Acp(["copilot", "--acp", "--no-auto-update"], dict(__import__("os").environ), '
        'Path("/tmp/err.log"), lambda p: None, lambda m: {"error": {"code": -32601, "message": "no"}}); '
        'acp.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}}); '
        f'print("loaded", acp.call("session/load", {{"sessionId": "{status["session_id"]}", '
        '"cwd": "/workspace", "mcpServers": []}) is not None); acp.stop()\''
    )
    loaded = docker(
        "run",
        "--rm",
        "--network",
        "none",
        "-e",
        "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:9/v1",
        "-e",
        f"COPILOT_MODEL={stack.profile.model}",
        "-e",
        "COPILOT_PROVIDER_WIRE_API=responses",
        "-v",
        f"{stack.mount('worker', '/archive', 1)}:/restore:ro",
        "--entrypoint",
        "sh",
        merged["worker_image"],
        "-c",
        restore,
        check=False,
    )
    assert "loaded True" in loaded.stdout, loaded.stdout + loaded.stderr


def export_args(t: Team, run: Path) -> dict[str, Any]:
    """The export step's input, as the stack gives it, with a kickoff receipt whose deadline has passed."""
    kicked_off(run, TASK, time.time() - 1)
    return {
        "run_dir": str(run),
        "task_id": TASK,
        "gitea_url": t.url("gitea"),
        "gitea_user": ADMIN_USER,
        "repo": contract.team_repo(TASK),
        "gitea_repositories": repositories(t),
        "profile": t.profile.profile,
        "grace_s": t.profile.export_grace_s,
    }


def archived_commit(submission: Path) -> str:
    """The commit `git archive` recorded in the submission (its pax comment)."""
    with tarfile.open(submission) as tar:
        assert "compile.sh" in tar.getnames()
        return tar.pax_headers["comment"]


def test_export_head_is_the_merged_pull_request(stack: Team, merged, tmp_path: Path):
    a = export_args(stack, tmp_path / "run")
    assert (
        export.main([], {"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": stack.secrets["gitea_admin_password"]})
        == 0
    )
    receipt = json.loads((tmp_path / "run" / TASK / "receipts" / "export.json").read_text())["result"]
    assert receipt["recovered_from"] is None and not (tmp_path / "run" / TASK / "EXPORT_FAILED").exists()
    assert receipt["commit"] == archived_commit(Path(receipt["submission"])) == merge_commit(stack)


def test_export_recovers_main_from_the_gitea_data_when_gitea_is_killed(stack: Team, merged, tmp_path: Path):
    """docs/requirements.md R35 with the real server's data folder: the committed main, scored without new inference."""
    sha = merge_commit(stack)
    gitea = stack.placements[("gitea", None)].name
    docker("kill", gitea)
    try:
        a = export_args(stack, tmp_path / "run")
        env = {"AGENSH_INPUT": json.dumps(a), "AGENSH_GITEA_PASSWORD": stack.secrets["gitea_admin_password"]}
        t0 = time.monotonic()
        assert export.main([], env) == 0
        assert time.monotonic() - t0 < export.CONNECT_TIMEOUT_S + 10  # found out quickly, not after TCP's retries
        task_dir = tmp_path / "run" / TASK
        receipt = json.loads((task_dir / "receipts" / "export.json").read_text())["result"]
        preserved = Path(stack.mount("gitea", "/data")) / "git" / "repositories" / TEAM_ORG / f"{SLUG}.git"
        assert receipt["recovered_from"] == str(preserved) and (task_dir / "EXPORT_FAILED").exists()
        assert receipt["commit"] == archived_commit(Path(receipt["submission"])) == sha
        shutil.copy(BUNDLED_EVAL, task_dir / f"{TASK}.eval.json")  # the evaluator's result, as if it had run
        assert (
            score.main([], {"AGENSH_INPUT": json.dumps({"run_dir": a["run_dir"], "task_id": TASK, "attempt": 1})}) == 0
        )
        scored = json.loads((task_dir / "score.json").read_text())
        assert scored["complete"] and scored["export_recovered_from"] == str(preserved)
    finally:
        docker("start", gitea)
        stack.healthy(gitea, spec(stack.profile, stack.placements[("gitea", None)]).healthcheck, 120)
