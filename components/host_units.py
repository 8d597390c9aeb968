"""HostUnits: pbench.slice and the reboot guard, installed through command resources, locally or over SSH."""

from __future__ import annotations

from pathlib import Path

import pulumi
from pulumi_command import local, remote

from .profile import Profile

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
REMOTE_GUARD_EXEC = "/usr/local/libexec/agensh/pbench_reboot_guard.sh"


class HostUnits(pulumi.ComponentResource):
    """Installs the slice and guard once; destroy removes only what this stack installed."""

    receipt: pulumi.Output[str]

    def __init__(self, name: str, profile: Profile, opts: pulumi.ResourceOptions | None = None,
                 ssh_private_key: pulumi.Input[str] | None = None):
        super().__init__("agensh:index:HostUnits", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        script = (SCRIPTS / "host_units.sh").read_text()
        env = {"SLICE_MEMORY_PERCENT": str(profile.slice_memory_percent)}
        if profile.host_units == "remote":
            env |= {"GUARD_EXEC": REMOTE_GUARD_EXEC, "GUARD_SCRIPT": (SCRIPTS / "pbench_reboot_guard.sh").read_text()}
            cmd = remote.Command(
                f"{name}-install",
                connection=remote.ConnectionArgs(host=profile.ssh_host, port=profile.ssh_port, user=profile.ssh_user,
                                                 private_key=ssh_private_key),
                create="sh -s install", delete="sh -s remove", stdin=script, environment=env, opts=child)
        else:
            env |= {"GUARD_EXEC": str(SCRIPTS / "pbench_reboot_guard.sh")}
            cmd = local.Command(
                f"{name}-install", create=f"sh {SCRIPTS / 'host_units.sh'} install",
                delete=f"sh {SCRIPTS / 'host_units.sh'} remove", environment=env, opts=child)
        self.receipt = cmd.stdout
        self.register_outputs({"receipt": self.receipt})
