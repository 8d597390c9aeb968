"""The role table: every kind of container, with its port, address slot, networks, operator ports, start order and the
profile kinds that run it.

One entry per role; a new platform service is one `Role(...)` here and its container's spec in `services.py`. Pure
data, below everything that reads it: the profile's schema takes its port offsets (`MAX_PORT_OFFSET`), the layout
(`topology.py`) its slots and start order, the services their ports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HTTP_PORT = 8080
Network = Literal["internal", "egress", "operator", "data"]


@dataclass(frozen=True)
class Role:
    name: str
    port: int = HTTP_PORT  # where the service listens inside its container
    networks: tuple[Network, ...] = ("internal",)
    slot: int | None = None  # platform address: host 2 + slot of the internal network
    operator_port: int | None = None  # offset from port_base when operator ports are published (127.0.0.1)
    manager_port: int | None = None  # swarm: offset from port_base where the steps reach a role without operator port
    after: tuple[str, ...] = ()  # platform roles that must be up first
    model_path: bool = False  # on the way to the model: up before the model check, which the other services wait for
    kinds: tuple[str, ...] = ("team",)  # profile kinds that run it
    per_task: bool = False  # one per worker per task (router, worker) or per task (snapshot)


# The table. Platform roles are listed in start order; `slot` fixes their addresses for good (never renumber).
ROLES: dict[str, Role] = {
    r.name: r
    for r in (
        Role("mysql", port=3306, networks=("data",), slot=0, operator_port=4),
        Role("gitea", port=3000, networks=("internal", "data"), slot=1, operator_port=0, after=("mysql",)),
        Role(
            "mattermost",
            port=8065,
            networks=("internal", "data"),
            slot=2,
            operator_port=1,
            after=("mysql",),
        ),
        Role("board", slot=3, operator_port=2),
        Role("secret-service", slot=4, operator_port=3),
        Role(
            "egress-proxy",
            networks=("internal", "egress"),
            slot=5,
            manager_port=5,
            kinds=("team", "baseline"),
            model_path=True,
        ),
        Role("model", networks=("egress",), kinds=(), model_path=True),  # only with model_standin (the demo)
        Role("bootstrap", slot=6, after=("gitea", "mattermost", "secret-service")),
        Role("router", networks=("internal", "data"), per_task=True),
        Role("worker", per_task=True, kinds=("team", "baseline")),
        Role("snapshot", networks=(), per_task=True, kinds=("baseline",)),
    )
}
# the highest operator port offset: the profile's port_base leaves room for it at the top of the port range
MAX_PORT_OFFSET = max(o for r in ROLES.values() for o in (r.operator_port, r.manager_port) if o is not None)
