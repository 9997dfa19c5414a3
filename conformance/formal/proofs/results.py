"""What a proof gives back, and its one-line-per-result summary. Kept apart from the package's
``run_all``, which imports the proofs, so that the proofs and the package do not import each
other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROVED = "proved"
VIOLATED = "violated"
MEASURED = "measured"  # a distribution over sampled cases, not a proof


@dataclass(frozen=True)
class ProofResult:
    name: str  # what was checked: an assignor ("sticky", "broken-range"), "fencing", ...
    property: str  # the property's name (ExactlyOneOwner, NoWriteWithStaleVersion, ...)
    verdict: str  # PROVED, VIOLATED, or MEASURED
    checked: int  # inputs checked (enumerated), inputs covered (symbolic), k (induction), cases
    seconds: float  # CPU seconds spent on this check (summed over worker processes)
    counterexample: dict[str, Any] | None = None
    method: str = ""  # "z3 symbolic", "enumerated", "k-induction", "z3 Optimize", ...
    expected: str = PROVED  # what the check should give: VIOLATED for the broken variants
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.expected


def summary(results: list[ProofResult], wall_seconds: float | None = None) -> str:
    """One line per result, for people."""
    lines = []
    for r in results:
        mark = "ok " if r.as_expected else "!! "
        extra = f" expected {r.expected}" if not r.as_expected else ""
        lines.append(
            f"{mark}{r.name:<28} {r.property:<34} {r.verdict:<9} {r.method:<14} "
            f"n={r.checked:<9} {r.seconds:7.2f}s{extra}"
        )
    if wall_seconds is not None:
        lines.append(f"total wall time {wall_seconds:.1f}s")
    return "\n".join(lines)
