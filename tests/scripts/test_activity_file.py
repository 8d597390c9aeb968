"""The cc-log reader against real containers (scripts/lib/activity.py `FileReader`): the report copied out of a
running or a stopped worker with `docker cp`, nothing run in it; a link, a folder or an absent file read as nothing;
a file beyond the bound read from its tail; a modification time set ahead counted as now."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from model.checkout import CC_LOG
from scripts.lib import activity

PIN = "1.0.78"


def docker(*args: str) -> str:
    out = subprocess.run(["docker", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def worker(base_image: str) -> Iterator:
    """Start a container (no network) whose shell script lays out $HOME/.agensh; every one is removed after."""
    made: list[str] = []

    def start(script: str) -> str:
        name = f"agensh-test-cclog-{uuid.uuid4().hex[:8]}"
        folder = CC_LOG.file.rsplit("/", 1)[0]
        docker(
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "none",
            "--label",
            "agensh.test=cc-log",
            "--entrypoint",
            "sh",
            base_image,
            "-c",
            f"mkdir -p {folder} && cd {folder} && {script} && touch /ready && exec sleep 600",
        )
        made.append(name)
        end = time.monotonic() + 30
        while subprocess.run(["docker", "exec", name, "test", "-e", "/ready"]).returncode and time.monotonic() < end:
            time.sleep(0.2)
        return name

    yield start
    if made:
        subprocess.run(["docker", "rm", "-f", *made], capture_output=True)


def lines(*events: str) -> str:
    return "printf '%s\\n' " + " ".join(f"'{e}'" for e in events) + " > cc.log"


def test_the_report_is_read_from_a_running_and_from_a_stopped_worker(worker):
    name = worker(
        lines(
            f'{{"ts": "2026-12-04T06:00:00.000Z", "type": "session_start", "cli_version": "{PIN}"}}',
            "not json at all",
            '{"ts": "2026-12-04T06:00:01.000Z", "type": "tool_use"}',
        )
    )
    read = activity.reader("cc-log")
    assert read.session(read.events(name)).copilot_version == PIN
    assert [e["type"] for e in read.events(name)] == ["session_start", "tool_use"]
    assert abs(read.last_active(name) - time.time()) < 60
    assert read.follower().session(name).tool_calls == 1
    docker("stop", "-t", "1", name)  # the shutdown and a baseline's stop read it after the worker stopped
    assert read.session(read.events(name)).tool_calls == 1


def test_a_link_a_folder_or_nothing_is_read_as_no_report(worker):
    read = activity.reader("cc-log")
    link = worker("ln -s /etc/passwd cc.log")
    folder = worker('mkdir cc.log && echo \'{"type": "session_start"}\' > cc.log/x')
    absent = worker("true")
    for name in (link, folder, absent, "agensh-test-cclog-no-such-container"):
        assert read.native(name) == "" and read.events(name) == []
    assert activity.copy_out(link, CC_LOG.file) is None  # the link itself, never /etc/passwd


def test_a_large_report_is_read_from_its_tail(worker):
    name = worker(
        "head -c 300000 /dev/zero | tr '\\0' 'x' > cc.log && echo >> cc.log && "
        'echo \'{"ts": "t", "type": "turn_complete"}\' >> cc.log'
    )
    copied = activity.copy_out(name, CC_LOG.file, limit=4096)
    assert copied is not None and len(copied.text) == 4096 and copied.text.endswith('"turn_complete"}\n')
    assert activity.parse(CC_LOG, copied.text)[-1]["type"] == "turn_complete"


def test_a_time_set_ahead_counts_as_now(worker):
    name = worker("echo '{\"type\": \"user_prompt\"}' > cc.log && touch -d '2099-01-01 00:00:00' cc.log")
    assert activity.copy_out(name, CC_LOG.file).mtime > time.time() + 10**9  # type: ignore[union-attr]
    assert activity.reader("cc-log").last_active(name) <= time.time()  # type: ignore[operator]
