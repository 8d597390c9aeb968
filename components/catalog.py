"""The task catalog: ProgramBench's own task data, as installed with the `programbench` package.

Reading it from the package (not a hand-typed table) keeps preparation, launch and evaluation on
the same task list and image names the evaluator uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

CLEANROOM_TAG = "task_cleanroom_v6"


@dataclass(frozen=True)
class Task:
    id: str
    repository: str
    language: str | None
    difficulty: str | None

    def cleanroom_image(self, org: str = "programbench", tag: str = CLEANROOM_TAG) -> str:
        """`programbench/<id with "__" -> "_1776_">:task_cleanroom_v6` (REQUIREMENTS 15)."""
        return f"{org}/{self.id.replace('__', '_1776_')}:{tag}"


@lru_cache(maxsize=1)
def tasks() -> dict[str, Task]:
    """Every task ProgramBench ships, by id."""
    from programbench.utils.load_data import load_all_instances

    return {
        row["instance_id"]: Task(
            id=row["instance_id"],
            repository=row.get("repository", ""),
            language=row.get("language"),
            difficulty=row.get("difficulty"),
        )
        for row in load_all_instances(include_tests=False)
    }


def programbench_version() -> str:
    from importlib.metadata import version

    return version("programbench")
