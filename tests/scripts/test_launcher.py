"""The launch lock and the detached launch's service (scripts/lib/launcher.py): one launch of a stack at a time, held
by a live process; a profile directory agensh did not make refused before anything is written in it; the transient
systemd service after Docker and the guard, in the slice, never restarted, stopped with SIGINT. The detached launch
itself runs in test_demo (its terminal hung up, a second launch refused, status following it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from model.profile import Profile, parse_profile
from model.rundir import CREATED_MARKER, CopyDir, RunDir
from scripts.cli import launch
from scripts.lab.sandbox import profile_config
from scripts.lib import launcher
from tests.scripts.conftest import kicked_off

HOLD = """
import sys, time
from model.profile import parse_profile
from scripts.lib import launcher
from tests.scripts.conftest import kicked_off
import json
fh, record = launcher.hold("stack-a", parse_profile(json.loads(sys.argv[1])))
print("held", flush=True)
time.sleep(60)
"""


def settings(tmp_path: Path, **over: object) -> dict[str, object]:
    raw = profile_config("demo.profile.yaml", data_root=str(tmp_path / "data"), **over)
    return {k.split(":", 1)[1]: v for k, v in raw.items()}


def profile(tmp_path: Path, **over: object) -> Profile:
    return parse_profile(settings(tmp_path, **over))


def test_one_launch_at_a_time_and_its_end_recorded(tmp_path: Path):
    p = profile(tmp_path)
    rd = RunDir.of(p)
    other = subprocess.Popen(
        [sys.executable, "-c", HOLD, json.dumps(settings(tmp_path))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        assert launcher.running(rd)
        with pytest.raises(launcher.Running) as refused:
            launcher.hold("stack-a", p)
        assert refused.value.record is not None and refused.value.record.pid == other.pid
        assert f"pid {other.pid}" in str(refused.value) and "being launched" in str(refused.value)
    finally:
        other.kill()
        other.wait()
    assert not launcher.running(rd)  # a killed launcher's lock goes with it
    fh, record = launcher.hold("stack-a", p, rd.launch_log)  # so the next launch takes it
    assert launcher.running(rd) and json.loads(rd.launcher.read_text())["pid"] == record.pid
    rd.launch_log.write_text("the launch's output\n")
    copy = CopyDir.of(str(tmp_path / "traj"), p.profile, p.run_id)
    copy.path.mkdir(parents=True)  # the run made its verified copy, which leaves the log out while it is written
    assert rd.uncopied(rd.launch_log, "preserve-run") and rd.uncopied(rd.launcher, "preserve-run")
    launcher.release(fh, record, 3, copy)
    ended = launcher.read(rd)
    assert ended is not None and ended.exit == 3 and ended.ended and not launcher.running(rd)
    assert (copy.path / "launch.log").read_text() == "the launch's output\n"  # added to the copy as it ended
    assert "launch.log" in json.loads(copy.sums.read_text())
    assert (rd.path.parent / CREATED_MARKER).is_file()  # claimed as the profile's data step claims it


def test_a_directory_agensh_did_not_make_is_refused_untouched(tmp_path: Path):
    p = profile(tmp_path)
    theirs = RunDir.of(p).path.parent
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("someone's")
    with pytest.raises(launcher.Refused, match="agensh did not create it"):
        launcher.hold("stack-a", p)
    assert sorted(f.name for f in theirs.iterdir()) == ["notes.txt"]


def test_the_detached_service(tmp_path: Path):
    log = tmp_path / "launch.log"
    env = {"PULUMI_CONFIG_PASSPHRASE_FILE": "/home/u/.agensh/passphrase", "PATH": "/usr/bin:/bin"}
    argv = ["/venv/bin/python", "-m", "scripts.cli", "launch", "up", "cohort", "--yes", "--foreground"]
    cmd = launcher.systemd_command("cohort", profile(tmp_path), env, log, argv)
    props = {a.split("=", 1)[1].split("=", 1)[0]: a.split("=", 2)[2] for a in cmd if a.startswith("--property=")}
    assert cmd[0] == "systemd-run" and "--unit=agensh-up-cohort" in cmd and "--slice=pbench.slice" in cmd
    assert props["Restart"] == "no" and props["KillSignal"] == "SIGTERM" and props["KillMode"] == "mixed"
    assert props["TimeoutStopSec"] == "60"  # a host's shutdown waits a minute at most
    assert props["After"] == "docker.service pbench-reboot-guard.service"
    assert props["StandardOutput"] == f"append:{log}"
    assert "--setenv=AGENSH_LAUNCH_HOW=unit" in cmd and "--setenv=AGENSH_LAUNCH_UNIT=agensh-up-cohort.service" in cmd
    assert cmd[-len(argv) :] == argv and '. scripts/env.sh && exec "$@"' in cmd  # the toolchain on its PATH
    off = launcher.systemd_command("cohort", profile(tmp_path, host_units="off"), env, log, argv)
    assert not any(a.startswith("--slice") for a in off) and "--property=After=docker.service" in off


STANDIN_PULUMI = """#!/usr/bin/env python3
# STAND-IN pulumi (tests/scripts/test_launcher.py): records each signal it gets; the second ends it, as the real
# one's second signal does (its cancellation scope: the first cancels, the second terminates).
import os, signal, sys, time
got = []
def record(sig, frame):
    got.append(signal.Signals(sig).name)
    with open(os.environ["STANDIN_LOG"], "a") as log:
        print(got[-1], flush=True, file=log)
    if len(got) == 2:
        sys.exit(8)
signal.signal(signal.SIGINT, record)
signal.signal(signal.SIGTERM, record)
with open(os.environ["STANDIN_LOG"], "a") as log:
    print("up", *sys.argv[1:], file=log)
time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_reaches_each_update_and_sigterm_gives_up_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
):
    """SIGINT (`make stop`) reaches the update once: the steps in flight finish. SIGTERM (the launcher's service
    stopped: a host's shutdown, `systemctl stop`) reaches it twice: it gives them up and ends at once. Nothing new
    starts after either."""
    pulumi, log = tmp_path / "bin" / "pulumi", tmp_path / "signals"
    pulumi.parent.mkdir()
    pulumi.write_text(STANDIN_PULUMI)
    pulumi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{pulumi.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with open(tmp_path / "launch.lock", "w") as lock:
            updates = launch.Updates([], lock.fileno())
            proc = updates.start("stack-a")
            assert proc is not None
            end = time.monotonic() + 20
            while not log.exists() or not log.read_text().startswith("up "):
                assert time.monotonic() < end and proc.poll() is None
                time.sleep(0.1)
            os.kill(os.getpid(), sig)  # the handler runs here, in the main thread
            if sig == signal.SIGTERM:
                assert proc.wait(timeout=10) == 8
            else:
                time.sleep(2 * launch.GIVE_UP_S)
                assert proc.poll() is None
                proc.kill()
                proc.wait()
            assert updates.start("stack-b") is None
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    assert log.read_text().splitlines()[1:] == [sig.name] * (2 if sig == signal.SIGTERM else 1)


def test_stop_without_a_launch_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert launcher.stop("cohort", profile(tmp_path)) == 1
    assert "no launch of stack cohort is running" in capsys.readouterr().err


def test_a_run_directory_of_another_user_is_refused_with_the_fix(tmp_path: Path):
    """A launch after `sudo make up` (the run directory root's, the launch a user's): refused before anything is
    written, saying whose it is and how to give it back; not a traceback from the lock file."""
    p = profile(tmp_path)
    rd = RunDir.of(p)
    launcher.hold("stack-a", p)[0].close()  # the earlier launch made the profile and run directories
    stranger = 4242 if os.geteuid() != 4242 else 4243
    os.chown(rd.launcher, stranger, stranger)
    with pytest.raises(launcher.Refused) as refused:
        launcher.hold("stack-a", p)
    said = str(refused.value)
    assert f"{rd.launcher} belongs to uid {stranger}, not to you" in said, said
    assert f"sudo chown -R {os.geteuid()}:{os.getegid()} {rd.path.parent}" in said
    detached = launcher.detach("stack-a", p, [])
    assert detached == 2 and not rd.launch_log.exists()


def test_stop_says_which_exports_wait_for_their_deadline(tmp_path: Path):
    """A first `make stop` lets the steps in flight finish: it says which tasks' exports wait for a deadline, and how
    long (a task past its deadline, or not yet kicked off, waits for nothing)."""
    rd = RunDir(tmp_path)
    kicked_off(tmp_path, "org__one.1111111", time.time() + 600)
    kicked_off(tmp_path, "org__two.2222222", time.time() - 10)
    said = launcher.waiting(rd, ["org__one.1111111", "org__two.2222222", "org__three.3333333"])
    assert said.startswith(": the export waits for the deadline of org__one.1111111 at ") and "(in 10 min)" in said
    assert "two" not in said and "three" not in said
    assert launcher.waiting(rd, ["org__two.2222222"]) == ""
