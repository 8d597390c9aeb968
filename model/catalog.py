"""The task catalog: ProgramBench's own task data, as installed with the `programbench` package.

Reading it from the package (not a hand-typed table) keeps preparation, launch and evaluation on the same task
list the evaluator uses.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def tasks() -> frozenset[str]:
    """Every task id ProgramBench ships."""
    from programbench.utils.load_data import load_all_instances

    return frozenset(row["instance_id"] for row in load_all_instances(include_tests=False))
