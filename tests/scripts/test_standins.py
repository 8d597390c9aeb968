"""The demo's stand-in Agensh checkout (stacks/demo) against real Docker.

Every container is started from the project's own contract (`components.roles.spec` of a small test
profile): its env, secret env, mounts, command, user, hostname and health check. They sit on ONE internal
network created here with a free 10.x subnet; the test process reaches them by container address.
Images are built under private test tags and removed at the end, as are the containers and the network.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import random
import secrets
import socket
import string
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from components import addressing, contract
from components.contract import ADMIN_USER, SHARED_IMAGES, WORKER_DOCKERFILE
from components.profile import Profile, parse_profile
from components.roles import HTTP_PORT, ROLES, spec
from components.topology import placements
from scripts import calculator, preflight
from scripts.gitops import git, with_user

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "stacks" / "demo"
TASK = calculator.TASK
RUN = uuid.uuid4().hex[:8]
TEST_LABEL = f"agensh.test=standins-{RUN}"
TAG = f"test-{RUN}"
BUILD_ENV = {"DOCKER_BUILDKIT": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def docker(*args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, env=env)
    if check and out.returncode:
        raise AssertionError(f"docker {' '.join(args[:3])} failed: {out.stderr.strip()[-800:]}")
    return out


def build(tag: str, context: Path, dockerfile: Path, **args: str) -> str:
    build_args = [a for k, v in args.items() for a in ("--build-arg", f"{k}={v}")]
    docker("build", "-q", "-t", tag, "--label", TEST_LABEL, "-f", str(dockerfile), *build_args, str(context),
           env=BUILD_ENV)
    return tag


# ------------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def images(docker_engine: None):
    """omcgitea-standin (under a private tag, the shared images of the checkout built FROM it)."""
    made: list[str] = []
    try:
        made.append(build(f"omcgitea-standin:{TAG}", DEMO / "standin", DEMO / "standin" / "Dockerfile"))
        tags = {}
        for role, (dockerfile, default, context) in SHARED_IMAGES.items():
            tags[role] = build(f"{default.split(':')[0]}:{TAG}", DEMO / context, DEMO / dockerfile,
                               STANDIN_IMAGE=made[0])
            made.append(tags[role])
        yield {"standin": made[0], **tags}
    finally:
        for tag in reversed(made):
            docker("rmi", "-f", tag, check=False)


def free_subnet() -> ipaddress.IPv4Network:
    used = []
    ids = docker("network", "ls", "-q").stdout.split()
    for net in json.loads(docker("network", "inspect", *ids).stdout) if ids else []:
        used += [ipaddress.ip_network(c["Subnet"]) for c in (net.get("IPAM") or {}).get("Config") or [] if "Subnet" in c]
    try:
        routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout.split()
    except FileNotFoundError:
        routes = []
    used += [ipaddress.ip_network(w, strict=False) for w in routes if "/" in w and w[0].isdigit()]
    rng = random.Random()
    for _ in range(200):
        cand = ipaddress.IPv4Network(f"10.{rng.randint(100, 240)}.{rng.randint(1, 250)}.0/24")
        if not any(cand.overlaps(u) for u in used if u.version == 4):
            return cand
    raise AssertionError("no free 10.x /24 subnet")


@pytest.fixture(scope="module")
def network(docker_engine: None):
    subnet, name = free_subnet(), f"agensh-standins-{RUN}"
    docker("network", "create", "--internal", "--subnet", str(subnet), "--label", TEST_LABEL, name)
    try:
        yield name, subnet
    finally:
        docker("network", "rm", name, check=False)


@pytest.fixture()
def team(images, network, tmp_path: Path):
    """The test profile and a starter for its containers; removes every container it started."""
    t = Team(images, network[0], network[1], tmp_path)
    try:
        yield t
    finally:
        for name in reversed(t.started):
            docker("rm", "-f", "-v", name, check=False)


@dataclass
class Team:
    images: dict[str, str]
    network: str
    subnet: ipaddress.IPv4Network
    tmp: Path
    started: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        model_ip = addressing.host(self.subnet, addressing.SERVICE_SLOTS - 1)  # one network: the model sits on it too
        image = self.images
        self.profile: Profile = parse_profile({
            "profile": f"standins-{RUN}", "run_id": "20250101t000000z", "tasks": [TASK], "workers": 2,
            "internal_subnet": str(self.subnet), "subnet_octet": int(str(self.subnet).split(".")[1]),
            "llm_upstream": f"http://{model_ip}:{HTTP_PORT}", "agensh_checkout": str(DEMO),
            "data_root": str(self.tmp / "data"), "host_units": "off", "wake_stagger_s": 0, "model_standin": True,
            "egress_internal": True, "mysql_image": image["standin"], "gitea_image": image["standin"],
            "mattermost_image": image["standin"], "board_image": image["board"],
            "secret_service_image": image["secret-service"], "bootstrap_image": image["bootstrap"],
            "egress_proxy_image": image["egress-proxy"], "mini_router_image": image["mini-router"],
            "agent_base_image": image["agent-base"], "agent_image_tag": TAG})
        self.secrets = {k: f"{k}-{secrets.token_hex(12)}" for k in contract.SECRET_KEYS}
        self.placements = {(c.role, c.index): c for c in placements(self.profile)}
        self.model_ip = model_ip

    def ip(self, role: str, n: int | None = None) -> str:
        c = self.placements[(role, n)]
        return c.internal_ip or self.model_ip

    def url(self, role: str, n: int | None = None) -> str:
        return f"http://{self.ip(role, n)}:{ROLES[role].port}"

    def start(self, role: str, n: int | None = None, wait: bool = True, **env_override: str) -> str:
        c, s = self.placements[(role, n)], spec(self.profile, self.placements[(role, n)])
        envs = dict(s.env)
        for k, key in s.secret_env.items():
            envs[k] = hashlib.sha256(self.secrets[key].encode()).hexdigest() if k.endswith("_SHA256") else self.secrets[key]
        envs.update(env_override)
        args = ["run", "-d", "--name", c.name, "--network", self.network, "--ip", self.ip(role, n),
                "--hostname", c.name if ROLES[c.role].per_task else c.role, "--label", TEST_LABEL]
        for k, v in sorted(envs.items()):
            args += ["-e", f"{k}={v}"]
        for m in s.mounts:
            Path(m.host_path).mkdir(parents=True, exist_ok=True)
            args += ["-v", f"{m.host_path}:{m.container_path}{':ro' if m.read_only else ''}"]
        if s.user:
            args += ["--user", s.user]
        docker(*args, s.image, *(s.command or ()))
        self.started.append(c.name)
        if wait and s.healthcheck:
            self.healthy(c.name, s.healthcheck)
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


def logs(name: str) -> str:
    out = docker("logs", name, check=False)
    return out.stdout + out.stderr


def http(method: str, url: str, body=None, headers: dict[str, str] | None = None) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json",
                                                                         **(headers or {})})
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
    import base64
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def raw_request(sock: socket.socket, method: str, path: str, body: bytes = b"") -> tuple[int, dict, bytes]:
    """One HTTP/1.1 keep-alive request on an open socket, with the raw path (no client-side normalising)."""
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
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
    except (TimeoutError, socket.timeout):
        return False
    except ConnectionResetError:
        return True


def post_raw(ip: str, port: int, path: str, body: bytes = b"{}") -> int:
    with socket.create_connection((ip, port), timeout=5) as s:
        return raw_request(s, "POST", path, body)[0]


# ------------------------------------------------------------------------------------------------ tests
def test_images_are_labelled_stand_ins(images):
    for role, tag in images.items():
        labels = json.loads(docker("image", "inspect", "-f", "{{json .Config.Labels}}", tag).stdout)
        assert labels.get("agensh.standin") == "true", (role, labels)
    assert "stand-in" in (DEMO / "README.md").read_text().lower()
    kickoff = string.Template((DEMO / "prompts" / "kickoff.md").read_text()).substitute(task_id=TASK, deadline="D")
    assert TASK in kickoff and "$" not in kickoff


def test_mysql_listener_and_ping(team: Team):
    name = team.start("mysql")  # waits for the contract's `mysqladmin ping -h 127.0.0.1`
    assert f"max-connections={team.profile.mysql_max_connections}" in logs(name)
    socket.create_connection((team.ip("mysql"), 3306), timeout=3).close()
    idle = docker("run", "--rm", "--network", "none", team.images["standin"], "mysqladmin", "ping", "-h", "127.0.0.1",
                  check=False)
    assert idle.returncode == 1 and "stand-in" in idle.stderr  # no listener, no pong


def test_token_service_security(team: Team):
    tokens = Path(spec(team.profile, team.placements[("secret-service", None)]).mounts[0].host_path)
    tokens.mkdir(parents=True)
    good = secrets.token_hex(16)
    (tokens / f"{TASK}-1.token").write_text(good + "\n")
    (tokens / f"{TASK}-2.token").symlink_to("/etc/passwd")  # a token file resolving outside the store
    name = team.start("secret-service")
    ip = team.ip("secret-service")
    with socket.create_connection((ip, HTTP_PORT), timeout=5) as s:
        status, _, body = raw_request(s, "GET", f"/token/{TASK}-1")
        assert status == 200 and json.loads(body)["token"] == good
        status, _, _ = raw_request(s, "GET", "/healthz")  # a good request keeps the connection
        assert status == 200
    rejected = [f"/token/{TASK}", f"/token/{TASK}-", f"/token/{TASK}-0", "/token/testorg__calculator-1",
                f"/token/../{TASK}-1", "/token/..%2F..%2Fetc%2Fpasswd", f"/token/{TASK}-1/../../../etc/passwd",
                f"/token/{TASK}-1%2F..%2F..%2Fetc%2Fpasswd", "/token/..__..-1", f"/token/{TASK}-2", f"/token/{TASK}-3"]
    for path in rejected:
        with socket.create_connection((ip, HTTP_PORT), timeout=5) as s:
            status, headers, body = raw_request(s, "GET", path)
            assert 400 <= status < 500, (path, status)
            assert headers.get("connection", "").lower() == "close", path
            assert closed_by_server(s), f"{path}: connection left open"
            assert b"root:" not in body and good.encode() not in body
    out = logs(name)
    assert "/tokens" not in out and good not in out and "stand-in" in out


def test_board_lifecycle_security(team: Team):
    data = Path(spec(team.profile, team.placements[("board", None)]).mounts[0].host_path)
    data.mkdir(parents=True)
    team.start("board")
    ip = team.ip("board")
    for path in ("/board/../lifecycle", "/board/..%2F..%2Fescape/lifecycle", "/board/%2e%2e/lifecycle",
                 "/board/a/../../escape/lifecycle", "/board/..%2fescape/lifecycle", "/board/.hidden/lifecycle",
                 "/board/x%00/lifecycle"):
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
    status, reply, _ = http("POST", url, body, {"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"})
    assert status == 200 and reply["output_text"] == "stand-in model reply" and reply["model"] == team.profile.model
    stats = http("GET", f"{team.url('model')}/stats")[1]
    assert (stats["ok"], stats["rejected"]) == (1, 0)  # the model saw the real credential
    for auth in ({"Authorization": "Bearer wrong"}, {}, {"Authorization": f"Bearer {team.secrets['llm_upstream_token']}"}):
        assert http("POST", url, body, auth)[0] == 401
    stats = http("GET", f"{team.url('model')}/stats")[1]
    assert (stats["ok"], stats["rejected"]) == (1, 0)  # refused at the proxy, never forwarded
    # straight to the model with the proxy credential: refused by the model
    assert http("POST", f"{team.url('model')}/v1/responses", body,
                {"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"})[0] == 401
    # the model list: through the proxy with the proxy credential, the pinned model only (whatever the profile says)
    models = f"{team.url('egress-proxy')}/v1/models"
    status, listed, _ = http("GET", models, headers={"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"})
    assert status == 200 and [m["id"] for m in listed["data"]] == [contract.PINNED_MODEL]
    assert http("GET", models, headers={"Authorization": "Bearer wrong"})[0] == 401
    assert http("GET", f"{team.url('model')}/v1/models",
                headers={"Authorization": f"Bearer {team.secrets['worker_proxy_token']}"})[0] == 401
    for name in (model, proxy):
        assert team.secrets["llm_upstream_token"] not in logs(name)


def test_preflight_model_check_through_the_standin_proxy(team: Team, tmp_path: Path):
    """The preflight's model phase against the stand-in proxy and gateway: the listed id passes, another fails naming
    the list, a gateway without a list (STANDIN_MODELS empty) is a warning."""
    def check(model: str) -> tuple[int, dict]:
        run_dir = tmp_path / model.replace("/", "_")
        inputs = {"run_dir": str(run_dir), "model": model, "effort": "high", "proxy_url": team.url("egress-proxy")}
        rc = preflight.main(["model"], {"AGENSH_INPUT": json.dumps(inputs),
                                        "AGENSH_PROXY_TOKEN": team.secrets["worker_proxy_token"]})
        receipt = json.loads((run_dir / "receipts" / "preflight-model.json").read_text())
        return rc, (receipt["result"] or receipt["details"])["checks"]["model-list"]

    team.start("model")
    team.start("egress-proxy")
    assert check(contract.PINNED_MODEL) == (0, {"ok": True, "warning": False,
                                                "detail": f"{contract.PINNED_MODEL} is one of the 1 models the gateway lists"})
    rc, wrong = check("gpt-5.6")
    assert rc == 1 and f"which lists: {contract.PINNED_MODEL}." in wrong["detail"] and "agensh:model" in wrong["detail"]
    docker("rm", "-f", team.placements[("model", None)].name)
    team.start("model", STANDIN_MODELS="")
    rc, unlisted = check("gpt-5.6")
    assert rc == 0 and unlisted["warning"] and "HTTP 404" in unlisted["detail"]


def test_gitea_repos_pushes_pulls(team: Team, tmp_path: Path):
    team.start("gitea")
    api, admin = f"{team.url('gitea')}/api/v1", basic(ADMIN_USER, team.secrets["gitea_admin_password"])
    assert http("POST", f"{api}/orgs", {"username": "team"}, admin)[0] == 201
    assert http("POST", f"{api}/orgs", {"username": "team"}, admin)[0] == 422
    assert http("POST", f"{api}/orgs", {"username": "other"}, basic(ADMIN_USER, "wrong"))[0] == 401
    assert http("POST", f"{api}/orgs/team/repos", {"name": "calc", "default_branch": "main"}, admin)[0] == 201
    assert http("POST", f"{api}/orgs/team/repos", {"name": "calc", "default_branch": "main"}, admin)[0] == 409
    assert http("GET", f"{api}/repos/team/calc", None, admin)[1]["empty"] is True

    remote = f"{team.url('gitea')}/team/calc.git"
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "README.md").write_text("start\n")
    git("init", "-q", "-b", "main", cwd=seed)
    git("add", "-A", cwd=seed)
    git("commit", "-q", "-m", "start", cwd=seed)
    with pytest.raises(RuntimeError):
        git("push", "-q", with_user(remote, ADMIN_USER), "main", cwd=seed, password="wrong")
    git("push", "-q", with_user(remote, ADMIN_USER), "main", cwd=seed, password=team.secrets["gitea_admin_password"])
    start = git("rev-parse", "HEAD", cwd=seed)

    worker, token = f"{TASK}-1", secrets.token_hex(16)
    assert http("POST", f"{api}/admin/users", {"username": worker, "token": token}, basic(worker, token))[0] == 401
    assert http("POST", f"{api}/admin/users", {"username": worker, "token": token}, admin)[0] == 201
    assert http("POST", f"{api}/orgs", {"username": "x"}, basic(worker, token))[0] == 403
    wremote, ws = with_user(remote, worker), tmp_path / "ws"
    git("clone", "-q", wremote, str(ws), password=token)
    git("checkout", "-q", "-b", "agent-1", cwd=ws)
    (ws / "compile.sh").write_text(calculator.SOLUTION["compile.sh"])
    git("add", "-A", cwd=ws)
    git("commit", "-q", "-m", "solution", cwd=ws)
    git("push", "-q", wremote, "agent-1", cwd=ws, password=token)

    status, pr, _ = http("POST", f"{api}/repos/team/calc/pulls", {"head": "agent-1", "base": "main", "title": "t"},
                         {"Authorization": f"token {token}"})
    assert status == 201 and pr["number"] == 1
    assert http("POST", f"{api}/repos/team/calc/pulls/1/merge", {"Do": "merge"}, basic(worker, token))[0] == 200
    assert http("POST", f"{api}/repos/team/calc/pulls/1/merge", {"Do": "merge"}, basic(worker, token))[0] == 405
    merged = git("ls-remote", wremote, "refs/heads/main", password=token).split()[0]
    git("fetch", "-q", wremote, "main", cwd=ws, password=token)
    assert merged != start and git("rev-parse", "FETCH_HEAD^1", cwd=ws) == start
    assert "compile.sh" in git("ls-tree", "--name-only", "FETCH_HEAD", cwd=ws)

    git("checkout", "-q", "-B", "direct", "FETCH_HEAD", cwd=ws)
    (ws / "direct.txt").write_text("must not land\n")
    git("add", "-A", cwd=ws)
    git("commit", "-q", "-m", "direct", cwd=ws)
    with pytest.raises(RuntimeError, match="protected"):
        git("push", wremote, "HEAD:main", cwd=ws, password=token)
    assert git("ls-remote", wremote, "refs/heads/main", password=token).split()[0] == merged


def test_mattermost_login_channel_posts(team: Team):
    team.start("mattermost")
    api = f"{team.url('mattermost')}/api/v4"
    assert http("POST", f"{api}/users/login", {"login_id": ADMIN_USER, "password": "wrong"})[0] == 401
    status, _, hdrs = http("POST", f"{api}/users/login",
                           {"login_id": ADMIN_USER, "password": team.secrets["mattermost_admin_password"]})
    session = {"Authorization": f"Bearer {hdrs['Token']}"}
    assert status == 200
    assert http("GET", f"{api}/teams/name/pbench/channels/name/town-square")[0] == 401
    channel = http("GET", f"{api}/teams/name/pbench/channels/name/town-square", None, session)[1]["id"]
    status, post, _ = http("POST", f"{api}/posts", {"channel_id": channel, "message": "kickoff"}, session)
    assert status == 201
    worker, token = f"{TASK}-1", secrets.token_hex(16)
    assert http("POST", f"{api}/users", {"username": worker, "token": token}, session)[0] == 201
    assert http("POST", f"{api}/posts", {"channel_id": channel, "message": "hello"},
                {"Authorization": f"Bearer {token}"})[0] == 201
    read = http("GET", f"{api}/channels/{channel}/posts", None, {"Authorization": f"Bearer {token}"})[1]
    assert [read["posts"][i]["message"] for i in read["order"]] == ["hello", "kickoff"]
    assert read["posts"][post["id"]]["message"] == "kickoff"


def test_bootstrap_and_scripted_workers(team: Team, tmp_path: Path):
    """The team end to end: bootstrap, seed (the project's own seed step), two workers, SIGTERM archives."""
    org = f"agensh-standins-{RUN}"
    cleanroom = calculator.build_cleanroom(org, {"agensh.test": f"standins-{RUN}"})
    worker_image = team.profile.worker_image(TASK)
    try:
        build(worker_image, DEMO, DEMO / WORKER_DOCKERFILE, TASK_IMAGE=cleanroom,
              AGENT_BASE_IMAGE=team.images["agent-base"])
        check = docker("run", "--rm", "--entrypoint", "pbench-selfcheck", worker_image)
        assert check.stdout.strip() == "board=True copilot=yes"
        ref = docker("run", "--rm", "--entrypoint", "sh", worker_image, "-c",
                     "stat -c '%U:%G %a' /opt/pbench/executable; /opt/pbench/executable && echo ran; "
                     "cat /opt/pbench/executable >/dev/null 2>&1 || echo unreadable; id -u")
        assert ref.stdout.split("\n")[:4] == ["root:root 111", "ran", "unreadable", "10000"]

        for role in ("gitea", "mattermost", "secret-service", "board", "model", "egress-proxy"):
            team.start(role)
        team.start("bootstrap", wait=False)
        boot = team.placements[("bootstrap", None)].name
        assert docker("wait", boot).stdout.strip() == "0", logs(boot)
        tokens = Path(spec(team.profile, team.placements[("bootstrap", None)]).mounts[0].host_path)
        issued = {p.name: p.read_text() for p in tokens.glob("*.token")}
        assert sorted(issued) == [f"{TASK}-1.token", f"{TASK}-2.token"]
        assert all(oct(p.stat().st_mode & 0o777) == "0o644" for p in tokens.glob("*.token"))
        docker("start", "-a", boot)  # idempotent: the tokens stay
        assert {p.name: p.read_text() for p in tokens.glob("*.token")} == issued

        router = team.start("router", 1)
        assert "MINI_ROUTER_STUCK_MS=1200000" in logs(router)
        workers = []
        for n in (1, 2):
            archive = Path(spec(team.profile, team.placements[("worker", n)]).mounts[1].host_path)
            archive.mkdir(parents=True)
            try:  # the project pre-creates it for uid 10000
                os.chown(archive, 10000, 10000)
            except PermissionError:
                archive.chmod(0o777)
            workers.append((team.start("worker", n), archive))

        from components.step_inputs import SeedInputs
        from scripts.seed import seed
        args = SeedInputs(run_dir=str(tmp_path / "run"), task_id=TASK, gitea_url=team.url("gitea"),
                          gitea_user=ADMIN_USER, repo=f"{contract.TEAM_ORG}/{contract.task_slug(TASK)}",
                          gitea_repositories=str(tmp_path / "repos"), cleanroom_image=cleanroom, archive_dirs=[])
        assert seed(args, team.secrets["gitea_admin_password"]).seeded == "now"

        # Workers know the team size (WORKERS), so worker 2 makes the direct-push attempt (see standin.py).
        wanted = {workers[0][0]: ["HTTP 200 'stand-in model reply'", "opened and merged pull #1", "steps done"],
                  workers[1][0]: ["HTTP 200", "pushed branch agent-2", "direct push to main refused", "steps done"]}
        end = time.monotonic() + 30
        while not all(all(w in logs(n) for w in want) for n, want in wanted.items()):
            assert time.monotonic() < end, "\n".join(logs(n) for n in wanted)
            assert not any("FAILED" in logs(n) for n in wanted), "\n".join(logs(n) for n in wanted)
            time.sleep(0.5)

        token1 = issued[f"{TASK}-1.token"].strip()
        remote = with_user(f"{team.url('gitea')}/team/{contract.task_slug(TASK)}.git", f"{TASK}-1")
        clone = tmp_path / "main"
        git("clone", "-q", remote, str(clone), password=token1)
        assert subprocess.run(["sh", "compile.sh"], cwd=clone).returncode == 0
        assert subprocess.run(["./executable", "6", "*", "7"], cwd=clone, capture_output=True, text=True).stdout == "42\n"
        assert not (clone / "notes").exists()  # worker 2's notes stay on its branch, the direct push was refused
        assert git("ls-remote", remote, "refs/heads/agent-2", password=token1)

        for name, archive in workers:
            t0 = time.monotonic()
            docker("stop", "-t", "10", name)
            assert time.monotonic() - t0 < 8
            assert docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout.strip() == "0", logs(name)
            data = (archive / "state.tar.gz").read_bytes()
            assert (archive / "state.sha256").read_text().split()[0] == hashlib.sha256(data).hexdigest()
            with tarfile.open(archive / "state.tar.gz") as tar:
                names = set(tar.getnames())
            assert {"home/agent", "workspace/.git/HEAD", "workspace/scratch/notes.txt"} <= names
    finally:
        for name in reversed(team.started):
            docker("rm", "-f", name, check=False)
        team.started.clear()
        docker("rmi", "-f", worker_image, cleanroom, check=False)
