"""Root's powers for a user with passwordless sudo (model/root_powers.py, scripts/lib/privilege.py): root runs the
command itself, a user through `sudo -n` (never a prompt), and a `sudo` that asks for a password gives a clear
message at once, with nothing changed. The user is played by stand-ins for `id` and `sudo` on PATH (these tests
run as root and change no user of the host); the real user with a real sudo runs the demo in
tests/integration/test_not_root.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from model.root_powers import as_root
from scripts.lib import privilege

ASKS = "sudo: a password is required"


def stand_ins(bin_dir: Path, log: Path, sudo_works: bool) -> dict[str, str]:
    """`id` saying uid 4242 (researcher), and a `sudo` that logs its arguments and either runs the command after
    `-n` (passwordless) or, as `sudo -n` does when it would prompt, fails at once."""
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "id").write_text('#!/bin/sh\ncase "$1" in -u) echo 4242 ;; -un) echo researcher ;; esac\n')
    run = '[ "$1" = -n ] && shift && exec "$@"' if sudo_works else f'echo "{ASKS}" >&2; exit 1'
    (bin_dir / "sudo").write_text(f'#!/bin/sh\necho "$*" >> {log}\n{run}\n')
    for name in ("id", "sudo"):
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def shell(command: str, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], input=stdin, env=env, capture_output=True, text=True, timeout=20)


def test_root_runs_the_command_itself_with_its_stdin(tmp_path):
    out = shell(as_root("sh -s hello", "a test"), stdin='echo "$1 from $(id -u)"\n')
    assert (out.returncode, out.stdout) == (0, "hello from 0\n")


def test_a_user_with_passwordless_sudo_runs_it_through_sudo_n(tmp_path):
    log = tmp_path / "sudo.log"
    env = stand_ins(tmp_path / "bin", log, sudo_works=True)
    out = shell(as_root("sh -s hello", "a test"), env, stdin='echo "$1"\n')
    assert (out.returncode, out.stdout) == (0, "hello\n"), out.stderr
    assert log.read_text().splitlines() == ["-n true", "-n sh -s hello"]  # never without -n: never a prompt


def test_a_sudo_that_asks_for_a_password_says_what_is_missing_and_changes_nothing(tmp_path):
    log = tmp_path / "sudo.log"
    env = stand_ins(tmp_path / "bin", log, sudo_works=False)
    out = shell(as_root("touch " + str(tmp_path / "made"), "installing the host units"), env)
    assert out.returncode == 1 and not (tmp_path / "made").exists()
    assert out.stderr.startswith("installing the host units needs root; researcher is not root and `sudo -n`")
    assert "passwordless sudo" in out.stderr and "Setting the machine up" in out.stderr
    assert log.read_text().splitlines() == ["-n true"]


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(privilege.os, "geteuid", lambda: 4242)


def test_a_user_deletes_its_own_tree_without_sudo(tmp_path, not_root):
    tree = tmp_path / "data"
    (tree / "a").mkdir(parents=True)
    os.chown(tree, 4242, 4242)
    os.chown(tree / "a", 4242, 4242)
    privilege.remove_tree(tree, "deleting a test tree")
    assert not tree.exists()


def test_files_the_containers_own_are_deleted_through_sudo(tmp_path, not_root, monkeypatch):
    log = tmp_path / "sudo.log"
    monkeypatch.setenv("PATH", stand_ins(tmp_path / "bin", log, sudo_works=True)["PATH"])
    tree = tmp_path / "data"
    (tree / "mysql").mkdir(parents=True)
    (tree / "mysql" / "ibdata1").write_text("a container's")  # root's here: not the user's
    privilege.remove_tree(tree, "deleting a test tree")
    assert not tree.exists()
    assert log.read_text().splitlines() == ["-n true", f"-n rm -rf --one-file-system -- {tree}"]


def test_a_sudo_that_asks_deletes_nothing_and_says_why(tmp_path, not_root, monkeypatch):
    monkeypatch.setenv("PATH", stand_ins(tmp_path / "bin", tmp_path / "sudo.log", sudo_works=False)["PATH"])
    tree = tmp_path / "data"
    (tree / "mine").mkdir(parents=True)
    (tree / "theirs").write_text("a container's")
    os.chown(tree / "mine", 4242, 4242)
    with pytest.raises(privilege.NotRoot, match=f"deleting a test tree needs root; .* \\({ASKS}\\)"):
        privilege.remove_tree(tree, "deleting a test tree")
    assert (tree / "mine").is_dir() and (tree / "theirs").is_file()


def test_chown_as_a_user_goes_through_sudo(tmp_path, not_root, monkeypatch):
    log = tmp_path / "sudo.log"
    monkeypatch.setenv("PATH", stand_ins(tmp_path / "bin", log, sudo_works=True)["PATH"])
    target = tmp_path / "archives"
    target.mkdir()
    privilege.chown([str(target)], 10000, 10000, "making archive directories the workers'")
    assert (target.stat().st_uid, target.stat().st_gid) == (10000, 10000)
    assert log.read_text().splitlines()[-1] == f"-n chown 10000:10000 -- {target}"


def test_a_users_detached_launch_is_a_service_that_runs_as_that_user(tmp_path, not_root):
    """systemd-run (through sudo -n) starts the launch with the caller's uid and gid, never as root."""
    from scripts.lib import launcher
    from tests.scripts.test_launcher import profile

    cmd = launcher.systemd_command("cohort", profile(tmp_path), {"PATH": "/usr/bin"}, tmp_path / "launch.log", ["up"])
    assert cmd[0] == "systemd-run" and "--uid=4242" in cmd and f"--gid={os.getegid()}" in cmd
