"""The wake ramp and task budgets (docs/requirements.md R29, 30).

Workers wake one after another: `stagger_s` apart for the first `slow_workers`, `fast_stagger_s` apart
after that. A serial settle follows the last wake, then at least `min_wait_s` before kickoff. The ramp
counts against the task's budget, so later workers get less time.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import contract


@dataclass(frozen=True)
class Ramp:
    stagger_s: float = 30.0  # PBENCH_WAKE_STAGGER_S
    fast_stagger_s: float = 3.0  # PBENCH_WAKE_FAST_STAGGER_S
    slow_workers: int = 120  # workers woken at the slow stagger
    settle_s: float = 20.0  # PBENCH_BRINGUP_SETTLE_S
    min_wait_s: float = 60.0  # PBENCH_WAKE_RAMP_SUBJ_S: least wait between settle and kickoff

    def offset(self, n: int) -> float:
        """Seconds after the first wake at which worker n (0-based) wakes."""
        slow = min(n, self.slow_workers)
        return slow * self.stagger_s + max(0, n - self.slow_workers) * self.fast_stagger_s

    def offsets(self, workers: int) -> list[float]:
        return [self.offset(n) for n in range(workers)]

    def kickoff(self, workers: int) -> float:
        """Seconds after the first wake at which the kickoff message goes out."""
        return self.offset(workers - 1) + self.settle_s + self.min_wait_s


@dataclass(frozen=True)
class TaskBudget:
    """One task's clock, in seconds from the first worker's wake."""

    budget_s: float
    kickoff_s: float
    worker_offsets: tuple[float, ...]

    def worker_time(self, n: int) -> float:
        """Time worker n has before the deadline (the ramp eats into it)."""
        return max(0.0, self.budget_s - self.worker_offsets[n])


def budget(ramp: Ramp, workers: int, hours: float) -> TaskBudget:
    return TaskBudget(
        budget_s=float(contract.deadline_s(hours)),
        kickoff_s=ramp.kickoff(workers),
        worker_offsets=tuple(ramp.offsets(workers)),
    )
