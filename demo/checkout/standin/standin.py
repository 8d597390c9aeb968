#!/usr/bin/env python3
"""STAND-IN services for the agensh offline demo. This is NOT Agensh and NOT Mattermost.

One small standard-library program that plays the Agensh containers of a team (and Mattermost) on a machine
without a registry or a model; Gitea and the database are the real ones (demo/services). Each role implements
only what the agensh project's steps and the demo use (see ../README.md). Every log line starts with
"[stand-in <role>]" and every HTTP response carries the header `X-Agensh-Standin: <role>`.

Role: argv[1] if it names a role, else env STANDIN, else the container's hostname.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ADMIN_USER = "pbench-admin"  # model/contract.py ADMIN_USER
MM_TEAM, MM_CHANNEL = "pbench", "town-square"
# A complete agent id: `<ProgramBench task id>-<n>`, task ids look like `owner__repo.<7+ hex>` (catalog ids).
AGENT_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,80}__[a-z0-9][a-z0-9_.-]{0,80}\.[0-9a-f]{7,40}-[1-9][0-9]{0,3}$")
BOARD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# The SOLUTION files of scripts/setup/calculator.py (testorg__calculator.abc1234): what the scripted solver writes.
SOLUTION = {
    "compile.sh": "#!/bin/sh\ncp calculator.sh executable\nchmod +x executable\n",
    "calculator.sh": "#!/bin/bash\n# calculator A OP B\necho $(( $1 $2 $3 ))\n",
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

    def bearer(self, *schemes: str) -> str | None:
        scheme, _, value = self.headers.get("Authorization", "").partition(" ")
        return value.strip() if scheme.lower() in schemes and value.strip() else None


def serve(handler: type[Handler], port: int, what: str) -> None:
    srv = ThreadingHTTPServer(("0.0.0.0", port), handler)
    srv.daemon_threads = True

    def stop(*_: object) -> None:
        log("SIGTERM, stopping")
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    log(f"{what} listening on :{port} (stand-in, not the real service)")
    srv.serve_forever()


def same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and hmac.compare_digest(a.encode(), b.encode())


# --------------------------------------------------------------------------------------------- mattermost
MM_USERNAME_RE = re.compile(r"^[a-z][a-z0-9._-]{2,21}$")  # Mattermost: 3-22 characters, a letter first
# The Mattermost settings this stand-in reads, as the real server reads them: each MM_* variable is a config.json path
# in capitals (Mattermost's configuration reference, "Environment variables"). Any other MM_* variable is refused: a
# name the project got wrong would fail here as it would be ignored by the real server.
MM_SETTINGS = {
    "MM_SQLSETTINGS_DRIVERNAME": "SqlSettings.DriverName",  # mysql (or postgres; the stand-in speaks mysql only)
    "MM_SQLSETTINGS_DATASOURCE": "SqlSettings.DataSource",  # the Go MySQL driver's DSN
    "MM_SERVICESETTINGS_SITEURL": "ServiceSettings.SiteURL",
    "MM_SERVICESETTINGS_LISTENADDRESS": "ServiceSettings.ListenAddress",  # default ":8065"
    "MM_TEAMSETTINGS_MAXUSERSPERTEAM": "TeamSettings.MaxUsersPerTeam",
}
# user:password@tcp(host:port)/database?params, as github.com/go-sql-driver/mysql parses it (the password runs to the
# last "@" before the address)
MYSQL_DSN_RE = re.compile(
    r"(?P<user>[^:@/]*)(?::(?P<password>.*))?@tcp\((?P<host>[^:()]+)(?::(?P<port>\d+))?\)/(?P<database>[^?/]+)(?:\?.*)?"
)
MM_TABLES = (
    "CREATE TABLE IF NOT EXISTS Users (Id CHAR(26) PRIMARY KEY, Username VARCHAR(64) NOT NULL UNIQUE, "
    "Email VARCHAR(128) NOT NULL, Roles VARCHAR(256) NOT NULL, CreateAt BIGINT NOT NULL, Password CHAR(64) NOT NULL)",
    "CREATE TABLE IF NOT EXISTS Teams (Id CHAR(26) PRIMARY KEY, Name VARCHAR(64) NOT NULL UNIQUE, "
    "DisplayName VARCHAR(64) NOT NULL, Type CHAR(1) NOT NULL, CreateAt BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS TeamMembers (TeamId CHAR(26) NOT NULL, UserId CHAR(26) NOT NULL, "
    "PRIMARY KEY (TeamId, UserId))",
    "CREATE TABLE IF NOT EXISTS Channels (Id CHAR(26) PRIMARY KEY, TeamId CHAR(26) NOT NULL, "
    "Name VARCHAR(64) NOT NULL, DisplayName VARCHAR(64) NOT NULL, CreateAt BIGINT NOT NULL, UNIQUE (TeamId, Name))",
    "CREATE TABLE IF NOT EXISTS Posts (Seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, Id CHAR(26) NOT NULL UNIQUE, "
    "ChannelId CHAR(26) NOT NULL, UserId CHAR(26) NOT NULL, CreateAt BIGINT NOT NULL, Message TEXT NOT NULL)",
)


def mm_settings() -> dict[str, str]:
    """The MM_* settings, refused (exit 2) when one is not a Mattermost setting, the driver is not mysql or the DSN
    does not parse."""
    unknown = sorted(k for k in os.environ if k.startswith("MM_") and k not in MM_SETTINGS)
    if unknown:
        log(f"refusing to start: {', '.join(unknown)} is not a Mattermost setting (known: {', '.join(MM_SETTINGS)})")
        sys.exit(2)
    driver = os.environ.get("MM_SQLSETTINGS_DRIVERNAME", "")
    if driver != "mysql":
        log(f"refusing to start: MM_SQLSETTINGS_DRIVERNAME must be mysql for this stand-in, got {driver!r}")
        sys.exit(2)
    if not MYSQL_DSN_RE.fullmatch(env("MM_SQLSETTINGS_DATASOURCE")):
        log("refusing to start: MM_SQLSETTINGS_DATASOURCE is not a DSN of the form user:password@tcp(host:port)/db")
        sys.exit(2)
    return {k: os.environ[k] for k in MM_SETTINGS if k in os.environ}


class MattermostDB:
    """The stand-in's users, teams, members, channels and posts, kept in the database its DSN names (tables named as
    Mattermost's), read once at start and written through on every change. `data` is the in-memory view."""

    def __init__(self, dsn: str):
        import pymysql  # type: ignore[import-untyped]  # Debian's python3-pymysql, in the stand-in image

        m = MYSQL_DSN_RE.fullmatch(dsn)
        assert m is not None
        for attempt in range(30):  # the real server retries too while its database starts
            try:
                self.conn = pymysql.connect(
                    host=m["host"],
                    port=int(m["port"] or 3306),
                    user=m["user"],
                    password=m["password"] or "",
                    database=m["database"],
                    charset="utf8mb4",
                    autocommit=True,
                    connect_timeout=5,
                )
                break
            except pymysql.err.OperationalError as err:
                if err.args and err.args[0] in (1044, 1045, 1049) or attempt == 29:  # denied, unknown database
                    log(f"cannot use the database {m['database']} at {m['host']} as {m['user']}: {err.args[-1]}")
                    sys.exit(1)
                time.sleep(2)
        log(f"database {m['database']} at {m['host']} as {m['user']}")
        self.lock = threading.RLock()
        for table in MM_TABLES:
            self.sql(table)
        self.data: dict[str, Any] = {"users": {}, "teams": {}, "channels": {}, "posts": []}
        for uid, name, email, roles, at, pw in self.sql(
            "SELECT Id, Username, Email, Roles, CreateAt, Password FROM Users"
        ):
            self.data["users"][name] = {
                "id": uid,
                "username": name,
                "email": email,
                "roles": roles,
                "create_at": at,
                "password_sha256": pw,
            }
        for tid, name, display, kind, at in self.sql("SELECT Id, Name, DisplayName, Type, CreateAt FROM Teams"):
            members = [u for (u,) in self.sql("SELECT UserId FROM TeamMembers WHERE TeamId = %s", tid)]
            self.data["teams"][name] = {
                "id": tid,
                "name": name,
                "display_name": display,
                "type": kind,
                "create_at": at,
                "members": members,
            }
        for cid, tid, name, display, at in self.sql("SELECT Id, TeamId, Name, DisplayName, CreateAt FROM Channels"):
            self.data["channels"][f"{tid}/{name}"] = {
                "id": cid,
                "team_id": tid,
                "name": name,
                "display_name": display,
                "create_at": at,
            }
        rows = self.sql("SELECT Id, CreateAt, UserId, ChannelId, Message FROM Posts ORDER BY Seq")
        self.data["posts"] = [mm_post(*row) for row in rows]

    def sql(self, statement: str, *args: Any) -> tuple:
        with self.lock:
            self.conn.ping(reconnect=True)  # the database may have been restarted since
            with self.conn.cursor() as cur:
                cur.execute(statement, args or None)
                return cur.fetchall()

    def put_user(self, u: dict) -> None:
        self.sql(
            "INSERT INTO Users (Id, Username, Email, Roles, CreateAt, Password) VALUES (%s, %s, %s, %s, %s, %s) "
            "ON DUPLICATE KEY UPDATE Password = VALUES(Password)",
            u["id"],
            u["username"],
            u["email"],
            u["roles"],
            u["create_at"],
            u["password_sha256"],
        )

    def put_team(self, t: dict, channel: dict) -> None:
        self.sql(
            "INSERT INTO Teams (Id, Name, DisplayName, Type, CreateAt) VALUES (%s, %s, %s, %s, %s)",
            t["id"],
            t["name"],
            t["display_name"],
            t["type"],
            t["create_at"],
        )
        self.sql(
            "INSERT INTO Channels (Id, TeamId, Name, DisplayName, CreateAt) VALUES (%s, %s, %s, %s, %s)",
            channel["id"],
            channel["team_id"],
            channel["name"],
            channel["display_name"],
            channel["create_at"],
        )
        for uid in t["members"]:
            self.put_member(t["id"], uid)

    def put_member(self, team_id: str, uid: str) -> None:
        self.sql("INSERT IGNORE INTO TeamMembers (TeamId, UserId) VALUES (%s, %s)", team_id, uid)

    def put_post(self, post: dict) -> None:
        self.sql(
            "INSERT INTO Posts (Id, ChannelId, UserId, CreateAt, Message) VALUES (%s, %s, %s, %s, %s)",
            post["id"],
            post["channel_id"],
            post["user_id"],
            post["create_at"],
            post["message"],
        )


def mm_post(post_id: str, at: int, user_id: str, channel_id: str, message: str) -> dict:
    """A post object as the v4 API returns it."""
    return {
        "id": post_id,
        "create_at": at,
        "update_at": at,
        "edit_at": 0,
        "delete_at": 0,
        "is_pinned": False,
        "user_id": user_id,
        "channel_id": channel_id,
        "root_id": "",
        "original_id": "",
        "message": message,
        "type": "",
        "props": {},
        "hashtags": "",
        "pending_post_id": "",
        "reply_count": 0,
        "metadata": {},
    }


def mm_id() -> str:
    """A Mattermost id: 26 characters of [a-z0-9]."""
    return base64.b32encode(secrets.token_bytes(16)).decode().lower().rstrip("=")[:26]


def mm_now() -> int:
    return int(time.time() * 1000)


def mm_object(record: dict) -> dict:
    """The fields a user, team or channel of the v4 API begins with (the stand-in never updates or deletes one)."""
    return {"id": record["id"], "create_at": record["create_at"], "update_at": record["create_at"], "delete_at": 0}


def role_mattermost() -> None:
    """The subset of the Mattermost v4 REST API the project and the demo use, with its request and response shapes:
    system ping, users (create, login with the session in the `Token` header, me, by username), teams (create, by
    name, join), a team's channel by name (every team has `town-square`), posts (create, list a channel's)."""
    settings = mm_settings()
    password = env("MATTERMOST_ADMIN_PASSWORD")
    max_users = int(settings.get("MM_TEAMSETTINGS_MAXUSERSPERTEAM") or 50)
    port = int(settings.get("MM_SERVICESETTINGS_LISTENADDRESS", ":8065").rsplit(":", 1)[-1])
    digest = lambda pw: hashlib.sha256(pw.encode()).hexdigest()  # noqa: E731
    store = MattermostDB(settings["MM_SQLSETTINGS_DATASOURCE"])
    admin = store.data["users"].setdefault(
        ADMIN_USER,
        {
            "id": mm_id(),
            "username": ADMIN_USER,
            "email": f"{ADMIN_USER}@agensh.local",
            "roles": "system_admin system_user",
            "create_at": mm_now(),
        },
    )
    admin["password_sha256"] = digest(password)  # the admin's password is the env's
    store.put_user(admin)
    sessions: dict[str, str] = {}  # session token -> user id (in memory, like a restart ending sessions)

    def user_json(u: dict) -> dict:
        return {
            **mm_object(u),
            "username": u["username"],
            "auth_data": "",
            "auth_service": "",
            "email": u["email"],
            "nickname": "",
            "first_name": "",
            "last_name": "",
            "position": "",
            "roles": u["roles"],
            "locale": "en",
        }

    def team_json(t: dict) -> dict:
        return {
            **mm_object(t),
            "display_name": t["display_name"],
            "name": t["name"],
            "description": "",
            "email": "",
            "type": t["type"],
            "allowed_domains": "",
            "invite_id": "",
            "allow_open_invite": False,
        }

    def channel_json(c: dict) -> dict:
        posts = [p for p in store.data["posts"] if p["channel_id"] == c["id"]]
        return {
            **mm_object(c),
            "team_id": c["team_id"],
            "type": "O",
            "display_name": c["display_name"],
            "name": c["name"],
            "header": "",
            "purpose": "",
            "last_post_at": posts[-1]["create_at"] if posts else 0,
            "total_msg_count": len(posts),
            "creator_id": "",
        }

    class H(Handler):
        def fail(self, status: int, error_id: str, message: str) -> None:
            """Mattermost's error body."""
            self.send(
                status,
                {
                    "id": error_id,
                    "message": message,
                    "detailed_error": "",
                    "request_id": mm_id(),
                    "status_code": status,
                },
            )

        def who(self) -> dict | None:
            token = self.bearer("bearer", "token")
            uid = next((u for s, u in list(sessions.items()) if same(token, s)), None)
            return next((u for u in store.data["users"].values() if u["id"] == uid), None)

        def team_by(self, key: str, value: str) -> dict | None:
            return next((t for t in store.data["teams"].values() if t[key] == value), None)

        def found(self, record: dict | None, as_json: Callable[[dict], dict], error_id: str, message: str) -> None:
            """The record as the API returns it, or Mattermost's 404 with the error's id and message."""
            return self.send(200, as_json(record)) if record else self.fail(404, error_id, message)

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/api/v4/system/ping":
                return self.send(200, {"status": "OK"})
            user = self.who()
            if not user:
                return self.expired()
            with store.lock:
                if path == "/api/v4/users/me":
                    return self.send(200, user_json(user))
                m = re.fullmatch(r"/api/v4/users/username/([^/]+)", path)
                if m:
                    named = store.data["users"].get(m.group(1))
                    return self.found(named, user_json, "app.user.missing_account.const", "Unable to find the user.")
                m = re.fullmatch(r"/api/v4/teams/name/([^/]+)", path)
                if m:
                    team = store.data["teams"].get(m.group(1))
                    return self.found(
                        team, team_json, "app.team.get_by_name.missing.app_error", "Unable to find the existing team."
                    )
                m = re.fullmatch(r"/api/v4/teams/name/([^/]+)/channels/name/([^/]+)", path)
                if m:
                    team = store.data["teams"].get(m.group(1))
                    channel = team and store.data["channels"].get(f"{team['id']}/{m.group(2)}")
                    if not channel:
                        return self.fail(404, "app.channel.get_by_name.missing.app_error", "Channel does not exist.")
                    if user["id"] not in team["members"]:
                        return self.forbidden()
                    return self.send(200, channel_json(channel))
                m = re.fullmatch(r"/api/v4/channels/([a-z0-9]{26})/posts", path)
                if m:
                    channel = next((c for c in store.data["channels"].values() if c["id"] == m.group(1)), None)
                    team = channel and self.team_by("id", channel["team_id"])
                    if not channel or not team or user["id"] not in team["members"]:
                        return self.forbidden()
                    posts = [p for p in store.data["posts"] if p["channel_id"] == channel["id"]]
                    return self.send(
                        200,
                        {
                            "order": [p["id"] for p in reversed(posts)],
                            "posts": {p["id"]: p for p in posts},
                            "next_post_id": "",
                            "prev_post_id": "",
                            "has_next": False,
                        },
                    )
            self.fail(404, "api.context.404.app_error", "Sorry, we could not find the page.")

        def do_POST(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            body = self.json_body()
            with store.lock:
                if self.command == "PUT" and not path.endswith("/password"):
                    return self.fail(405, "api.context.405.app_error", "Method not allowed.")
                if path == "/api/v4/users/login":
                    found = store.data["users"].get(str(body.get("login_id", "")))
                    if not found or not same(digest(str(body.get("password", ""))), found["password_sha256"]):
                        return self.fail(
                            401,
                            "api.user.login.invalid_credentials_email_username",
                            "Enter a valid email or username and/or password.",
                        )
                    session = mm_id()
                    sessions[session] = found["id"]
                    return self.send(200, user_json(found), {"Token": session})
                user = self.who()
                if not user:
                    return self.expired()
                is_admin = "system_admin" in user["roles"].split()
                if path == "/api/v4/users":
                    return self.create_user(body) if is_admin else self.forbidden()
                if path == "/api/v4/teams":
                    return self.create_team(user, body) if is_admin else self.forbidden()
                m = re.fullmatch(r"/api/v4/users/([a-z0-9]{26})/password", path)
                if m and self.command == "PUT":
                    return self.set_password(m.group(1), body) if is_admin else self.forbidden()
                m = re.fullmatch(r"/api/v4/teams/([a-z0-9]{26})/members", path)
                if m:
                    return self.join_team(m.group(1), body) if is_admin else self.forbidden()
                if path == "/api/v4/posts":
                    return self.create_post(user, body)
            self.fail(404, "api.context.404.app_error", "Sorry, we could not find the page.")

        def do_PUT(self) -> None:
            self.do_POST()

        def set_password(self, uid: str, body: dict) -> None:
            found = next((u for u in store.data["users"].values() if u["id"] == uid), None)
            if not found or len(str(body.get("new_password", ""))) < 8:
                return self.fail(400, "api.user.update_password.invalid.app_error", "Unknown user or invalid password.")
            found["password_sha256"] = digest(str(body["new_password"]))
            store.put_user(found)
            self.send(200, {"status": "OK"})

        def expired(self) -> None:
            self.fail(401, "api.context.session_expired.app_error", "Invalid or expired session, please login again.")

        def forbidden(self) -> None:
            self.fail(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")

        def create_user(self, body: dict) -> None:
            name, email, pw = (str(body.get(k, "")) for k in ("username", "email", "password"))
            if not MM_USERNAME_RE.match(name) or "@" not in email or len(pw) < 8:
                return self.fail(
                    400,
                    "model.user.is_valid.username.app_error",
                    "Invalid username (3-22 of a-z 0-9 . - _, a letter first), email or password.",
                )
            if name in store.data["users"]:
                return self.fail(
                    400, "app.user.save.username_exists.app_error", "An account with that username already exists."
                )
            new = {
                "id": mm_id(),
                "username": name,
                "email": email,
                "roles": "system_user",
                "create_at": mm_now(),
                "password_sha256": digest(pw),
            }
            store.put_user(new)
            store.data["users"][name] = new
            self.send(201, user_json(new))

        def create_team(self, user: dict, body: dict) -> None:
            name = str(body.get("name", ""))
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,63}", name) or body.get("type") not in ("O", "I"):
                return self.fail(400, "model.team.is_valid.name.app_error", "Invalid name or type.")
            if name in store.data["teams"]:
                return self.fail(400, "app.team.save.existing.app_error", "A team with that name already exists.")
            team = {
                "id": mm_id(),
                "name": name,
                "display_name": str(body.get("display_name") or name),
                "type": body["type"],
                "create_at": mm_now(),
                "members": [user["id"]],
            }
            channel = {
                "id": mm_id(),
                "team_id": team["id"],
                "name": MM_CHANNEL,
                "display_name": "Town Square",
                "create_at": mm_now(),
            }
            store.put_team(team, channel)
            store.data["teams"][name] = team
            store.data["channels"][f"{team['id']}/{MM_CHANNEL}"] = channel
            self.send(201, team_json(team))

        def join_team(self, team_id: str, body: dict) -> None:
            team = self.team_by("id", team_id)
            uid = str(body.get("user_id", ""))
            known = any(u["id"] == uid for u in store.data["users"].values())
            if not team or body.get("team_id") != team_id or not known:
                return self.fail(400, "api.team.add_user_to_team.missing_parameter.app_error", "Unknown team or user.")
            if uid not in team["members"]:
                if len(team["members"]) >= max_users:
                    return self.fail(
                        400,
                        "app.team.join_user_to_team.max_accounts.app_error",
                        "This team has reached the maximum number of allowed accounts.",
                    )
                store.put_member(team_id, uid)
                team["members"].append(uid)
            self.send(
                201,
                {
                    "team_id": team_id,
                    "user_id": uid,
                    "roles": "team_user",
                    "delete_at": 0,
                    "scheme_user": True,
                    "scheme_admin": False,
                },
            )

        def create_post(self, user: dict, body: dict) -> None:
            channel = next((c for c in store.data["channels"].values() if c["id"] == body.get("channel_id")), None)
            if not channel or not isinstance(body.get("message"), str):
                return self.fail(400, "api.context.invalid_body_param.app_error", "Invalid channel_id or message.")
            team = self.team_by("id", channel["team_id"])
            if not team or user["id"] not in team["members"]:
                return self.forbidden()
            post = mm_post(mm_id(), mm_now(), user["id"], channel["id"], body["message"])
            store.put_post(post)
            store.data["posts"].append(post)
            self.send(201, post)

    serve(H, port, "mattermost (a subset of the v4 API)")


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
            board_id = raw[len("/board/") : -len("/lifecycle")]
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
    # agent id -> the only address its token is handed to (the project's addressing model), or on a swarm the name
    # that resolves to it (the worker's service, looked up when asked); none given: any caller
    callers = json.loads(os.environ.get("SECRET_SERVICE_CALLERS") or "null")

    def addresses(caller: str) -> set[str]:
        """The caller's address, or what its name resolves to within RESOLVE_S (an unknown name on an internal
        network waits for resolvers it cannot reach: nobody may have the token, and nobody waits long)."""
        if not caller:
            return set()
        try:
            return {str(ipaddress.ip_address(caller))}
        except ValueError:
            pass
        found: list[str] = []

        def lookup() -> None:
            try:
                found.extend(socket.gethostbyname_ex(caller)[2])
            except OSError:  # no such name (yet)
                pass

        t = threading.Thread(target=lookup, daemon=True)
        t.start()
        t.join(RESOLVE_S)
        return set(found) if not t.is_alive() else set()

    class H(Handler):
        protocol_version = "HTTP/1.1"  # keep-alive for good requests; rejected ones are closed

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in token service"})
            if not path.startswith("/token/"):
                return self.error(404, "not found", close=True)
            agent = path[len("/token/") :]
            if not AGENT_ID_RE.match(agent):
                return self.error(400, "not a complete agent id", close=True)
            if callers is not None and self.client_address[0] not in addresses(callers.get(agent) or ""):
                return self.error(403, "this token belongs to another agent", close=True)
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
    """The only holder of the model credential: a caller with the proxy credential is forwarded upstream with the
    real one, its request's reasoning effort set to the profile's (REASONING_EFFORT), the answer streamed back as it
    comes."""
    upstream = env("LLM_UPSTREAM").rstrip("/")
    upstream_token, proxy_token = env("LLM_UPSTREAM_TOKEN"), env("WORKER_PROXY_TOKEN")
    effort = os.environ.get("REASONING_EFFORT")

    class H(Handler):
        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in egress proxy"})
            if path == "/v1/models":
                return self.forward("GET", path)
            self.error(404, "not found")

        def do_POST(self) -> None:
            if urllib.parse.urlsplit(self.path).path != "/v1/responses":
                return self.error(404, "only /v1/responses and /v1/models are proxied")
            self.forward("POST", "/v1/responses")

        def forward(self, method: str, path: str) -> None:
            data = self.body() if method == "POST" else None
            if not same(self.bearer("bearer"), proxy_token):
                return self.error(401, "missing or wrong proxy credential")
            headers = {"Authorization": f"Bearer {upstream_token}"}
            if data is not None:
                headers["Content-Type"] = self.headers.get("Content-Type", "application/json")
                if effort:
                    try:
                        body = json.loads(data)
                        body["reasoning"] = {**(body.get("reasoning") or {}), "effort": effort}
                        data = json.dumps(body).encode()
                    except (ValueError, AttributeError):
                        return self.error(400, "the request body is not a JSON object")
            req = urllib.request.Request(f"{upstream}{path}", data=data, method=method, headers=headers)
            try:
                resp = urllib.request.urlopen(req, timeout=600)
            except urllib.error.HTTPError as err:
                log(f"forwarded {method} {path} -> upstream: HTTP {err.code}")
                ctype = err.headers.get("Content-Type") or "application/json"
                return self.send(err.code, err.read(), {"Content-Type": ctype})
            except (urllib.error.URLError, OSError) as err:
                log(f"upstream unreachable: {getattr(err, 'reason', err)}")
                return self.error(502, "model upstream unreachable")
            log(f"forwarded {method} {path} -> upstream: HTTP {resp.status}")
            self.send_response(resp.status)
            self.send_header("X-Agensh-Standin", ROLE)
            self.send_header("Content-Type", resp.headers.get("Content-Type") or "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                while chunk := resp.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError as err:  # the stream was cut upstream, or the caller went away
                log(f"stream ended early: {err}")
            finally:
                resp.close()

    serve(H, int(env("PORT", "8080")), f"egress proxy (upstream {upstream}, credential and effort {effort} injected)")


# --------------------------------------------------------------------------------------------- model
FAULTS = ("hang", "error", "cut")


def role_model() -> None:
    """A scripted Responses-API model (STAND-IN, no inference): streams the next step of the agent's script
    (agent_scripts.py) as the real API's events, with usage. It answers only the credential the egress proxy injects
    (sha256 = EXPECTED_TOKEN_SHA256) and records the reasoning effort each request carries. Faults on demand
    (STANDIN_MODEL_FAULTS at start, or POST /faults): `hang`, `error` (HTTP 503) or `cut` (the stream stops midway)
    for the next request, or `<fault>@<n>` for agent n's next request."""
    import agent_scripts

    expected = env("EXPECTED_TOKEN_SHA256").strip().lower()
    models = [m for m in env("STANDIN_MODELS", "").split(",") if m]  # the ids it lists; none: no /v1/models
    idle_s = int(env("STANDIN_MODEL_IDLE_S", "10"))
    hang_s = float(env("STANDIN_MODEL_HANG_S", "3600"))
    stats: dict = {"ok": 0, "rejected": 0, "responses": 0, "efforts": {}, "faults": []}
    faults = [f for f in env("STANDIN_MODEL_FAULTS", "").split(",") if f]
    lock = threading.Lock()

    def take_fault(agent: str) -> str | None:
        n = agent.rsplit("-", 1)[-1]
        with lock:
            for f in faults:
                kind, _, who = f.partition("@")
                if not who or who == n:
                    faults.remove(f)
                    stats["faults"].append({"fault": kind, "agent": agent, "at": time.time()})
                    return kind
        return None

    class H(Handler):
        def authorized(self) -> bool:
            token = self.bearer("bearer")
            good = token is not None and same(hashlib.sha256(token.encode()).hexdigest(), expected)
            with lock:
                stats["ok" if good else "rejected"] += 1
            if not good:
                self.error(401, "credential does not match EXPECTED_TOKEN_SHA256")
            return good

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in model"})
            if path == "/stats":
                with lock:
                    return self.send(200, dict(stats, standin=True, pending_faults=list(faults)))
            if path == "/v1/models" and models:
                if self.authorized():
                    self.send(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": m, "object": "model", "owned_by": "agensh-standin"} for m in models],
                        },
                    )
                return
            self.error(404, "not found")

        def do_POST(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/faults":
                body = self.json_body()
                if not self.authorized():
                    return
                new = [str(f) for f in body.get("faults") or []]
                if any(f.partition("@")[0] not in FAULTS for f in new):
                    return self.error(400, f"faults are {', '.join(FAULTS)}, each optionally @<agent n>")
                with lock:
                    faults.extend(new)
                return self.send(200, {"pending": list(faults)})
            if path != "/v1/responses":
                return self.error(404, "not found")
            body = self.json_body()
            if not self.authorized():
                return
            agent, item = agent_scripts.next_item(body, idle_s)
            effort = str((body.get("reasoning") or {}).get("effort"))
            with lock:
                stats["responses"] += 1
                stats["efforts"][effort] = stats["efforts"].get(effort, 0) + 1
            fault = take_fault(agent)
            log(
                f"{agent}: {'tool call' if isinstance(item, agent_scripts.Step) else 'message'} (effort {effort})"
                + (f", fault {fault}" if fault else "")
            )
            if fault == "hang":
                time.sleep(hang_s)
                return
            if fault == "error":
                return self.send(503, {"error": {"message": "stand-in model: injected 503", "type": "server_error"}})
            if body.get("stream") is True:
                return self.stream(body, item, cut=fault == "cut")
            out = output_item(item, f"item_{secrets.token_hex(6)}")
            self.send(
                200,
                {
                    "id": f"resp_standin_{secrets.token_hex(6)}",
                    "object": "response",
                    "status": "completed",
                    "model": body.get("model"),
                    "output": [out],
                    "usage": usage(body),
                    "output_text": "" if isinstance(item, agent_scripts.Step) else item,
                },
            )

        def event(self, kind: str, **data) -> None:
            data["type"] = kind
            self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def stream(self, body: dict, item, cut: bool) -> None:
            """The Responses API's streamed events for one output item (a `bash` function call or a message)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("X-Agensh-Standin", ROLE)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            rid, iid = f"resp_standin_{secrets.token_hex(6)}", f"item_{secrets.token_hex(6)}"
            response: dict[str, Any] = {
                "id": rid,
                "object": "response",
                "status": "in_progress",
                "model": body.get("model"),
                "output": [],
            }
            self.event("response.created", response=response)
            out = output_item(item, iid)
            if out["type"] == "function_call":
                args = out["arguments"]
                self.event(
                    "response.output_item.added", output_index=0, item=dict(out, arguments="", status="in_progress")
                )
                half = len(args) // 2
                self.event("response.function_call_arguments.delta", output_index=0, item_id=iid, delta=args[:half])
                if cut:
                    return
                self.event("response.function_call_arguments.delta", output_index=0, item_id=iid, delta=args[half:])
                self.event("response.function_call_arguments.done", output_index=0, item_id=iid, arguments=args)
            else:
                part = out["content"][0]
                self.event(
                    "response.output_item.added", output_index=0, item=dict(out, content=[], status="in_progress")
                )
                self.event(
                    "response.content_part.added",
                    output_index=0,
                    item_id=iid,
                    content_index=0,
                    part=dict(part, text=""),
                )
                self.event("response.output_text.delta", output_index=0, item_id=iid, content_index=0, delta=item)
                if cut:
                    return
                self.event("response.output_text.done", output_index=0, item_id=iid, content_index=0, text=item)
                self.event("response.content_part.done", output_index=0, item_id=iid, content_index=0, part=part)
            self.event("response.output_item.done", output_index=0, item=out)
            response.update(status="completed", output=[out], usage=usage(body))
            self.event("response.completed", response=response)

    def output_item(item, iid: str) -> dict:
        """A Responses output item: the step as a `bash` function call, or the turn's final message."""
        if isinstance(item, agent_scripts.Step):
            return {
                "type": "function_call",
                "id": iid,
                "call_id": f"call_{secrets.token_hex(6)}",
                "name": "bash",
                "arguments": json.dumps({"command": item.command, "description": item.description}),
                "status": "completed",
            }
        return {
            "type": "message",
            "id": iid,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": item, "annotations": []}],
        }

    def usage(body: dict) -> dict:
        """Token counts of the API's shape (input: about 4 characters a token)."""
        tokens_in = len(json.dumps(body.get("input"))) // 4
        return {
            "input_tokens": tokens_in,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens_in + 20,
        }

    serve(
        H,
        int(env("PORT", "8080")),
        f"scripted model (no inference; checks the injected credential; lists {', '.join(models) or 'no models'})",
    )


# --------------------------------------------------------------------------------------------- mini-router
def role_mini_router() -> None:
    class H(Handler):
        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path == "/healthz":
                return self.send(200, {"ok": True, "service": "stand-in mini-router"})
            self.error(404, "not found")

    log(
        f"agent {os.environ.get('AGENT_ID', '?')}, MINI_ROUTER_STUCK_MS={os.environ.get('MINI_ROUTER_STUCK_MS', '?')}; "
        "routes nothing"
    )
    serve(H, int(env("PORT", "8080")), "mini-router (healthz only)")


# --------------------------------------------------------------------------------------------- clients
def call(
    method: str,
    url: str,
    body=None,
    *,
    basic: tuple[str, str] | None = None,
    bearer: str | None = None,
    token: str | None = None,
    ok: tuple[int, ...] = (),
) -> tuple[int, Any, dict]:
    """One JSON request; `basic` auth, a `bearer` (Mattermost) or a Gitea `token`. A status outside 2xx and `ok`
    raises."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    if token:
        headers["Authorization"] = f"token {token}"
    req = urllib.request.Request(
        url, data=None if body is None else json.dumps(body).encode(), method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw, status, hdrs = resp.read(), resp.status, dict(resp.headers)
    except urllib.error.HTTPError as err:
        raw, status, hdrs = err.read(), err.code, dict(err.headers)
        if status not in ok:
            raise RuntimeError(f"{method} {urllib.parse.urlsplit(url).path}: HTTP {status} {raw[:300]!r}") from None
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        data = {}
    return status, data, hdrs


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


RESOLVE_S = 2.0  # the token service: how long a caller's name may take to resolve
USERNAME_MAX = 22  # Mattermost's limit (3-22 characters, a letter first); Gitea allows 40 without `__` or `.-`


def agent_username(agent: str) -> str:
    """The agent's user name at Gitea and Mattermost: `testorg__calculator.abc1234-1` -> `calculator-abc1234-1`.

    An agent id (`<owner>__<repo>.<hex>-<n>`) is no valid user name (Gitea refuses `__`, Mattermost anything over 22
    characters). The name keeps the repository (lowercase letters and digits, runs of anything else as one `-`, cut
    to fit, `a` put in front when it would not start with a letter), the task's first 7 hex digits and n."""
    if not AGENT_ID_RE.match(agent):
        raise RuntimeError(f"not a complete agent id: {agent!r}")
    task, n = agent.rsplit("-", 1)
    repo, commit = task.split("__", 1)[1].rsplit(".", 1)
    tail = f"-{commit[:7]}-{n}"
    head = re.sub(r"[^a-z0-9]+", "-", repo.lower()).strip("-")
    head = head if head[:1].isalpha() else f"a{head}"
    return head[: USERNAME_MAX - len(tail)].rstrip("-") + tail


# --------------------------------------------------------------------------------------------- bootstrap
GITEA_TOKEN_SCOPES = ["write:repository", "write:issue", "read:organization", "read:user"]
AGENTS_TEAM = "agents"  # the Gitea organisation team every agent joins: write access to every team repository


def protect_main(gitea: str, admin: tuple[str, str], repo: str) -> None:
    """Branch protection on `main`: direct pushes refused (only the administrator, who seeds the starting workspace,
    may push), pull requests merge with zero approvals, no status checks (the CI merge gate is off)."""
    rule = {
        "rule_name": "main",
        "enable_push": True,
        "enable_push_whitelist": True,
        "push_whitelist_usernames": [ADMIN_USER],
        "required_approvals": 0,
        "enable_status_check": False,
        "enable_merge_whitelist": False,
        "block_on_rejected_reviews": False,
        "block_on_outdated_branch": False,
        "dismiss_stale_approvals": False,
        "enable_force_push": False,
    }
    _, rules, _ = call("GET", f"{gitea}/api/v1/repos/{repo}/branch_protections", basic=admin)
    if any(r.get("rule_name") == "main" for r in rules):
        call("PATCH", f"{gitea}/api/v1/repos/{repo}/branch_protections/main", rule, basic=admin)
    else:
        call("POST", f"{gitea}/api/v1/repos/{repo}/branch_protections", rule, basic=admin)


def gitea_team(gitea: str, admin: tuple[str, str], repos: list[str]) -> int:
    """The organisation, its `agents` team (write) and each task repository with `main` protected; returns the
    team's id."""
    orgs = {r.split("/")[0] for r in repos}
    if len(orgs) != 1:
        raise RuntimeError(f"TEAM_REPOS must all be in one organisation, got {sorted(orgs)}")
    org = orgs.pop()
    call("POST", f"{gitea}/api/v1/orgs", {"username": org, "visibility": "private"}, basic=admin, ok=(422,))
    _, teams, _ = call("GET", f"{gitea}/api/v1/orgs/{org}/teams", basic=admin)
    team = next((t for t in teams if t.get("name") == AGENTS_TEAM), None)
    if team is None:
        _, team, _ = call(
            "POST",
            f"{gitea}/api/v1/orgs/{org}/teams",
            {
                "name": AGENTS_TEAM,
                "permission": "write",
                "includes_all_repositories": True,
                "units_map": {"repo.code": "write", "repo.pulls": "write", "repo.issues": "write"},
            },
            basic=admin,
        )
    for repo in repos:
        status, _, _ = call(
            "POST",
            f"{gitea}/api/v1/orgs/{org}/repos",
            {"name": repo.split("/", 1)[1], "default_branch": "main", "auto_init": False, "private": True},
            basic=admin,
            ok=(409,),
        )
        protect_main(gitea, admin, repo)
        log(f"gitea: {repo} {'created' if status == 201 else 'exists'}, main protected")
    return int(team["id"])


def gitea_user(gitea: str, admin: tuple[str, str], name: str, agent: str, team: int, token_file: Path) -> str:
    """The agent's Gitea user in the agents team, and its access token (kept while it still works)."""
    status, _, _ = call(
        "POST",
        f"{gitea}/api/v1/admin/users",
        {
            "username": name,
            "email": f"{name}@agensh.local",
            "full_name": agent,
            "password": secrets.token_urlsafe(24),
            "must_change_password": False,
            "visibility": "private",
        },
        basic=admin,
        ok=(422,),
    )
    call("PUT", f"{gitea}/api/v1/teams/{team}/members/{name}", basic=admin)
    kept = token_file.read_text().strip() if token_file.is_file() else ""
    if kept and call("GET", f"{gitea}/api/v1/user", token=kept, ok=(401, 403))[1].get("login") == name:
        return "kept"
    _, made, _ = call(
        "POST",
        f"{gitea}/api/v1/users/{name}/tokens",
        {"name": f"agensh-{int(time.time())}-{secrets.token_hex(3)}", "scopes": GITEA_TOKEN_SCOPES},
        basic=admin,
    )
    tmp = token_file.with_name(f".{token_file.name}.tmp")
    tmp.write_text(made["sha1"] + "\n")
    os.chmod(tmp, 0o644)  # read by the token service, which runs as another user
    tmp.replace(token_file)
    return "issued" if status == 201 else "reissued"


def mattermost_team(mm: str, password: str) -> tuple[str, str]:
    """Log the administrator in (the session comes in the `Token` header) and make sure the team exists."""
    _, _, hdrs = call("POST", f"{mm}/api/v4/users/login", {"login_id": ADMIN_USER, "password": password})
    session = next(v for k, v in hdrs.items() if k.lower() == "token")
    status, team, _ = call("GET", f"{mm}/api/v4/teams/name/{MM_TEAM}", bearer=session, ok=(404,))
    if status == 404:
        _, team, _ = call(
            "POST", f"{mm}/api/v4/teams", {"name": MM_TEAM, "display_name": MM_TEAM, "type": "O"}, bearer=session
        )
    return session, team["id"]


def mattermost_user(mm: str, session: str, team_id: str, name: str, token: str) -> int:
    """The agent's Mattermost user in the team; its password is its (current) token."""
    status, user, _ = call(
        "POST",
        f"{mm}/api/v4/users",
        {"username": name, "email": f"{name}@agensh.local", "password": token},
        bearer=session,
        ok=(400,),
    )
    if status == 400:
        _, user, _ = call("GET", f"{mm}/api/v4/users/username/{name}", bearer=session)
        call("PUT", f"{mm}/api/v4/users/{user['id']}/password", {"new_password": token}, bearer=session)
    call("POST", f"{mm}/api/v4/teams/{team_id}/members", {"team_id": team_id, "user_id": user["id"]}, bearer=session)
    return status


def role_bootstrap() -> None:
    gitea, mm = env("GITEA_URL").rstrip("/"), env("MATTERMOST_URL").rstrip("/")
    workers, tasks, repos = int(env("WORKERS")), env("TASKS").split(), env("TEAM_REPOS").split()
    tokens = Path(env("TOKENS_DIR", "/tokens"))
    admin, mpw = (ADMIN_USER, env("GITEA_ADMIN_PASSWORD")), env("MATTERMOST_ADMIN_PASSWORD")
    agents = [f"{task}-{n}" for task in tasks for n in range(1, workers + 1)]
    names = {agent: agent_username(agent) for agent in agents}
    if len(set(names.values())) != len(agents):
        raise RuntimeError(f"two agents would share a user name: {names}")
    log(f"registering {workers} worker(s) for {len(tasks)} task(s) at Gitea {gitea} and the Mattermost stand-in")
    wait_for(f"{gitea}/api/healthz", 300)
    wait_for(f"{mm}/api/v4/system/ping", 180)
    team = gitea_team(gitea, admin, repos)
    session, mm_team = mattermost_team(mm, mpw)
    tokens.mkdir(parents=True, exist_ok=True)
    for agent, name in names.items():
        token_file = tokens / f"{agent}.token"
        how = gitea_user(gitea, admin, name, agent, team, token_file)
        m = mattermost_user(mm, session, mm_team, name, token_file.read_text().strip())
        log(f"{agent}: user {name}, gitea token {how}, mattermost {'created' if m == 201 else 'exists'}")
    log("done")


ROLES = {
    "mattermost": role_mattermost,
    "board": role_board,
    "secret-service": role_secret_service,
    "egress-proxy": role_egress_proxy,
    "model": role_model,
    "mini-router": role_mini_router,
    "bootstrap": role_bootstrap,
}


def main(argv: list[str]) -> None:
    global ROLE
    if len(argv) > 1 and argv[1] in ROLES:
        ROLE = argv[1]
    else:
        ROLE = os.environ.get("STANDIN") or socket.gethostname()
    if ROLE not in ROLES:
        print(
            f"[stand-in] unknown role {ROLE!r}; give one of {', '.join(sorted(ROLES))} "
            "as argv[1], env STANDIN or the hostname",
            file=sys.stderr,
        )
        sys.exit(2)
    try:
        ROLES[ROLE]()
    except RuntimeError as err:
        log(f"FAILED: {err}")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
