"""Small JSON-over-HTTP client for the step programs (standard library only), with patient retries because
services may still be starting."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from typing import Any


class HTTPFailure(Exception):
    def __init__(self, status: int, body: str, url: str):
        super().__init__(f"{url}: HTTP {status} {body[:300]}")
        self.status, self.body = status, body


def request(
    method: str,
    url: str,
    body: Any = None,
    *,
    auth: tuple[str, str] | None = None,
    token: str | None = None,
    attempts: int = 30,
    pause: float = 2.0,
    ok: tuple[int, ...] = (),
    timeout: float = 30,
) -> tuple[int, Any, dict[str, str]]:
    """Send a JSON request; statuses in `ok` count as success besides 2xx. Connection errors and answers that take
    longer than `timeout` are retried."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    last: Exception | None = None
    for _ in range(attempts):
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read().decode()
                return resp.status, json.loads(raw) if raw.strip() else None, dict(resp.headers)
        except urllib.error.HTTPError as err:
            raw = err.read().decode(errors="replace")
            if err.code in ok:
                try:
                    parsed = json.loads(raw) if raw.strip() else None
                except json.JSONDecodeError:
                    parsed = raw
                return err.code, parsed, dict(err.headers)
            if err.code < 500:
                raise HTTPFailure(err.code, raw, url) from None
            last = HTTPFailure(err.code, raw, url)
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            last = err
        time.sleep(pause)
    raise HTTPFailure(0, str(last), url)
