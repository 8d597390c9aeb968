"""HostUnits: pbench.slice and the reboot guard, installed through command resources, locally or over SSH.

The install script and its settings reach the shell on stdin (`sh -s install`), the same way locally and over SSH:
the official `command:remote:Command` passes `environment` through SSH setenv, which a default sshd refuses, and
values on the command line would show in the host's process list.
"""

from __future__ import annotations

import shlex

import pulumi
from pulumi_command import local, remote

from model.profile import Profile
from model.project import SCRIPTS
from model.root_powers import as_root

# systemctl and /etc/systemd/system: root, or the user's passwordless sudo (model/root_powers.py)
INSTALL = as_root("sh -s install", "installing the host units (systemctl, /etc/systemd/system)")
REMOVE = as_root("sh -s remove", "removing the host units (systemctl, /etc/systemd/system)")
REMOTE_GUARD_EXEC = "/usr/local/libexec/agensh/pbench_reboot_guard.sh"
HEREDOC_END = "AGENSH_GUARD_SCRIPT_END"


def install_script(profile: Profile) -> str:
    """Shell assignments of the settings, then the host units script: what `sh -s` reads on stdin."""
    guard = (SCRIPTS / "pbench_reboot_guard.sh").read_text()
    settings = {
        "SLICE_MEMORY_PERCENT": str(profile.slice_memory_percent),
        "OWNER": profile.profile,
        "GUARD_EXEC": REMOTE_GUARD_EXEC if profile.host_units == "remote" else str(SCRIPTS / "pbench_reboot_guard.sh"),
    }
    lines = [f"{k}={shlex.quote(v)}" for k, v in settings.items()]
    if profile.host_units == "remote":  # the guard script travels with the units
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
