#!/usr/bin/env python3
"""TEST CHECKOUT cc-log mini-router (tests only): answers its health check and holds the ACP silence watchdog. Its
worker's driver posts how long the Copilot CLI has been silent during a prompt; the router answers whether that is
stuck by MINI_ROUTER_STUCK_MS, and logs each time it is. Routes nothing else. Standard library only."""

from __future__ import annotations

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STUCK_MS = int(os.environ["MINI_ROUTER_STUCK_MS"])
MAX_BODY = 4096


def log(text: str) -> None:
    print(f"[test checkout cc-log] mini-router: {text}", flush=True)


class Handler(BaseHTTPRequestHandler):
    def answer(self, code: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self.answer(200, {"ok": True})
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != "/acp/silence" or not 0 < length <= MAX_BODY:
            return self.answer(404 if self.path != "/acp/silence" else 400, {"error": "no"})
        try:
            asked = json.loads(self.rfile.read(length))
            silent_ms = int(asked["silent_ms"])
        except (ValueError, KeyError, TypeError):
            return self.answer(400, {"error": "expected {agent, silent_ms}"})
        stuck = silent_ms >= STUCK_MS
        if stuck:
            log(f"watchdog: {str(asked.get('agent'))[:80]} silent {silent_ms} ms >= {STUCK_MS} ms: cancel its prompt")
        self.answer(200, {"stuck": stuck, "stuck_ms": STUCK_MS})

    def log_message(self, *args: object) -> None:  # the health checks would fill the log
        pass


if __name__ == "__main__":
    log(f"ACP silence watchdog MINI_ROUTER_STUCK_MS={STUCK_MS}")
    ThreadingHTTPServer(("0.0.0.0", int(os.environ.get("PORT", "8080"))), Handler).serve_forever()
