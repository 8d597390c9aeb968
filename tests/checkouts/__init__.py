"""Test checkouts: Agensh checkouts that choose otherwise than the demo's (demo/checkout) where the checkout contract
lets a checkout choose (model/checkout.py `CONVENTIONS`). Each is made from the demo's checkout by the test that uses
it: the demo's files, a few edits and removals, and the files of its overlay folder here. TEST CHECKOUTS: never a
real Agensh, never used for a run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from model.project import DEMO_CHECKOUT, ROOT

HERE = Path(__file__).resolve().parent
DEMO = ROOT / DEMO_CHECKOUT

CC_LOG_REMOVED = ("agent/bin/pbench-selfcheck",)  # its self-check is agensh-selfcheck
CC_LOG_EDITS = {  # file -> (text of the demo's, what it becomes)
    "agent/Dockerfile.base": (
        ("COPY acp_driver.py /opt/agensh/acp_driver.py", "COPY acp_driver.py cc_driver.py /opt/agensh/"),
        ("pbench-selfcheck", "agensh-selfcheck"),
        ("/opt/agensh/acp_driver.py\n", "/opt/agensh/acp_driver.py /opt/agensh/cc_driver.py\n"),
    ),
    "agent/Dockerfile": (
        (
            "COPY --from=agent /opt/agensh/acp_driver.py /opt/agensh/acp_driver.py",
            "COPY --from=agent /opt/agensh/acp_driver.py /opt/agensh/cc_driver.py /opt/agensh/",
        ),
        ("pbench-selfcheck", "agensh-selfcheck"),
    ),
    "agent/bin/pbench-worker": (("/opt/agensh/acp_driver.py", "/opt/agensh/cc_driver.py"),),
    "mini-router/Dockerfile": (
        (
            'CMD ["python3", "/opt/standin/standin.py"]',
            'COPY router.py /opt/router/router.py\nCMD ["python3", "/opt/router/router.py"]',
        ),
    ),
}


def cc_log(dest: Path, demo: Path = DEMO) -> Path:
    """The cc-log test checkout at `dest`, made from a demo checkout (a sandbox's copy, its images pinned, or the
    project's own): every edit must find the demo's text, so a demo that changed under it fails here, by name."""
    shutil.copytree(demo, dest)
    for rel in CC_LOG_REMOVED:
        (dest / rel).unlink()
    for rel, edits in CC_LOG_EDITS.items():
        path = dest / rel
        text = path.read_text()
        for old, new in edits:
            if old not in text:
                raise AssertionError(f"{demo / rel} no longer holds {old!r}: update tests/checkouts (cc-log)")
            text = text.replace(old, new)
        path.write_text(text)
    shutil.copytree(HERE / "cc_log", dest, dirs_exist_ok=True)
    return dest
