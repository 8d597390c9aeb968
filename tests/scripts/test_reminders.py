"""reminders against a stand-in Mattermost served in-process: due reminders posted, passed ones skipped."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scripts import reminders
from scripts.records import write_atomic


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


def test_due_reminders_posted_and_passed_ones_skipped(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mattermost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        deadline = time.time() + 60 + 3  # one minute-and-a-bit left: the 1-minute reminder is 3 s away
        write_atomic(tmp_path / "t" / "receipts" / "kickoff.json", {"status": "ok", "deadline_epoch": deadline})
        args = {"run_dir": str(tmp_path), "task_id": "t", "mattermost_url": f"http://127.0.0.1:{server.server_port}",
                "mattermost_user": "pbench-admin", "minutes": [30, 1, 10]}
        assert reminders.main({"AGENSH_INPUT": json.dumps(args), "AGENSH_MATTERMOST_PASSWORD": "pw"}) == 0
        receipt = json.loads((tmp_path / "t" / "receipts" / "reminders.json").read_text())
        assert receipt["posted"] == [1] and receipt["skipped"] == [30, 10]
        assert Mattermost.posts == [Mattermost.posts[0]] and "1 minutes left for t" in Mattermost.posts[0]
    finally:
        server.shutdown()
