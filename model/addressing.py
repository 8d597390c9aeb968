"""Subnets, static addresses and loopback ports of one profile.

Concurrent profiles are isolated by their subnet octet and port base (docs/requirements.md R9): profile octet X
owns `10.X.0.0/16`; its internal network starts at `10.X.0.0` (sized to the team) and its egress network
is `10.X.255.0/24`. Addresses are fixed per container so a resumed `up` never renumbers a team.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

# Addresses 0 (network) and 1 (gateway) are Docker's; 2..15 hold the platform services (by their role's slot).
SERVICE_SLOTS = 16
FIRST_SERVICE_HOST = 2
EGRESS_PROXY_EGRESS_HOST = 2
MODEL_STANDIN_EGRESS_HOST = 3
LARGEST_INTERNAL_PREFIX = 17  # 10.X.0.0/17: the team network never reaches 10.X.128.0 (data) or the top
LARGEST_DATA_PREFIX = 18  # 10.X.128.0/18 ends at 10.X.191.255


def team_slots(tasks: int, workers: int) -> int:
    """Addresses a team's internal network must hold: services, then a router and a worker per worker per task."""
    return SERVICE_SLOTS + 2 * tasks * workers + 1  # + broadcast


def data_slots(tasks: int, workers: int) -> int:
    """Addresses the data network must hold: the database's users (services, then every task's routers)."""
    return SERVICE_SLOTS + tasks * workers + 1


def baseline_slots() -> int:
    return SERVICE_SLOTS + 2 + 1


def prefix_for(slots: int) -> int | None:
    """Smallest network (at most /24) holding `slots` addresses, or None when not even a /17 does."""
    prefix = min(24, 32 - math.ceil(math.log2(slots)))
    return prefix if prefix >= LARGEST_INTERNAL_PREFIX else None


def derived_internal(octet: int, slots: int) -> ipaddress.IPv4Network | None:
    prefix = prefix_for(slots)
    return None if prefix is None else ipaddress.IPv4Network(f"10.{octet}.0.0/{prefix}")


def derived_data(octet: int, slots: int) -> ipaddress.IPv4Network | None:
    """The data network, where only the database and the services that use it meet: 10.X.128.0/N (at most a /18,
    so it never reaches the operator and egress networks at the top of the profile's /16)."""
    prefix = prefix_for(slots)
    return (
        None if prefix is None or prefix < LARGEST_DATA_PREFIX else ipaddress.IPv4Network(f"10.{octet}.128.0/{prefix}")
    )


def derived_egress(octet: int) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"10.{octet}.255.0/24")


def derived_operator(octet: int) -> ipaddress.IPv4Network:
    """The operator network: Docker publishes no port of a container on internal networks only, so the services
    with operator ports also join this (non-internal) bridge; the ports still bind 127.0.0.1 only."""
    return ipaddress.IPv4Network(f"10.{octet}.254.0/24")


def host(net: ipaddress.IPv4Network, index: int) -> str:
    if not 0 < index < net.num_addresses - 1:
        raise ValueError(f"address #{index} is outside {net}")
    return str(net.network_address + index)


def service_ip(net: ipaddress.IPv4Network, slot: int) -> str:
    """A platform service's fixed address (its role's slot, see roles.ROLES)."""
    assert 0 <= slot < SERVICE_SLOTS - FIRST_SERVICE_HOST, slot
    return host(net, FIRST_SERVICE_HOST + slot)


@dataclass(frozen=True)
class TeamSlot:
    """Where task k's router n and worker n sit in the internal network."""

    workers: int

    def router_index(self, task: int, n: int) -> int:
        return SERVICE_SLOTS + task * 2 * self.workers + n

    def worker_index(self, task: int, n: int) -> int:
        return SERVICE_SLOTS + task * 2 * self.workers + self.workers + n

    def router_data_index(self, task: int, n: int) -> int:
        """A router's address on the data network (routers are the database's only per-worker users)."""
        return SERVICE_SLOTS + task * self.workers + n
