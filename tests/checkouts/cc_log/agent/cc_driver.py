#!/usr/bin/env python3
"""TEST CHECKOUT cc-log (tests only): the demo's ACP driver (acp_driver.py, beside this file in the image) with the
two things this checkout does differently: its session's events go to a cc.log file in HOME, in its own shape, and
the silence watchdog is its router's (the baseline, which has no router, keeps the driver's own)."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from typing import Any

from acp_driver import Driver, now_iso  # the demo's driver, installed beside this file

TYPES = {  # the demo driver's kinds, as this checkout names them
    "session": "session_start",
    "prompt": "user_prompt",
    "turn_end": "turn_complete",
    "tool_call": "tool_use",
    "prompt_error": "error",
}
ASK_EVERY_S = 5.0


class CcDriver(Driver):
    def __init__(self, env: dict[str, str]):
        super().__init__(env)
        self.router = env.get("ROUTER_URL", "").rstrip("/")
        self.asked_at = 0.0  # when the router was last asked

    def record(self, kind: str, **fields: Any) -> None:
        """One event as a line of $HOME/.agensh/cc.log; nothing on the container's log."""
        if "copilot_version" in fields:
            fields["cli_version"] = fields.pop("copilot_version")
        event = {"ts": now_iso(), "type": TYPES.get(kind, kind), "agent": self.agent, **fields}
        with (self.state / "cc.log").open("a") as f:
            f.write(json.dumps(event, sort_keys=True) + "\n")

    def stuck(self, silent: float) -> bool:
        """The router decides, from how long the CLI has been silent (asked every few seconds; not stuck between)."""
        if not self.router:
            return super().stuck(silent)
        if time.monotonic() - self.asked_at < ASK_EVERY_S:
            return False
        self.asked_at = time.monotonic()
        body = json.dumps({"agent": self.agent, "silent_ms": int(silent * 1000)}).encode()
        req = urllib.request.Request(
            f"{self.router}/acp/silence", data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                answer = bool(json.loads(resp.read(4096))["stuck"])
        except (OSError, ValueError, KeyError) as err:
            print(f"[test checkout cc-log] driver: router unreachable: {err}", flush=True)
            return False
        return answer


if __name__ == "__main__":
    CcDriver(dict(os.environ)).run()
