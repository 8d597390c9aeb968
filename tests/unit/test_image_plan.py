"""The image plan (model/image_plan.py): each image once, every image a build is based on made before it, a baseline's
plan only what a baseline builds, and uncached builds under the run's private tag."""

from __future__ import annotations

import pytest

from model import catalog
from model.checkout import shared_images
from model.image_plan import plan, private
from model.profile import parse_profile

TASKS = sorted(catalog.tasks())[:3]


def profile(**over):
    return parse_profile(
        {
            "profile": "p",
            "run_id": "20261129t000000z",
            "tasks": TASKS,
            "workers": 2,
            "llm_upstream": "http://m.example",
            "agensh_checkout": "/x",
            **over,
        }
    )


@pytest.mark.parametrize("kind", ["team", "baseline"])
def test_every_image_once_and_after_what_it_is_built_on(kind):
    p = profile(kind=kind, **({"workers": 1, "tasks": TASKS[:1]} if kind == "baseline" else {}))
    planned = plan(p)
    keys = [i.key for i in planned]
    assert len(set(keys)) == len(keys) and len({i.name for i in planned}) == len(planned)
    for n, image in enumerate(planned):
        if image.build:
            assert set(image.build.after) <= set(keys[:n]), image
    built = {i.role for i in planned if i.build and i.task is None}
    assert built == {i.role for i in shared_images(kind == "baseline")}
    assert [i.task for i in planned if i.role == "worker-image"] == p.tasks
    assert ({"mysql", "gitea", "mattermost"} <= set(keys)) == (kind == "team")


def test_an_uncached_profile_builds_under_its_private_tag_and_pulls_the_rest():
    p = profile(uncached=True)
    planned = plan(p)
    assert {i.key for i in planned if private(p, i)} == {i.key for i in planned if i.build}
    assert not any(private(profile(), i) for i in plan(profile()))
