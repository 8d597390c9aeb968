"""HostUnits against a remote systemd host, as the profile chooses it (host_units: remote)."""

import pulumi

from components.host_units import HostUnits
from model.profile import parse_profile

cfg = pulumi.Config()
profile = parse_profile(
    {
        "profile": cfg.get("profile") or "hostunits-test",
        "run_id": "20261129t000000z",
        "tasks": ["testorg__calculator.abc1234"],
        "llm_upstream": "http://model.invalid",
        "agensh_checkout": "/nonexistent",
        "host_units": "remote",
        "ssh_host": cfg.require("host"),
        "ssh_user": "root",
        "ssh_host_key": cfg.require("host_key"),
        **({"data_root": cfg.require("data_root")} if cfg.get("data_root") else {}),
    }
)
units = HostUnits("host", profile, ssh_private_key=cfg.require_secret("key"))
pulumi.export("receipt", units.receipt)
