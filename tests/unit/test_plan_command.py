"""`python -m scripts.cli plan`: the hosts a profile needs and where each container goes, before anything is created."""

from __future__ import annotations

import pytest

from scripts.cli.app import main as cli


def test_the_example_swarm_stack_fits_on_its_24_hosts(capsys: pytest.CaptureFixture[str]):
    assert cli(["plan", "cohort-w120-swarm"]) == 0
    out = capsys.readouterr().out
    assert "hosts needed: 24 (the platform's node and 23 more of 512 GiB / 64 CPUs)" in out
    assert "n01        manager   419430MB     64      5      5  yes       1, 25, 49, 73, 97" in out
    assert out.count(" worker ") == 23


@pytest.mark.parametrize("workers, hosts", [(8, 2), (32, 7), (120, 24)])
def test_what_if_workers(workers: int, hosts: int, capsys: pytest.CaptureFixture[str]):
    assert cli(["plan", "cohort-w120-swarm", "--workers", str(workers)]) == 0
    assert f"hosts needed: {hosts} " in capsys.readouterr().out


def test_smaller_hosts_do_not_fit_and_say_so(capsys: pytest.CaptureFixture[str]):
    assert cli(["plan", "cohort-w120-swarm", "--node-memory-gib", "256", "--containers"]) == 1
    out = capsys.readouterr().out
    assert "hosts needed: 60 " in out and "DOES NOT FIT: workers 49-120 have no node" in out
    assert "omcgitea-cohort-w120-swarm-jgm-pandoc-5caad90-worker-48" in out
    assert "omcgitea-cohort-w120-swarm-jgm-pandoc-5caad90-worker-49 " not in out
    assert "omcgitea-cohort-w120-swarm-gitea" in out


def test_a_single_host_profile_has_nothing_to_place(capsys: pytest.CaptureFixture[str]):
    assert cli(["plan", "cohort-w8"]) == 2
    assert "engine: docker" in capsys.readouterr().err
