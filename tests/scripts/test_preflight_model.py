"""The `model` phase of preflight against a small STAND-IN gateway behind a stand-in proxy (an HTTP server in the test
process on 127.0.0.1: it answers `/v1/models` as each case says and `/v1/responses` with a reply). A model the gateway
lists passes; one it does not list fails naming the ids on offer and the fix; a gateway without a model list is a
warning in the receipt and the launch goes on; the live request is made in every case."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scripts import preflight
from scripts.lib.checks import LISTED

TOKEN = "proxy-credential-of-the-workers"


class Gateway:
    """What /v1/models answers: (status, body bytes, content type). Records each request's path and credential."""

    def __init__(self) -> None:
        self.models: tuple[int, bytes, str] = (404, b"", "text/plain")
        self.seen: list[tuple[str, str]] = []
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def answer(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                gateway.seen.append((self.path, self.headers.get("Authorization", "")))
                self.answer(*(gateway.models if self.path == "/v1/models" else (404, b"", "text/plain")))

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                gateway.seen.append((self.path, self.headers.get("Authorization", "")))
                self.answer(200, b'{"output_text": "stand-in reply"}', "application/json")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def gateway():
    g = Gateway()
    yield g
    g.server.shutdown()


def listing(*ids: str) -> tuple[int, bytes, str]:
    return (
        200,
        json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode(),
        "application/json",
    )


def run(tmp_path: Path, gateway: Gateway, model: str = "gpt-5.6-sol") -> tuple[int, dict]:
    inputs = {"run_dir": str(tmp_path), "model": model, "effort": "high", "proxy_url": gateway.url}
    rc = preflight.main(["model"], {"AGENSH_INPUT": json.dumps(inputs), "AGENSH_PROXY_TOKEN": TOKEN})
    receipt = json.loads((tmp_path / "receipts" / "preflight-model.json").read_text())
    return rc, (receipt["result"] or receipt["details"])["checks"]


def test_a_listed_model_passes_and_the_live_request_is_made(tmp_path: Path, gateway: Gateway):
    gateway.models = listing("gpt-5.6", "gpt-5.6-sol")
    rc, checks = run(tmp_path, gateway)
    assert rc == 0
    assert checks["model-list"] == {
        "ok": True,
        "warning": False,
        "detail": "gpt-5.6-sol is one of the 2 models the gateway lists",
    }
    assert checks["model"]["ok"] and "HTTP 200" in checks["model"]["detail"]
    assert gateway.seen == [("/v1/models", f"Bearer {TOKEN}"), ("/v1/responses", f"Bearer {TOKEN}")]


def test_a_model_the_gateway_does_not_list_fails_with_the_ids_and_the_fix(tmp_path: Path, gateway: Gateway):
    gateway.models = listing("gpt-5.6-sol", "o4-mini")
    rc, checks = run(tmp_path, gateway, model="openai/gpt-5.6-sol")
    assert rc == 1 and not checks["model-list"]["ok"]
    detail = checks["model-list"]["detail"]
    assert "model openai/gpt-5.6-sol is not offered by the gateway, which lists: gpt-5.6-sol, o4-mini" in detail
    assert "Set agensh:model to one of them (did you mean gpt-5.6-sol?)" in detail
    assert checks["model"]["ok"]  # the live request is still made, and reported beside it


def test_the_console_shows_the_whole_fix_and_a_long_list_is_shortened(tmp_path: Path, gateway: Gateway, capsys):
    ids = [f"model-{i:03d}" for i in range(200)] + ["gpt-5.6-sol"]
    gateway.models = listing(*ids)
    rc, checks = run(tmp_path, gateway, model="openai/gpt-5.6-sol")
    detail = checks["model-list"]["detail"]
    assert rc == 1 and f"and {len(ids) - LISTED} more." in detail and "model-150" not in detail
    assert "(did you mean gpt-5.6-sol?)" in detail  # the close match is named even when the list is cut
    console = capsys.readouterr().err
    assert f"preflight: model-list failed: {detail}" in console


@pytest.mark.parametrize(
    "answer,why",
    [
        ((404, b"not found", "text/plain"), "HTTP 404)"),
        ((501, b"", "text/plain"), "HTTP 501)"),
        ((200, b"<html>gateway</html>", "text/html"), "did not answer JSON"),
        ((200, b'{"models": "all of them"}', "application/json"), "HTTP 200, not a list of models"),
    ],
)
def test_a_gateway_without_a_model_list_is_a_warning(tmp_path: Path, gateway: Gateway, answer, why):
    gateway.models = answer
    rc, checks = run(tmp_path, gateway)
    assert rc == 0
    assert checks["model-list"]["ok"] and checks["model-list"]["warning"], checks
    assert why in checks["model-list"]["detail"] and "gpt-5.6-sol was not checked" in checks["model-list"]["detail"]
    assert checks["model"]["ok"]


def test_a_refused_credential_fails(tmp_path: Path, gateway: Gateway):
    gateway.models = (401, b'{"error": "bad credential"}', "application/json")
    rc, checks = run(tmp_path, gateway)
    assert rc == 1 and not checks["model-list"]["ok"] and "HTTP 401" in checks["model-list"]["detail"]
