"""z3 proofs about Kafka's coordination protocols: properties that hold for every input up
to a bound, or, by induction, for every number of actors and steps.

- ``assignor_validity``: each assignor's output is a valid assignment (ExactlyOneOwner,
  OwnerSubscribes) and balanced as Kafka promises (Balanced, BalancedPerTopic), for every
  group, subscription and partition count within the bounds. Range and roundrobin are
  encoded symbolically and proved by z3; sticky and cooperative-sticky are run on every
  input.
- ``stickiness``: z3's Optimize finds the valid, balanced assignment that moves the fewest
  partitions; the sticky assignors are measured against it on Hypothesis-generated
  membership changes.
- ``fencing``: NoWriteWithStaleVersion and ControllerEpochMonotonic for the versioned
  store behind ISR writes, for any number of writers and writes, by k-induction.

Each check of a deliberately broken variant must come back violated, with a counterexample
that the tests replay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from multiprocessing import get_context

from coordspec.conformance.formal.proofs.results import (
    MEASURED,
    PROVED,
    VIOLATED,
    ProofResult,
    summary,
)

__all__ = ["MEASURED", "PROVED", "VIOLATED", "ProofResult", "run_all", "summary"]


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def run_all(
    validity_bounds=None,
    stickiness_cases: int = 300,
    fencing_k: int = 3,
    workers: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] = lambda line: None,
) -> list[ProofResult]:
    """Every proof at the given bounds (``assignor_validity.Bounds()``: groups of 1-4
    members m0..m3, 3 topics of 1-6 partitions, any subscriptions), the stickiness
    measurement over ``stickiness_cases`` generated membership changes per sticky assignor,
    and the fencing induction at depth ``fencing_k``. Work that splits into independent
    chunks (the enumerations, the stickiness cases) goes to ``workers`` processes while the
    z3 proofs run in this one. ``progress`` hears of each part as it ends."""
    from coordspec.conformance.formal.proofs import assignor_validity, fencing, stickiness

    bounds = validity_bounds or assignor_validity.Bounds()
    workers = default_workers() if workers is None else workers
    executor: Executor | None = None
    if workers > 1:
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
    started = time.monotonic()

    def done(what: str, results: list[ProofResult]) -> list[ProofResult]:
        progress(f"  {what}: {len(results)} results after {time.monotonic() - started:.0f} s")
        return results

    try:
        enumerated = assignor_validity.start_enumerated_proofs(bounds, executor)
        differential = assignor_validity.start_differential_checks(bounds, executor)
        compared = stickiness.start_comparison(stickiness_cases, seed=seed, executor=executor)
        results = done("symbolic assignor proofs (z3)", assignor_validity.symbolic_proofs(bounds))
        fenced = done(f"fencing by {fencing_k}-induction (z3)", fencing.prove_all(k=fencing_k))
        results += done("sticky assignors on every input", differential())
        results += done("enumerated assignor checks", enumerated())
        results += done("stickiness against z3's optimum", compared())
        results += fenced
    finally:
        if executor is not None:
            executor.shutdown()
    return results
