"""reminders against a stand-in Mattermost served in-process: due reminders posted, passed ones skipped."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scripts import reminders
from tests.scripts.conftest import kicked_off


class Mattermost(BaseHTTPRequestHandler):
    posts: list[str] = []

    def log_message(self, *args) -> None:
        pass

    def reply(self, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/users/login"):
            self.reply({}, {"Token": "session"})
        else:
            Mattermost.posts.append(body["message"])
            self.reply({"id": "p"})

    def do_GET(self) -> None:  # noqa: N802
        self.reply({"id": "channel"})


def test_due_reminders_posted_and_passed_ones_skipped(tmp_path: Path, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mattermost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    clock = 1_000_000.0
    waited: list[float] = []
    monkeypatch.setattr(reminders.time, "time", lambda: clock)  # two minutes before the deadline, frozen
    monkeypatch.setattr(reminders, "wait_until", lambda t, what: waited.append(t))
    try:
        deadline = clock + 120
        kicked_off(tmp_path, "t", deadline)
        args = {
            "run_dir": str(tmp_path),
            "task_id": "t",
            "mattermost_url": f"http://127.0.0.1:{server.server_port}",
            "mattermost_user": "pbench-admin",
            "minutes": [30, 1, 10],
        }
        assert reminders.main([], {"AGENSH_INPUT": json.dumps(args), "AGENSH_MATTERMOST_PASSWORD": "pw"}) == 0
        receipt = json.loads((tmp_path / "t" / "receipts" / "reminders.json").read_text())["result"]
        assert receipt["posted"] == [1] and receipt["skipped"] == [30, 10]
        assert waited == [deadline - 60]  # it waited for the one reminder still ahead
        assert Mattermost.posts == [Mattermost.posts[0]] and "1 minutes left for t" in Mattermost.posts[0]
    finally:
        server.shutdown()
