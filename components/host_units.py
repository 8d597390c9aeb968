"""HostUnits: pbench.slice and the reboot guard, installed through command resources, locally or over SSH.

The install script and its settings reach the shell on stdin (`sh -s install`), the same way locally and over SSH:
the official `command:remote:Command` passes `environment` through SSH setenv, which a default sshd refuses, and
values on the command line would show in the host's process list.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shlex
import socket

import pulumi
from pulumi_command import local, remote

from model.profile import Profile
from model.project import ROOT, SCRIPTS
from model.root_powers import as_root
from model.rundir import ProfileDir

# systemctl and /etc/systemd/system: root, or the user's passwordless sudo (model/root_powers.py)
INSTALL = as_root("sh -s install", "installing the host units (systemctl, /etc/systemd/system)")
REMOVE = as_root("sh -s remove", "removing the host units (systemctl, /etc/systemd/system)")
# root's copy of the guard script, outside any user's checkout, shared by path by every profile of the host
GUARD_EXEC = "/usr/local/libexec/agensh/pbench_reboot_guard.sh"
HEREDOC_END = "AGENSH_GUARD_SCRIPT_END"


def owner(profile: Profile) -> dict[str, str]:
    """Who installs, as the receipt records it: its name, `<profile>.<uid>-<hash of the checkout and the profile's
    data>`, so that two users' (or two checkouts') profiles of one name keep a receipt each; and, to tell a stale
    receipt, the user, the checkout (whose stack file goes with the profile's state), the data and the host."""
    uid, data = os.geteuid(), ProfileDir.of(profile).path
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid without a name (a container's)
        user = f"uid {uid}"
    tag = hashlib.sha256(f"{ROOT}\0{data}".encode()).hexdigest()[:12]
    return {
        "OWNER": f"{profile.profile}.{uid}-{tag}",
        "PROFILE": profile.profile,
        "OWNER_USER": user,
        "CHECKOUT": str(ROOT),
        "DATA_DIR": str(data),
        "FROM_HOST": socket.gethostname(),
    }


def install_script(profile: Profile) -> str:
    """Shell assignments of the settings, then the host units script: what `sh -s` reads on stdin. The guard script
    travels with the units, to be installed root's outside any checkout."""
    guard = (SCRIPTS / "pbench_reboot_guard.sh").read_text()
    settings = {"SLICE_MEMORY_PERCENT": str(profile.slice_memory_percent), "GUARD_EXEC": GUARD_EXEC, **owner(profile)}
    lines = [f"{k}={shlex.quote(v)}" for k, v in settings.items()]
    assert HEREDOC_END not in guard
    lines.append(f"GUARD_SCRIPT=$(cat <<'{HEREDOC_END}'\n{guard.rstrip()}\n{HEREDOC_END}\n)")
    return "\n".join(lines) + "\n" + (SCRIPTS / "host" / "host_units.sh").read_text()


class HostUnits(pulumi.ComponentResource):
    """Installs the slice and guard once; destroy removes what agensh installed only as the last profile using them
    (the delete's output says what it left and why)."""

    receipt: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        profile: Profile,
        opts: pulumi.ResourceOptions | None = None,
        ssh_private_key: pulumi.Input[str] | None = None,
    ):
        super().__init__("agensh:index:HostUnits", name, None, opts)
        # remove before installing again: a replacement must not delete what the new install reuses
        child = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        stdin = install_script(profile)
        if profile.host_units == "remote":
            assert profile.ssh_host is not None, "the profile refuses host_units=remote without ssh_host"
            cmd: local.Command | remote.Command = remote.Command(
                f"{name}-install",
                connection=remote.ConnectionArgs(
                    host=profile.ssh_host,
                    port=profile.ssh_port,
                    user=profile.ssh_user,
                    private_key=ssh_private_key,
                    host_key=profile.ssh_host_key,
                ),
                create=INSTALL,
                delete=REMOVE,
                stdin=stdin,
                add_previous_output_in_env=False,
                opts=child,
            )
        else:
            cmd = local.Command(
                f"{name}-install",
                create=INSTALL,
                delete=REMOVE,
                stdin=stdin,
                add_previous_output_in_env=False,
                opts=child,
            )
        self.receipt = cmd.stdout
        self.register_outputs({"receipt": self.receipt})
