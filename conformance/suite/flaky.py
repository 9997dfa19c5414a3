"""``--loop N``: the runs that passed in some loops and failed in others."""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.conformance.suite.results import RunResult, plan_label


@dataclass(frozen=True)
class Flaky:
    scenario: str
    plan: dict[str, int]
    passed: int  # loops it passed (or only tolerated divergences)
    failed: int  # loops it failed or ended in an error

    def __str__(self) -> str:
        return (
            f"{self.scenario} [{plan_label(self.plan)}]: passed {self.passed}, failed {self.failed}"
        )


def flaky(results: list[RunResult]) -> list[Flaky]:
    """The (scenario, plan)s that passed in some loops and failed in others; one that fails in
    every loop is a divergence, not flaky."""
    tally: dict[tuple, list[int]] = {}
    for r in results:
        if r.status != "not_run":
            count = tally.setdefault((r.scenario, tuple(sorted(r.plan.items()))), [0, 0])
            count[r.status in ("failed", "error")] += 1
    return [
        Flaky(scenario, dict(plan), passed, failed)
        for (scenario, plan), (passed, failed) in tally.items()
        if passed and failed
    ]
