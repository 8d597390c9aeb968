"""The sizes `docker system df` prints, read as bytes (the suite's build-cache trim and room check rest on them)."""

import pytest

from scripts.lab.docker_disk import parse_size


@pytest.mark.parametrize(
    "text, expected",
    [("0B", 0), ("878B", 878), ("49.2kB", 49_200), ("394MB", 394_000_000), ("63.2GB", 63_200_000_000)],
)
def test_sizes_as_docker_prints_them(text: str, expected: int):
    assert parse_size(text) == expected


def test_anything_else_is_refused():
    with pytest.raises(ValueError, match="not a Docker size"):
        parse_size("lots")
