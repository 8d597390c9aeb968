#!/usr/bin/env python3
"""ACP driver of one worker (agensh offline demo checkout): runs the real GitHub Copilot CLI as a native ACP session
(`copilot --acp`, JSON-RPC over its stdin and stdout) and keeps it working until the worker is stopped.

- Team worker (BASELINE=0): waits for the kickoff in the team chat, then prompts the session with every chat post
  meant for it (the kickoff, deadline reminders, idle nudges: posts of the administrator, or that mention it), and
  after each completed turn with nothing waiting, prompts it to continue.
- Baseline (BASELINE=1): the kickoff prompt from the checkout's prompts at once, then it resumes immediately after
  every completed turn.
- Silence watchdog (ACP_SILENCE_MS: the team's MINI_ROUTER_STUCK_MS, the baseline's 600 s): a prompt during which the
  CLI says nothing for that long is cancelled (`session/cancel`; the CLI restarted and the session loaded again when
  it does not answer) and sent again; the event is recorded.
- Activity: every prompt, tool call, message and turn, with its time, goes to `$HOME/.agensh/activity.jsonl` (the
  native activity log, archived with HOME) and as one `activity {...}` line to stdout (Docker's log, which the idle
  watchdog, `status` and the shutdown step read); `$HOME/.agensh/status.json` holds the session's state, including
  the CLI's own `agentInfo.version`.
- SIGTERM: the session is cancelled and the CLI stopped, then HOME (the CLI's session state, config and logs) and the
  workspace (Git and ignored files included) are sealed into `$ARCHIVE_DIR/state.tar.gz`, verified and checksummed.

The CLI reaches only the egress proxy (COPILOT_PROVIDER_BASE_URL), with the worker's proxy credential, which this
driver hands it as COPILOT_PROVIDER_BEARER_TOKEN. Standard library only: it runs in the task's cleanroom image.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from string import Template
from typing import Any, Callable

from standin import agent_username  # the Gitea and Mattermost user name of an agent id (beside this file)

ADMIN = "pbench-admin"
CONTINUE = (
    "Continue with the task: read the team chat and the board, review open pull requests and keep working "
    "until the deadline. Commit and merge finished work."
)
CANCEL_GRACE_S = 30.0
UNPACKED_CLI = ".cache/copilot/pkg"  # the CLI's own files, unpacked into the image's HOME at build time


def now_iso(epoch: float | None = None) -> str:
    at = datetime.fromtimestamp(epoch or time.time(), timezone.utc)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Lost(RuntimeError):
    """The CLI's process ended or stopped answering."""


class Acp:
    """A JSON-RPC connection to `copilot --acp`: requests with their replies, the agent's notifications and
    requests handed to callbacks; `last_heard` is when the CLI last said anything."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        stderr: Path,
        on_update: Callable[[dict], None],
        on_request: Callable[[dict], dict],
    ):
        self.on_update, self.on_request = on_update, on_request
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr.open("ab"), env=env, bufsize=0
        )
        self.lock = threading.Lock()
        self.pending: dict[int, queue.Queue] = {}
        self.next_id = 0
        self.last_heard = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.last_heard = time.monotonic()
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "method" in msg and "id" in msg:
                self._write({"jsonrpc": "2.0", "id": msg["id"], **self.on_request(msg)})
            elif "method" in msg:
                self.on_update(msg.get("params") or {})
            elif msg.get("id") in self.pending:
                self.pending.pop(msg["id"]).put(msg)
        for q in list(self.pending.values()):  # the CLI is gone: nobody will answer
            q.put({"error": {"code": -1, "message": "the Copilot CLI exited"}})

    def _write(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            try:
                self.proc.stdin.write((json.dumps(msg) + "\n").encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as err:
                raise Lost(f"the Copilot CLI stopped reading: {err}") from None

    def send(self, method: str, params: dict) -> queue.Queue:
        with self.lock:
            self.next_id += 1
            i = self.next_id
        q: queue.Queue = queue.Queue()
        self.pending[i] = q
        self._write({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return q

    def call(self, method: str, params: dict, timeout: float = 120) -> dict:
        try:
            msg = self.send(method, params).get(timeout=timeout)
        except queue.Empty:
            raise Lost(f"no answer to {method} within {timeout:.0f} s") from None
        if "error" in msg:
            raise Lost(f"{method}: {msg['error'].get('message')}")
        return msg.get("result") or {}

    def notify(self, method: str, params: dict) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Chat:
    """The team chat as this agent sees it: the posts meant for it, oldest first, each once."""

    def __init__(self, url: str, username: str, agent: str, password: str):
        self.api, self.username, self.agent, self.password = url.rstrip("/") + "/api/v4", username, agent, password
        self.session = self.channel = self.admin_id = self.my_id = ""
        self.seen: set[str] = set()
        self.since = 0

    def call(self, method: str, path: str, body: Any = None) -> tuple[Any, dict]:
        req = urllib.request.Request(
            self.api + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.session}"} if self.session else {}),
            },
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null"), dict(resp.headers)

    def connect(self) -> None:
        self.session = ""
        _, headers = self.call("POST", "/users/login", {"login_id": self.username, "password": self.password})
        self.session = headers.get("Token", "")
        self.my_id = self.call("GET", "/users/me")[0]["id"]
        self.admin_id = self.call("GET", f"/users/username/{ADMIN}")[0]["id"]
        self.channel = self.call("GET", "/teams/name/pbench/channels/name/town-square")[0]["id"]

    def new_posts(self) -> list[str]:
        if not self.channel:
            self.connect()
        page = self.call("GET", f"/channels/{self.channel}/posts")[0]
        posts = sorted(page.get("posts", {}).values(), key=lambda p: p.get("create_at", 0))
        out = []
        for post in posts:
            if post["id"] in self.seen or post.get("user_id") == self.my_id:
                continue
            self.seen.add(post["id"])
            text = str(post.get("message", ""))
            mentions = "@" in text
            if (
                (post.get("user_id") == self.admin_id and not mentions)
                or f"@{self.agent}" in text
                or f"@{self.username}" in text
            ):
                out.append(text)
        return out


class Driver:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.agent = env["AGENT_ID"]
        self.username = agent_username(self.agent)
        self.baseline = env.get("BASELINE") == "1"
        self.home = Path(env.get("HOME") or "/home/agent")
        self.ws = Path(env.get("WORKSPACE", "/workspace"))
        self.archive = Path(env.get("ARCHIVE_DIR", "/archive"))
        self.silence_s = int(env.get("ACP_SILENCE_MS", "1200000")) / 1000
        self.poll_s = float(env.get("ACP_CHAT_POLL_S", "3"))
        self.state = self.home / ".agensh"
        self.state.mkdir(parents=True, exist_ok=True)
        self.inbox: queue.Queue[tuple[str, str]] = queue.Queue()
        self.acp: Acp | None = None
        self.session_id = ""
        self.status: dict[str, Any] = {
            "agent": self.agent,
            "state": "starting",
            "copilot_version": None,
            "pinned_version": env.get("COPILOT_VERSION"),
            "session_id": None,
            "turns": 0,
            "tool_calls": 0,
            "prompts": 0,
            "watchdog_recoveries": 0,
            "errors": 0,
            "started_at": now_iso(),
        }
        self.message: list[str] = []
        self.stopping = False

    # --- records ------------------------------------------------------------------------------------------
    def record(self, kind: str, **fields: Any) -> None:
        """One event of the session's activity: the native log and a line of the container's log."""
        event = {"at": now_iso(), "agent": self.agent, "kind": kind, **fields}
        line = json.dumps(event, sort_keys=True)
        with (self.state / "activity.jsonl").open("a") as f:
            f.write(line + "\n")
        print(f"activity {line}", flush=True)

    def save_status(self, **fields: Any) -> None:
        self.status.update(fields, updated_at=now_iso())
        tmp = self.state / "status.json.part"
        tmp.write_text(json.dumps(self.status, indent=1, sort_keys=True) + "\n")
        tmp.replace(self.state / "status.json")

    # --- the CLI ------------------------------------------------------------------------------------------
    def on_update(self, params: dict) -> None:
        update = params.get("update") or {}
        what = update.get("sessionUpdate")
        if what == "tool_call":
            self.status["tool_calls"] += 1
            raw = update.get("rawInput") or {}
            self.record(
                "tool_call",
                id=update.get("toolCallId"),
                title=update.get("title"),
                tool_kind=update.get("kind"),
                command=str(raw.get("command", raw.get("path", "")))[:400],
            )
        elif what == "tool_call_update" and update.get("status") in ("completed", "failed"):
            out = update.get("rawOutput") or {}
            self.record(
                "tool_result",
                id=update.get("toolCallId"),
                status=update.get("status"),
                output=str(out.get("content", ""))[-400:],
            )
        elif what == "agent_message_chunk":
            self.message.append(str((update.get("content") or {}).get("text", "")))

    def on_request(self, msg: dict) -> dict:
        """The CLI asks the client: permissions are granted (the profile runs it with every tool allowed); the client
        offers no file system or terminal of its own."""
        if msg.get("method") == "session/request_permission":
            params = msg.get("params") or {}
            allow = next((o for o in params.get("options") or [] if str(o.get("kind", "")).startswith("allow")), None)
            self.record("permission", granted=bool(allow), title=(params.get("toolCall") or {}).get("title"))
            outcome = {"outcome": "selected", "optionId": allow["optionId"]} if allow else {"outcome": "cancelled"}
            return {"result": {"outcome": outcome}}
        return {"error": {"code": -32601, "message": f"method not found: {msg.get('method')}"}}

    def start_cli(self, load: str = "") -> None:
        env = {k: v for k, v in self.env.items() if k != "LLM_PROXY_TOKEN"}
        env["COPILOT_PROVIDER_BEARER_TOKEN"] = self.env.get("LLM_PROXY_TOKEN", "")
        self.acp = Acp(
            ["copilot", "--acp", "--allow-all-tools", "--allow-all-paths", "--no-auto-update"],
            env,
            self.state / "copilot.stderr.log",
            self.on_update,
            self.on_request,
        )
        info = self.acp.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            },
        )
        version = (info.get("agentInfo") or {}).get("version")
        if load:
            self.acp.call("session/load", {"sessionId": load, "cwd": str(self.ws), "mcpServers": []})
            self.session_id = load
        else:
            self.session_id = self.acp.call("session/new", {"cwd": str(self.ws), "mcpServers": []})["sessionId"]
        self.record("session", session_id=self.session_id, copilot_version=version, loaded=bool(load))
        self.save_status(state="ready", copilot_version=version, session_id=self.session_id)

    def restart_cli(self) -> None:
        assert self.acp is not None
        self.acp.stop()
        try:
            self.start_cli(load=self.session_id)
        except Lost as err:
            self.record("session_lost", reason=str(err))
            self.start_cli()

    def prompt(self, text: str, why: str) -> None:
        """One turn; a silent CLI is cancelled (or restarted) and the prompt sent again, an error retried. (SIGTERM
        ends the process from its handler, wherever this is.)"""
        backoff = 5.0
        while True:
            assert self.acp is not None
            self.status["prompts"] += 1
            self.record("prompt", why=why, text=text[:400])
            self.message = []
            q = self.acp.send(
                "session/prompt", {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
            )
            reply = self.wait(q)
            if reply is None:  # the watchdog fired: cancelled or restarted, now the same prompt again
                continue
            if "error" in reply:
                self.status["errors"] += 1
                self.record("prompt_error", error=str(reply["error"].get("message"))[:400], retry_in_s=backoff)
                self.save_status(state="error")
                if self.acp.proc.poll() is not None:
                    self.restart_cli()
                time.sleep(backoff)
                backoff = min(backoff * 2, 120.0)
                continue
            result = reply.get("result") or {}
            self.status["turns"] += 1
            self.record("message", text="".join(self.message)[-800:])
            self.record("turn_end", stop_reason=result.get("stopReason"), usage=result.get("usage"))
            self.save_status(state="working")
            return

    def stuck(self, silent: float) -> bool:
        """The silence watchdog: this driver holds it (ACP_SILENCE_MS); a checkout whose router holds it asks there."""
        return silent >= self.silence_s

    def wait(self, q: queue.Queue) -> dict | None:
        assert self.acp is not None
        while True:
            try:
                return q.get(timeout=1)
            except queue.Empty:
                pass
            silent = time.monotonic() - self.acp.last_heard
            if not self.stuck(silent):
                continue
            self.status["watchdog_recoveries"] += 1
            self.record("watchdog", silent_s=round(silent), action="session/cancel")
            self.acp.notify("session/cancel", {"sessionId": self.session_id})
            try:
                q.get(timeout=CANCEL_GRACE_S)
            except queue.Empty:
                self.record("cli_restart", silent_s=round(time.monotonic() - self.acp.last_heard))
                self.restart_cli()
            self.save_status(state="recovered")
            return None

    # --- prompts ------------------------------------------------------------------------------------------
    def token(self) -> str:
        url = self.env["TOKEN_SERVICE_URL"].rstrip("/") + f"/token/{self.agent}"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=30) as resp:
                    return json.loads(resp.read())["token"]
            except (OSError, ValueError, KeyError) as err:
                print(f"acp-driver: waiting for the token service: {err}", flush=True)
                time.sleep(3)

    def watch_chat(self) -> None:
        chat = Chat(self.env["MATTERMOST_URL"], self.username, self.agent, self.token())
        while not self.stopping:
            try:
                for text in chat.new_posts():
                    self.inbox.put(("chat", text))
            except (OSError, ValueError, KeyError, urllib.error.URLError) as err:
                print(f"acp-driver: chat unreachable: {err}", flush=True)
                chat.channel = ""
            time.sleep(self.poll_s)

    def kickoff_prompt(self) -> str:
        deadline = time.time() + float(self.env.get("PBENCH_DEADLINE_SECONDS", "21600"))
        text = (Path(self.env.get("PROMPTS_DIR", "/opt/agensh/prompts")) / "kickoff.md").read_text()
        return Template(text).safe_substitute(task_id=self.env.get("TASK_ID", ""), deadline=now_iso(deadline))

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self.shutdown)
        print(
            f"acp-driver: {self.agent} (uid {os.getuid()}), {'baseline' if self.baseline else 'team'} worker; "
            f"silence watchdog {self.silence_s:.0f} s",
            flush=True,
        )
        self.start_cli()
        who = f"You are agent {self.agent} (user {self.username} in Gitea and in the team chat).\n\n"
        if self.baseline:
            self.inbox.put(("kickoff", self.kickoff_prompt()))
        else:
            threading.Thread(target=self.watch_chat, daemon=True).start()
        why, text = self.inbox.get()  # team: the kickoff post
        self.prompt(who + text, why)
        while True:
            try:
                why, text = self.inbox.get(timeout=0 if self.baseline else 1)
            except queue.Empty:
                why, text = "continue", CONTINUE
            self.prompt(text, why)

    # --- stop ---------------------------------------------------------------------------------------------
    def shutdown(self, *_args: Any) -> None:
        """SIGTERM: cancel the turn, stop the CLI, seal HOME and the workspace, exit 0 (1 if the archive failed)."""
        if self.stopping:
            return
        self.stopping = True
        t0 = time.monotonic()
        if self.acp is not None:
            try:
                self.acp.notify("session/cancel", {"sessionId": self.session_id})
            except Lost:
                pass
            self.acp.stop()
        self.record("stopped", turns=self.status["turns"], tool_calls=self.status["tool_calls"])
        self.save_status(state="stopped")
        os._exit(0 if seal(self.archive, [self.home, self.ws], t0) else 1)


def seal(archive: Path, paths: list[Path], t0: float) -> bool:
    """HOME (but the CLI's unpacked program) and the workspace (Git and ignored files included) into
    archive/state.tar.gz, listed back, checksummed."""
    part, final = archive / "state.tar.gz.part", archive / "state.tar.gz"
    members = [str(p.relative_to("/")) for p in paths if p.exists()]
    try:
        with tarfile.open(part, "w:gz") as tar:
            for m in members:
                tar.add(f"/{m}", arcname=m, filter=lambda t: None if UNPACKED_CLI in t.name else t)
        with tarfile.open(part) as tar:
            entries = len(tar.getnames())
    except (OSError, tarfile.TarError) as err:
        print(f"acp-driver: SIGTERM: archive FAILED: {err}", flush=True)
        return False
    part.replace(final)
    digest = hashlib.sha256(final.read_bytes()).hexdigest()
    (archive / "state.sha256").write_text(f"{digest}  state.tar.gz\n")
    print(
        f"acp-driver: SIGTERM: sealed {', '.join('/' + m for m in members)} into {final} ({entries} entries, "
        f"verified, sha256 {digest[:12]}) in {time.monotonic() - t0:.1f} s",
        flush=True,
    )
    return True


if __name__ == "__main__":
    Driver(dict(os.environ)).run()
