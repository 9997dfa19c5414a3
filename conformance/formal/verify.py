"""``coordspec assign verify``: the z3 proofs about assignors and versioned-write fencing,
with a summary a reviewer can read."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from coordspec.conformance.formal.proofs import MEASURED, ProofResult, run_all, summary
from coordspec.conformance.formal.proofs.assignor_validity import Bounds


def verify(
    members: int,
    topics: int,
    max_partitions: int,
    cases: int,
    k: int,
    workers: int | None,
    seed: int,
    say: Callable[[str], None] = print,
) -> int:
    try:
        bounds = Bounds(members=members, topics=topics, max_partitions=max_partitions)
    except ValueError as exc:
        say(f"coordspec assign verify: {exc}")
        return 2
    say(
        f"assignor validity for every group of up to {members} members, {topics} topics of 1..{max_partitions} "
        f"partitions, any subscriptions; stickiness over {cases} membership changes; fencing by {k}-induction"
    )
    started = time.monotonic()
    results = run_all(
        validity_bounds=bounds,
        stickiness_cases=cases,
        fencing_k=k,
        workers=workers,
        seed=seed,
        progress=lambda line: say(line) or sys.stdout.flush(),
    )
    say(summary(results, time.monotonic() - started))
    for line in notes(results):
        say(line)
    failed = [r for r in results if not r.as_expected]
    say(
        f"coordspec assign verify: {len(results) - len(failed)} passed, {len(failed)} failed"
        + (f" ({', '.join(f'{r.name} {r.property}' for r in failed)})" if failed else "")
    )
    return 1 if failed else 0


def notes(results: list[ProofResult]) -> list[str]:
    lines = []
    for r in results:
        if r.verdict == MEASURED and "distribution" in r.details:
            d = r.details["distribution"]
            goal = r.details["goal_mean"]
            lines.append(
                f"stickiness {r.name}: moves / optimal mean {d['mean']:.3f} (goal <= {goal}), median "
                f"{d['median']}, p90 {d['p90']}, max {d['max']} over {d['count']} cases: "
                f"{'within' if r.details['within_goal'] else 'OUTSIDE'} the goal"
            )
        if r.details.get("kafka_behaviour"):
            lines.append(
                f"Kafka's behaviour, not a reference bug: {r.name} {r.property}: {r.details['kafka_behaviour']} "
                f"(e.g. {r.counterexample['subscriptions']}); with every member subscribed it holds"
            )
    return lines
