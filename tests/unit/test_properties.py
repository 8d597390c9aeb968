"""Property tests: isolation by octet, unique in-subnet addresses, the ramp rule for any team size."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from model import catalog
from model.profile import parse_profile
from model.ramp import Ramp
from model.topology import Layout

TASK_IDS = sorted(catalog.tasks())


def profile(octet: int, workers: int, ntasks: int):
    return parse_profile(
        {
            "profile": "p",
            "run_id": "20261129t000000z",
            "tasks": TASK_IDS[:ntasks],
            "workers": workers,
            "subnet_octet": octet,
            "llm_upstream": "http://m.example",
            "agensh_checkout": "/x",
            "mm_max_users_per_team": 1000,
            "mysql_max_connections": 5000,
        }
    )


@given(st.integers(1, 254), st.integers(1, 254), st.integers(1, 200), st.integers(1, 200))
def test_distinct_octets_never_overlap(a, b, wa, wb):
    if a == b:
        return
    pa, pb = profile(a, wa, 1), profile(b, wb, 1)
    for x in (pa.internal_network, pa.egress_network):
        for y in (pb.internal_network, pb.egress_network):
            assert not x.overlaps(y)


@settings(max_examples=60, deadline=None)  # correctness, not speed (see scripts/lab/bench.py)
@given(st.integers(1, 254), st.integers(1, 160), st.integers(1, 4))
def test_every_container_has_a_unique_address_inside_its_subnet(octet, workers, ntasks):
    p = profile(octet, workers, ntasks)
    internal, egress, data = p.internal_network, p.egress_network, p.data_network
    assert not internal.overlaps(egress) and not data.overlaps(internal) and not data.overlaps(egress)
    seen: set[str] = set()
    for c in Layout.of(p).placements:
        for ip, net in ((c.internal_ip, internal), (c.egress_ip, egress), (c.data_ip, data)):
            if ip is None:
                continue
            addr = ipaddress.IPv4Address(ip)
            assert addr in net and addr not in (net.network_address, net.broadcast_address, net.network_address + 1)
            assert ip not in seen
            seen.add(ip)


@given(st.integers(1, 512))
def test_ramp_follows_the_rule(workers):
    r = Ramp()
    offsets = r.offsets(workers)
    assert offsets[0] == 0
    for n in range(1, workers):
        step = offsets[n] - offsets[n - 1]
        assert step == (30 if n <= 120 else 3)
    assert r.kickoff(workers) == offsets[-1] + 20 + 60
