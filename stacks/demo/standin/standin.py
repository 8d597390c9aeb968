#!/usr/bin/env python3
"""STAND-IN services for the agensh offline demo. This is NOT Agensh, NOT Gitea, NOT Mattermost, NOT MySQL.

One small standard-library program that plays every container of an Agensh team on a machine without a
registry or a model. Each role implements only what the agensh project's steps and the demo use (see
../README.md). Every log line starts with "[stand-in <role>]" and every HTTP response carries the header
`X-Agensh-Standin: <role>`.

Role: argv[1] if it names a role, else env STANDIN, else the container's hostname.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ADMIN_USER = "pbench-admin"  # components/services.py ADMIN_USER
TEAM_ORG = "team"
MM_TEAM, MM_CHANNEL = "pbench", "town-square"
# A complete agent id: `<ProgramBench task id>-<n>`, task ids look like `owner__repo.<7+ hex>` (catalog ids).
AGENT_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,80}__[a-z0-9][a-z0-9_.-]{0,80}\.[0-9a-f]{7,40}-[1-9][0-9]{0,3}$")
BOARD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# The SOLUTION files of scripts/calculator.py (testorg__calculator.abc1234), embedded for worker 1.
SOLUTION = {
    "compile.sh": "#!/bin/sh\ncp calculator.sh executable\nchmod +x executable\n",
    "calculator.sh": '#!/bin/bash\n# calculator A OP B\necho $(( $1 $2 $3 ))\n',
}
ROLE = "?"


def log(msg: str) -> None:
    print(f"[stand-in {ROLE}] {msg}", flush=True)


def env(name: str, default: str | None = None) -> str:
    """A setting from the environment, or from the file `<name>_FILE` names (a swarm secret)."""
    if name not in os.environ and os.environ.get(f"{name}_FILE"):
        return Path(os.environ[f"{name}_FILE"]).read_text().strip()
    value = os.environ.get(name, default)
    if value is None:
        log(f"missing required environment variable {name}")
        sys.exit(2)
    return value


# --------------------------------------------------------------------------------------------- HTTP basics
class Handler(BaseHTTPRequestHandler):
    server_version = "agensh-standin/1"
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt: str, *args) -> None:  # one line per request, no headers (no credentials)
        log(f"{self.address_string()} {fmt % args}")

    def body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def json_body(self) -> dict:
        try:
            data = json.loads(self.body() or b"{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def send(self, status: int, payload=None, headers: dict[str, str] | None = None, close: bool = False) -> None:
        raw = b"" if payload is None else (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
        self.send_response(status)
        self.send_header("X-Agensh-Standin", ROLE)
        if payload is not None and not isinstance(payload, bytes):
            self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(raw)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    def error(self, status: int, message: str, close: bool = False) -> None:
        self.send(status, {"message": f"stand-in {ROLE}: {message}"}, close=close)

    def basic(self) -> tuple[str, str] | None:
        auth = self.headers.get("Authorization", "")
        if auth[:6].lower() != "basic ":
            return None
        try:
            user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return user, pw

    def bearer(self, *schemes: str) -> str | None:
        scheme, _, value = self.headers.get("Authorization", "").partition(" ")
        return value.strip() if scheme.lower() in schemes and value.strip() else None


def serve(handler: type[Handler], port: int, what: str) -> None:
    srv = ThreadingHTTPServer(("0.0.0.0", port), handler)
    srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: (log("SIGTERM, stopping"), os._exit(0)))
    log(f"{what} listening on :{port} (stand-in, not the real service)")
    srv.serve_forever()


def same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and hmac.compare_digest(a.encode(), b.encode())


class Store:
    """A small JSON file of state (kept across restarts when the data mount exists)."""

    def __init__(self, path: Path, initial: dict):
        self.path, self.lock = path, threading.RLock()
        try:
            self.data = json.loads(path.read_text())
        except (OSError, ValueError):
            self.data = initial

    def save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data))
            os.chmod(tmp, 0o600)
            tmp.replace(self.path)
        except OSError as err:
            log(f"state not persisted: {err.strerror}")


# --------------------------------------------------------------------------------------------- mysql
def role_mysqld(args: list[str]) -> None:
    conns = next((a.split("=", 1)[1] for a in args if a.startswith("--max-connections=")), "default")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", 3306))
    sock.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: (log("SIGTERM, stopping"), os._exit(0)))
    log(f"mysqld stand-in listening on :3306 with max-connections={conns}; it accepts and closes connections, "
        "it stores nothing")
    while True:
        conn, _ = sock.accept()
        conn.close()


def role_mysqladmin(args: list[str]) -> None:
    host = args[args.index("-h") + 1] if "-h" in args[:-1] else "127.0.0.1"
    if "ping" not in args:
        print("mysqladmin (stand-in): only `ping` is implemented", file=sys.stderr)
        sys.exit(2)
    try:
        socket.create_connection((host, 3306), timeout=2).close()
    except OSError as err:
        print(f"mysqladmin (stand-in): connect to {host}:3306 failed: {err}", file=sys.stderr)
        sys.exit(1)
    print("mysqld is alive (stand-in)")


# --------------------------------------------------------------------------------------------- gitea
PRE_RECEIVE = """#!/bin/sh
# stand-in Gitea branch protection: only the server itself (admin pushes, PR merges) may update main.
while read old new ref; do
  if [ "$ref" = "refs/heads/main" ] && [ "$STANDIN_ADMIN_PUSH" != "1" ]; then
    echo "stand-in gitea: refs/heads/main is protected; direct pushes are refused, open a pull request" >&2
    exit 1
  fi
done
exit 0
"""


def git_env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
            "GIT_AUTHOR_NAME": "stand-in gitea", "GIT_AUTHOR_EMAIL": "gitea@standin.local",
            "GIT_COMMITTER_NAME": "stand-in gitea", "GIT_COMMITTER_EMAIL": "gitea@standin.local", **extra}


def run_git(*args: str, cwd: Path | str | None = None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=git_env(**extra), capture_output=True, text=True)


def role_gitea() -> None:
    password = env("GITEA_ADMIN_PASSWORD")
    data = Path(os.environ.get("GITEA_STANDIN_DATA", "/data"))
    root = data / "git" / "repositories"
    root.mkdir(parents=True, exist_ok=True)
    store = Store(data / "standin-gitea.json", {"orgs": [], "users": {}, "pulls": {}})
    repo_re = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

    class H(Handler):
        def who(self) -> str | None:
            """The authenticated user: admin by password, a worker by its token (basic, `token` or bearer)."""
            cred = self.basic()
            user, secret = cred if cred else (None, self.bearer("token", "bearer"))
            if secret is None:
                return None
            if (user in (None, ADMIN_USER)) and same(secret, password):
                return ADMIN_USER
            for name, token in store.data["users"].items():
                if (user in (None, name)) and same(secret, token):
                    return name
            return None

        def repo_path(self, org: str, repo: str) -> Path | None:
            if not (repo_re.match(org) and repo_re.match(repo)) or ".." in org + repo:
                return None
            return root / org / f"{repo.removesuffix('.git')}.git"

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/api/healthz":
                return self.send(200, {"status": "pass", "description": "stand-in gitea"})
            if ".git/" in path:
                return self.git_http()
            m = re.fullmatch(r"/api/v1/repos/([^/]+)/([^/]+)", path)
            if m:
                if not self.who():
                    return self.error(401, "authentication required")
                p = self.repo_path(*m.groups())
                if p is None or not p.is_dir():
                    return self.error(404, "repository not found")
                empty = not run_git("rev-parse", "--verify", "-q", "refs/heads/main", cwd=p).stdout.strip()
                return self.send(200, {"name": m.group(2), "full_name": "/".join(m.groups()), "default_branch": "main",
                                       "empty": empty, "standin": True})
            self.error(404, "not found")

        def do_POST(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if ".git/" in path:
                return self.git_http()
            user = self.who()
            if not user:
                return self.error(401, "authentication required")
            body = self.json_body()
            with store.lock:
                if path == "/api/v1/orgs":
                    return self.create_org(user, body)
                if path == "/api/v1/admin/users":
                    return self.create_user(user, body)
                m = re.fullmatch(r"/api/v1/orgs/([^/]+)/repos", path)
                if m:
                    return self.create_repo(user, m.group(1), body)
                m = re.fullmatch(r"/api/v1/repos/([^/]+)/([^/]+)/pulls", path)
                if m:
                    return self.open_pull(user, m.group(1), m.group(2), body)
                m = re.fullmatch(r"/api/v1/repos/([^/]+)/([^/]+)/pulls/([0-9]+)/merge", path)
                if m:
                    return self.merge_pull(user, m.group(1), m.group(2), int(m.group(3)))
            self.error(404, "not found")

        def create_org(self, user: str, body: dict) -> None:
            org = str(body.get("username", ""))
            if user != ADMIN_USER:
                return self.error(403, "admin only")
            if not repo_re.match(org) or ".." in org:
                return self.error(422, "invalid organisation name")
            if org in store.data["orgs"]:
                return self.error(422, f"organisation {org} already exists")
            store.data["orgs"].append(org)
            store.save()
            (root / org).mkdir(parents=True, exist_ok=True)
            self.send(201, {"username": org, "standin": True})

        def create_user(self, user: str, body: dict) -> None:
            name, token = str(body.get("username", "")), str(body.get("token") or body.get("password") or "")
            if user != ADMIN_USER:
                return self.error(403, "admin only")
            if not repo_re.match(name) or name == ADMIN_USER or len(token) < 16:
                return self.error(422, "invalid username or token (at least 16 characters)")
            if name in store.data["users"]:
                return self.error(422, f"user {name} already exists")
            store.data["users"][name] = token
            store.save()
            self.send(201, {"login": name, "username": name, "standin": True})

        def create_repo(self, user: str, org: str, body: dict) -> None:
            name = str(body.get("name", ""))
            p = self.repo_path(org, name)
            if user != ADMIN_USER:
                return self.error(403, "admin only")
            if org not in store.data["orgs"]:
                return self.error(404, f"organisation {org} not found")
            if p is None:
                return self.error(422, "invalid repository name")
            if p.exists():
                return self.error(409, f"repository {org}/{name} already exists")
            out = run_git("init", "-q", "--bare", "-b", "main", str(p))
            if out.returncode:
                return self.error(500, "git init failed")
            run_git("config", "http.receivepack", "true", cwd=p)
            hook = p / "hooks" / "pre-receive"
            hook.write_text(PRE_RECEIVE)
            hook.chmod(0o755)
            log(f"created repository {org}/{name} (main protected)")
            self.send(201, {"name": name, "full_name": f"{org}/{name}", "default_branch": "main", "standin": True})

        def open_pull(self, user: str, org: str, repo: str, body: dict) -> None:
            p = self.repo_path(org, repo)
            if p is None or not p.is_dir():
                return self.error(404, "repository not found")
            head, base = str(body.get("head", "")), str(body.get("base", "main"))
            for b in (head, base):
                if run_git("check-ref-format", "--branch", b).returncode or run_git(
                        "rev-parse", "--verify", "-q", f"refs/heads/{b}", cwd=p).returncode:
                    return self.error(422, f"branch {b!r} does not exist")
            pulls = store.data["pulls"].setdefault(f"{org}/{repo}", [])
            pr = {"number": len(pulls) + 1, "head": head, "base": base, "title": str(body.get("title", "")),
                  "user": user, "state": "open", "merged": False}
            pulls.append(pr)
            store.save()
            log(f"{user} opened pull #{pr['number']} {org}/{repo} {head} -> {base}")
            self.send(201, {**pr, "standin": True})

        def merge_pull(self, user: str, org: str, repo: str, number: int) -> None:
            p = self.repo_path(org, repo)
            pulls = store.data["pulls"].get(f"{org}/{repo}", [])
            if p is None or not 1 <= number <= len(pulls):
                return self.error(404, "pull request not found")
            pr = pulls[number - 1]
            if pr["merged"]:
                return self.error(405, "pull request already merged")
            with tempfile.TemporaryDirectory() as tmp:  # a real merge in a temporary clone, zero approvals
                steps = [("clone", "-q", "-b", pr["base"], str(p), tmp),
                         ("merge", "--no-ff", "-q", "-m", f"Merge pull request #{number}: {pr['title']} (stand-in gitea)",
                          f"origin/{pr['head']}"),
                         ("push", "-q", "origin", f"HEAD:refs/heads/{pr['base']}")]
                for i, args in enumerate(steps):
                    out = run_git(*args, cwd=None if i == 0 else tmp, STANDIN_ADMIN_PUSH="1")
                    if out.returncode:
                        log(f"merge of pull #{number} failed at git {args[0]}: {out.stderr.strip()[-300:]}")
                        return self.error(405, f"pull request is not mergeable (git {args[0]} failed)")
                sha = run_git("rev-parse", "HEAD", cwd=tmp).stdout.strip()
            pr.update(merged=True, state="closed", merge_commit_sha=sha, merged_by=user)
            store.save()
            log(f"{user} merged pull #{number} {org}/{repo} {pr['head']} -> {pr['base']} ({sha[:10]})")
            self.send(200, {"merged": True, "sha": sha, "number": number, "standin": True})

        def git_http(self) -> None:
            """Git smart HTTP through `git http-backend` (CGI); basic auth always required."""
            user = self.who()
            if not user:
                return self.send(401, b"stand-in gitea: authentication required\n",
                                 {"WWW-Authenticate": 'Basic realm="stand-in gitea"', "Content-Type": "text/plain"})
            split = urllib.parse.urlsplit(self.path)
            path = urllib.parse.unquote(split.path)
            if ".." in path or not re.fullmatch(r"/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\.git/.*", path):
                return self.error(404, "not found")
            cgi = {**git_env(), "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": user,
                   "REMOTE_ADDR": self.client_address[0], "PATH_INFO": path, "QUERY_STRING": split.query,
                   "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                   "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.0"}
            for k, v in self.headers.items():
                if k.lower() in ("content-encoding", "git-protocol", "accept-encoding"):
                    cgi["HTTP_" + k.upper().replace("-", "_")] = v
            if user == ADMIN_USER:
                cgi["STANDIN_ADMIN_PUSH"] = "1"
            chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
            length = int(self.headers.get("Content-Length") or 0)
            if not chunked and self.command == "POST":
                cgi["CONTENT_LENGTH"] = str(length)
            proc = subprocess.Popen(["git", "http-backend"], env=cgi, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)

            def feed() -> None:  # stream the request body into the CGI
                try:
                    if chunked:
                        while True:
                            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                            if size == 0:
                                self.rfile.readline()
                                break
                            proc.stdin.write(self.rfile.read(size))
                            self.rfile.readline()
                    else:
                        left = length
                        while left > 0:
                            chunk = self.rfile.read(min(left, 65536))
                            if not chunk:
                                break
                            proc.stdin.write(chunk)
                            left -= len(chunk)
                finally:
                    proc.stdin.close()

            errors: list[bytes] = []
            feeder = threading.Thread(target=feed, daemon=True)
            drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
            feeder.start()
            drain.start()
            status, headers = 200, []
            for line in iter(proc.stdout.readline, b""):
                line = line.rstrip(b"\r\n")
                if not line:
                    break
                k, _, v = line.decode("latin-1").partition(":")
                if k.lower() == "status":
                    status = int(v.strip().split()[0])
                else:
                    headers.append((k.strip(), v.strip()))
            self.send_response(status)
            self.send_header("X-Agensh-Standin", ROLE)
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            shutil.copyfileobj(proc.stdout, self.wfile)
            feeder.join(timeout=30)
            proc.wait()
            drain.join(timeout=5)
            if errors and errors[0].strip():
                log(f"git http-backend ({user}): {errors[0].decode(errors='replace').strip()[-300:]}")

    serve(H, 3000, f"gitea (admin {ADMIN_USER}, org repos under the data mount)")


# --------------------------------------------------------------------------------------------- mattermost
def mm_id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:26]


def role_mattermost() -> None:
    password = env("MATTERMOST_ADMIN_PASSWORD")
    store = Store(Path(os.environ.get("MATTERMOST_STANDIN_DATA", "/mattermost/data")) / "standin-mattermost.json",
                  {"users": {}, "posts": []})
    sessions: dict[str, str] = {}  # session token -> username (admin sessions, in memory)
    channel = {"id": mm_id(MM_TEAM, MM_CHANNEL), "name": MM_CHANNEL, "team_id": mm_id(MM_TEAM)}

    class H(Handler):
        def who(self) -> str | None:
            token = self.bearer("bearer", "token")
            if token is None:
                return None
            for session, name in list(sessions.items()):
                if same(token, session):
                    return name
            return next((n for n, t in store.data["users"].items() if same(token, t)), None)

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/api/v4/system/ping":
                return self.send(200, {"status": "OK", "standin": True})
            if not self.who():
                return self.error(401, "authentication required")
            if path == f"/api/v4/teams/name/{MM_TEAM}/channels/name/{MM_CHANNEL}":
                return self.send(200, channel)
            if re.fullmatch(r"/api/v4/teams/name/[^/]+/channels/name/[^/]+", path):
                return self.error(404, f"only team {MM_TEAM} with channel {MM_CHANNEL} exists")
            if path == f"/api/v4/channels/{channel['id']}/posts":
                with store.lock:
                    posts = [p for p in store.data["posts"] if p["channel_id"] == channel["id"]]
                return self.send(200, {"order": [p["id"] for p in reversed(posts)], "posts": {p["id"]: p for p in posts}})
            self.error(404, "not found")

        def do_POST(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            body = self.json_body()
            if path == "/api/v4/users/login":
                login, secret = str(body.get("login_id", "")), str(body.get("password", ""))
                if login == ADMIN_USER and same(secret, password):
                    token = secrets.token_hex(16)
                    sessions[token] = ADMIN_USER
                elif login in store.data["users"] and same(secret, store.data["users"][login]):
                    token = store.data["users"][login]
                else:
                    return self.error(401, "invalid login")
                return self.send(200, {"id": mm_id("user", login), "username": login}, {"Token": token})
            user = self.who()
            if not user:
                return self.error(401, "authentication required")
            with store.lock:
                if path == "/api/v4/users":
                    name, token = str(body.get("username", "")), str(body.get("token") or body.get("password") or "")
                    if user != ADMIN_USER:
                        return self.error(403, "admin only")
                    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name) or len(token) < 16:
                        return self.error(400, "invalid username or token")
                    if name in store.data["users"] or name == ADMIN_USER:
                        return self.error(400, f"user {name} already exists")
                    store.data["users"][name] = token
                    store.save()
                    return self.send(201, {"id": mm_id("user", name), "username": name})
                if path == "/api/v4/posts":
                    if body.get("channel_id") != channel["id"] or not isinstance(body.get("message"), str):
                        return self.error(400, "unknown channel_id or missing message")
                    post = {"id": mm_id("post", str(len(store.data["posts"])), secrets.token_hex(4)),
                            "channel_id": channel["id"], "message": body["message"], "user_id": mm_id("user", user),
                            "username": user, "create_at": int(time.time() * 1000)}
                    store.data["posts"].append(post)
                    store.save()
                    return self.send(201, post)
            self.error(404, "not found")

    serve(H, 8065, f"mattermost (team {MM_TEAM}, channel {MM_CHANNEL})")


# --------------------------------------------------------------------------------------------- board
def role_board() -> None:
    lifecycle = Path(os.environ.get("BOARD_LIFECYCLE_DIR", "/data/lifecycle"))
    lock = threading.Lock()

    class H(Handler):
        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in board"})
            self.error(404, "not found")

        def do_POST(self) -> None:
            raw = urllib.parse.urlsplit(self.path).path
            if not (raw.startswith("/board/") and raw.endswith("/lifecycle")):
                return self.error(404, "not found")
            board_id = raw[len("/board/"):-len("/lifecycle")]
            # Checked before any directory or file exists: no encoding, no slashes, no dot-dot, a plain name.
            if "%" in board_id or "/" in board_id or ".." in board_id or not BOARD_ID_RE.match(board_id):
                return self.error(400, "invalid board id")
            base = os.path.realpath(lifecycle)
            target = os.path.realpath(os.path.join(base, f"{board_id}.jsonl"))
            if os.path.dirname(target) != base:
                return self.error(400, "board file escapes the lifecycle directory")
            try:
                event = json.loads(self.body() or b"null")
            except ValueError:
                return self.error(400, "body is not JSON")
            line = json.dumps({"board_id": board_id, "received_at": time.time(), "event": event}) + "\n"
            with lock:
                os.makedirs(base, exist_ok=True)
                try:
                    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
                except OSError:
                    return self.error(400, "board file is not a regular file")
                with os.fdopen(fd, "a") as fh:
                    fh.write(line)
            self.send(200, {"ok": True, "board_id": board_id})

    serve(H, int(env("PORT", "8080")), "board (lifecycle log only)")


# --------------------------------------------------------------------------------------------- token service
def role_secret_service() -> None:
    tokens = os.path.realpath(env("SECRET_SERVICE_TOKENS_DIR", "/tokens"))

    class H(Handler):
        protocol_version = "HTTP/1.1"  # keep-alive for good requests; rejected ones are closed

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in token service"})
            if not path.startswith("/token/"):
                return self.error(404, "not found", close=True)
            agent = path[len("/token/"):]
            if not AGENT_ID_RE.match(agent):
                return self.error(400, "not a complete agent id", close=True)
            target = os.path.realpath(os.path.join(tokens, f"{agent}.token"))
            if os.path.dirname(target) != tokens:
                return self.error(403, "token outside the token store", close=True)
            try:
                with open(target, encoding="utf-8") as fh:
                    token = fh.read().strip()
            except OSError:
                return self.error(404, "no token for this agent", close=True)
            if not token:
                return self.error(404, "no token for this agent", close=True)
            self.send(200, {"agent_id": agent, "token": token})

    serve(H, int(env("PORT", "8080")), "token service (tokens from a read-only mount)")


# --------------------------------------------------------------------------------------------- egress proxy
def role_egress_proxy() -> None:
    upstream = env("LLM_UPSTREAM").rstrip("/")
    upstream_token, proxy_token = env("LLM_UPSTREAM_TOKEN"), env("WORKER_PROXY_TOKEN")

    class H(Handler):
        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in egress proxy"})
            self.error(404, "not found")

        def do_POST(self) -> None:
            if urllib.parse.urlsplit(self.path).path != "/v1/responses":
                return self.error(404, "only /v1/responses is proxied")
            if not same(self.bearer("bearer"), proxy_token):
                self.body()
                return self.error(401, "missing or wrong proxy credential")
            req = urllib.request.Request(f"{upstream}/v1/responses", data=self.body(), method="POST", headers={
                "Content-Type": self.headers.get("Content-Type", "application/json"),
                "Authorization": f"Bearer {upstream_token}"})
            try:
                with urllib.request.urlopen(req, timeout=600) as resp:
                    status, data, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
            except urllib.error.HTTPError as err:
                status, data, ctype = err.code, err.read(), err.headers.get("Content-Type")
            except (urllib.error.URLError, OSError) as err:
                log(f"upstream unreachable: {getattr(err, 'reason', err)}")
                return self.error(502, "model upstream unreachable")
            log(f"forwarded /v1/responses -> upstream: HTTP {status}")
            self.send(status, data, {"Content-Type": ctype or "application/json"})

    serve(H, int(env("PORT", "8080")), f"egress proxy (upstream {upstream}, credential injected)")


# --------------------------------------------------------------------------------------------- model
def role_model() -> None:
    expected = env("EXPECTED_TOKEN_SHA256").strip().lower()
    stats, lock = {"ok": 0, "rejected": 0}, threading.Lock()

    class H(Handler):
        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in model"})
            if path == "/stats":
                with lock:
                    return self.send(200, dict(stats, standin=True))
            self.error(404, "not found")

        def do_POST(self) -> None:
            if urllib.parse.urlsplit(self.path).path != "/v1/responses":
                return self.error(404, "not found")
            body = self.json_body()
            token = self.bearer("bearer")
            good = token is not None and same(hashlib.sha256(token.encode()).hexdigest(), expected)
            with lock:
                stats["ok" if good else "rejected"] += 1
            if not good:
                return self.error(401, "credential does not match EXPECTED_TOKEN_SHA256")
            self.send(200, {"id": f"resp_standin_{secrets.token_hex(6)}", "object": "response",
                            "model": body.get("model"), "output_text": "stand-in model reply"})

    serve(H, int(env("PORT", "8080")), "model (checks the injected credential only; no inference)")


# --------------------------------------------------------------------------------------------- mini-router
def role_mini_router() -> None:
    class H(Handler):
        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in mini-router"})
            self.error(404, "not found")

    log(f"agent {os.environ.get('AGENT_ID', '?')}, MINI_ROUTER_STUCK_MS={os.environ.get('MINI_ROUTER_STUCK_MS', '?')}; "
        "routes nothing")
    serve(H, int(env("PORT", "8080")), "mini-router (healthz only)")


# --------------------------------------------------------------------------------------------- clients
def call(method: str, url: str, body=None, *, basic: tuple[str, str] | None = None, bearer: str | None = None,
         ok: tuple[int, ...] = ()) -> tuple[int, dict, dict]:
    headers = {"Content-Type": "application/json"}
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw, status, hdrs = resp.read(), resp.status, dict(resp.headers)
    except urllib.error.HTTPError as err:
        raw, status, hdrs = err.read(), err.code, dict(err.headers)
        if status not in ok:
            raise RuntimeError(f"{method} {urllib.parse.urlsplit(url).path}: HTTP {status} {raw[:200]!r}") from None
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        data = {}
    return status, data if isinstance(data, dict) else {}, hdrs


def wait_for(url: str, limit: float) -> None:
    end = time.monotonic() + limit
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, OSError) as err:
            if time.monotonic() > end:
                raise RuntimeError(f"{url} did not answer within {limit:.0f} s: {err}") from None
        time.sleep(1)


# --------------------------------------------------------------------------------------------- bootstrap
def role_bootstrap() -> None:
    gitea, mm = env("GITEA_URL").rstrip("/"), env("MATTERMOST_URL").rstrip("/")
    workers, tasks = int(env("WORKERS")), env("TASKS").split()
    tokens = Path(env("TOKENS_DIR", "/tokens"))
    gpw, mpw = env("GITEA_ADMIN_PASSWORD"), env("MATTERMOST_ADMIN_PASSWORD")
    log(f"registering {workers} worker(s) for {len(tasks)} task(s)")
    wait_for(f"{gitea}/api/healthz", 180)
    wait_for(f"{mm}/api/v4/system/ping", 180)
    _, _, hdrs = call("POST", f"{mm}/api/v4/users/login", {"login_id": ADMIN_USER, "password": mpw})
    session = next(v for k, v in hdrs.items() if k.lower() == "token")
    tokens.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        for n in range(1, workers + 1):
            agent = f"{task}-{n}"
            path = tokens / f"{agent}.token"
            kept = path.is_file() and path.read_text().strip()
            token = kept or secrets.token_hex(24)
            if not kept:
                tmp = tokens / f".{agent}.token.tmp"
                tmp.write_text(token + "\n")
                os.chmod(tmp, 0o644)
                tmp.replace(path)
            g, _, _ = call("POST", f"{gitea}/api/v1/admin/users",
                           {"username": agent, "token": token, "password": token, "email": f"{agent}@agensh.local",
                            "must_change_password": False}, basic=(ADMIN_USER, gpw), ok=(422,))
            m, _, _ = call("POST", f"{mm}/api/v4/users", {"username": agent, "token": token, "password": token,
                                                          "email": f"{agent}@agensh.local"}, bearer=session, ok=(400,))
            log(f"{agent}: token {'kept' if kept else 'issued'}, gitea HTTP {g}, mattermost HTTP {m}")
    log("done")


# --------------------------------------------------------------------------------------------- worker
class Worker:
    """A scripted agent: no model reasoning, a fixed sequence that exercises the team's plumbing."""

    def __init__(self) -> None:
        self.agent = env("AGENT_ID")
        self.n = int(self.agent.rsplit("-", 1)[1])
        self.home = Path(os.environ.get("HOME") or "/home/agent")
        self.ws = Path(os.environ.get("WORKSPACE", "/workspace"))
        self.token = ""
        self.sealing = False

    def seal(self, *_args) -> None:
        """SIGTERM: seal HOME and the workspace (Git and ignored files included), verify, checksum, exit 0."""
        if self.sealing:
            return
        self.sealing = True
        t0 = time.monotonic()
        archive = Path(os.environ.get("ARCHIVE_DIR", "/archive"))
        part, final = archive / "state.tar.gz.part", archive / "state.tar.gz"
        members = [str(p.relative_to("/")) for p in (self.home, self.ws) if p.exists()]
        made = subprocess.run(["tar", "-czf", str(part), "-C", "/", *members], capture_output=True, text=True)
        listed = subprocess.run(["tar", "-tzf", str(part)], capture_output=True, text=True)
        if made.returncode or listed.returncode:
            log(f"SIGTERM: archive FAILED: {(made.stderr + listed.stderr).strip()[-300:]}")
            os._exit(1)
        part.replace(final)
        digest = hashlib.sha256(final.read_bytes()).hexdigest()
        (archive / "state.sha256").write_text(f"{digest}  state.tar.gz\n")
        log(f"SIGTERM: sealed {', '.join('/' + m for m in members)} into {final} "
            f"({len(listed.stdout.splitlines())} entries, verified, sha256 {digest[:12]}) in {time.monotonic() - t0:.1f} s")
        os._exit(0)

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        askpass = self.home / ".standin-askpass"
        if not askpass.exists():
            askpass.write_text('#!/bin/sh\nprintf "%s\\n" "$STANDIN_GIT_PASSWORD"\n')
            askpass.chmod(0o700)
        out = subprocess.run(["git", *args], cwd=self.ws, capture_output=True, text=True, env={
            **os.environ, "GIT_ASKPASS": str(askpass), "STANDIN_GIT_PASSWORD": self.token, "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": self.agent, "GIT_AUTHOR_EMAIL": f"{self.agent}@agensh.local",
            "GIT_COMMITTER_NAME": self.agent, "GIT_COMMITTER_EMAIL": f"{self.agent}@agensh.local"})
        if check and out.returncode:
            raise RuntimeError(f"git {args[0]} failed: {out.stderr.strip()[-300:]}")
        return out

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self.seal)
        task, repo = env("TASK_ID"), env("TEAM_REPO")
        gitea = env("GITEA_URL").rstrip("/")
        log(f"scripted worker {self.agent} (uid {os.getuid()}) for {task}; not a real agent")
        offset = float(os.environ.get("PBENCH_WAKE_OFFSET_S") or 0)
        log(f"sleeping the wake offset {offset:g} s")
        time.sleep(offset)
        try:
            if os.environ.get("BASELINE") == "1":
                self.baseline()
            else:
                self.steps(gitea, repo)
            log("scripted steps done; idling until SIGTERM")
        except Exception as err:  # noqa: BLE001 - a stand-in reports and keeps its archive behaviour
            log(f"scripted steps FAILED: {err}; idling until SIGTERM")
        while True:
            time.sleep(3600)

    def baseline(self) -> None:
        """The standalone baseline: no team services; one model request, then the solution written (not committed)
        into the mounted workspace, where the snapshot sidecar and the final commit at stop pick it up."""
        self.model_request()
        for name, text in SOLUTION.items():
            (self.ws / name).write_text(text)
            (self.ws / name).chmod(0o755)
        (self.ws / ".git" / "info" / "exclude").write_text("scratch/\n")
        (self.ws / "scratch").mkdir(exist_ok=True)
        (self.ws / "scratch" / "notes.txt").write_text(f"ignored scratch file of {self.agent} (stand-in)\n")
        log(f"baseline: wrote {', '.join(SOLUTION)} into {self.ws} (left for the snapshots to commit)")

    def model_request(self) -> None:
        proxy = env("LLM_PROXY_URL").rstrip("/")
        body = {"model": env("MODEL", "stand-in"), "input": f"Stand-in worker {self.agent}: say hello.",
                "reasoning": {"effort": env("REASONING_EFFORT", "high")}}
        for attempt in range(30):
            try:
                status, reply, _ = call("POST", f"{proxy}/v1/responses", body, bearer=env("LLM_PROXY_TOKEN"),
                                        ok=(401, 403, 502))
                log(f"model request through the egress proxy: HTTP {status} {reply.get('output_text', '')!r}")
                return
            except (OSError, RuntimeError) as err:
                if attempt == 29:
                    log(f"model request failed: {err}")
                time.sleep(2)

    def steps(self, gitea: str, repo: str) -> None:
        url = env("TOKEN_SERVICE_URL").rstrip("/") + f"/token/{self.agent}"
        end = time.monotonic() + 600
        while not self.token:
            try:
                self.token = call("GET", url)[1]["token"]
            except (RuntimeError, OSError, KeyError) as err:
                if time.monotonic() > end:
                    raise RuntimeError(f"no token from the token service: {err}") from None
                time.sleep(2)
        log("token fetched from the token service")

        self.model_request()

        remote = urllib.parse.urlsplit(gitea)
        origin = urllib.parse.urlunsplit(remote._replace(netloc=f"{self.agent}@{remote.netloc}",
                                                         path=f"/{repo}.git"))
        if not (self.ws / ".git").exists():
            self.git("init", "-q", "-b", "main")
            self.git("remote", "add", "origin", origin)
        end = time.monotonic() + float(os.environ.get("STANDIN_SEED_WAIT_S", "3600"))
        while not self.git("ls-remote", "origin", "refs/heads/main", check=False).stdout.strip():
            if time.monotonic() > end:
                raise RuntimeError(f"{repo} has no main branch yet")
            time.sleep(3)
        self.git("fetch", "-q", "origin", "main")
        self.git("checkout", "-q", "-f", "-B", "main", "origin/main")
        log(f"checked out {repo} main into {self.ws}")
        (self.ws / ".git" / "info" / "exclude").write_text("scratch/\n")
        (self.ws / "scratch").mkdir(exist_ok=True)
        (self.ws / "scratch" / "notes.txt").write_text(f"ignored scratch file of {self.agent} (stand-in)\n")

        branch = f"agent-{self.n}"
        self.git("checkout", "-q", "-B", branch)
        if self.n == 1:
            for name, text in SOLUTION.items():
                (self.ws / name).write_text(text)
                (self.ws / name).chmod(0o755)
            self.git("add", *SOLUTION)
            self.git("commit", "-q", "-m", f"{self.agent}: calculator solution (stand-in scripted worker)")
        else:
            (self.ws / "notes").mkdir(exist_ok=True)
            (self.ws / "notes" / f"{self.agent}.md").write_text(f"# {self.agent}\n\nStand-in worker notes.\n")
            self.git("add", f"notes/{self.agent}.md")
            self.git("commit", "-q", "-m", f"{self.agent}: notes (stand-in scripted worker)")
        self.git("push", "-q", "-f", "origin", f"{branch}:refs/heads/{branch}")
        log(f"pushed branch {branch}")

        api = f"{gitea}/api/v1/repos/{repo}"
        if self.n == 1:
            _, pr, _ = call("POST", f"{api}/pulls", {"head": branch, "base": "main", "title": f"{self.agent} solution"},
                            basic=(self.agent, self.token))
            call("POST", f"{api}/pulls/{pr['number']}/merge", {"Do": "merge"}, basic=(self.agent, self.token))
            log(f"opened and merged pull #{pr['number']} ({branch} -> main, zero approvals)")

        team = os.environ.get("WORKERS")  # the team size; a lone worker makes the attempt itself
        if self.n == (2 if team and int(team) >= 2 else 1):
            self.git("fetch", "-q", "origin", "main")
            self.git("checkout", "-q", "-B", "direct-main-attempt", "origin/main")
            (self.ws / "notes").mkdir(exist_ok=True)
            (self.ws / "notes" / "direct-push.md").write_text("This commit must never reach main.\n")
            self.git("add", "notes/direct-push.md")
            self.git("commit", "-q", "-m", "direct push to main (must be refused)")
            out = self.git("push", "origin", "HEAD:refs/heads/main", check=False)
            if out.returncode:
                log("direct push to main refused, as it should be")
            else:
                log("ERROR: direct push to main was ACCEPTED")
            self.git("checkout", "-q", branch)
            self.git("branch", "-q", "-D", "direct-main-attempt")


def role_worker() -> None:
    Worker().run()


ROLES = {
    "mysql": role_mysqld, "mysqld": role_mysqld, "mysqladmin": role_mysqladmin, "gitea": role_gitea,
    "mattermost": role_mattermost, "board": role_board, "secret-service": role_secret_service,
    "egress-proxy": role_egress_proxy, "model": role_model, "mini-router": role_mini_router,
    "bootstrap": role_bootstrap, "worker": role_worker,
}
TAKES_ARGS = {"mysql", "mysqld", "mysqladmin"}


def main(argv: list[str]) -> None:
    global ROLE
    if len(argv) > 1 and argv[1] in ROLES:
        ROLE, args = argv[1], argv[2:]
    else:
        ROLE, args = os.environ.get("STANDIN") or socket.gethostname(), argv[1:]
    if ROLE not in ROLES:
        print(f"[stand-in] unknown role {ROLE!r}; give one of {', '.join(sorted(ROLES))} "
              "as argv[1], env STANDIN or the hostname", file=sys.stderr)
        sys.exit(2)
    try:
        ROLES[ROLE](args) if ROLE in TAKES_ARGS else ROLES[ROLE]()
    except RuntimeError as err:
        log(f"FAILED: {err}")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
