"""Optimal stickiness: how far the sticky assignors are from the fewest possible moves.

``optimal_assignment`` asks z3's Optimize for the assignment that

- is valid: every partition of a subscribed topic goes to exactly one member subscribed to
  its topic (ExactlyOneOwner and OwnerSubscribes of ``assignor_validity``);
- is balanced in the sense the sticky assignors guarantee (Kafka's
  ``AbstractStickyAssignor.isBalanced``): no member could take a partition of one of its
  topics from a member holding two or more partitions more than it. With identical
  subscriptions this is "counts differ by at most one";
- and, among those, moves the fewest partitions: a partition *moves* when its previous
  owner is still a member and ends up without it (a forced move, because the owner
  dropped the topic, counts too; partitions of members that left do not count).

``compare`` runs an assignor over one ``Case``: a first rebalance with no previous
ownership (``before``), then a membership change (members join or leave, subscriptions
change: ``after``) rebalanced with the first assignment as the previous one, and counts
the assignor's moves against the optimum. Sticky (eager) carries the previous assignment
in its user data; cooperative-sticky carries it in ``owned_partitions`` and withholds the
partitions that change owner, which their owners then revoke, so the group rebalances
again; a partition counts as moved when the assignment the group settles on gives it to a
different member (second rebalance included).

The ratio per case is assignor moves / optimal moves, with 0/0 = 1 and x/0 = inf for x > 0.
Because a valid, balanced assignor result is a candidate of the optimisation, the optimum
never moves more than an assignor whose result is valid and balanced; each case checks
both (OptimumNeverWorse).

Cases come from Hypothesis (``generate_cases``): 3 topics of 1..6 partitions, 1..5
members m0.. subscribing to non-empty sets of topics, then 1..3 changes. Subscriptions are
never empty here: the sticky assignors assign partitions to a member with an empty
subscription in some groups (see ``assignor_validity``), which would make their result
invalid for reasons unrelated to stickiness.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import z3

from coordspec.conformance.formal.proofs.results import MEASURED, PROVED, VIOLATED, ProofResult
from coordspec.reference.assignors import ASSIGNORS
from coordspec.reference.assignors.base import Assignment, Assignor, TopicPartition
from coordspec.reference.assignors.cooperative_sticky import (
    encode_user_data as cooperative_user_data,
)
from coordspec.reference.assignors.sticky import encode_user_data as sticky_user_data
from coordspec.reference.consumer_protocol import Subscription, TopicPartitions

OPTIMUM_NEVER_WORSE = "OptimumNeverWorse"
MOVEMENT_RATIO = "MovementRatio"
GOAL = 1.2  # sticky should stay within 1.2x of the optimum on average
MAX_COOPERATIVE_ROUNDS = 5


@dataclass(frozen=True)
class Case:
    partitions_per_topic: dict[str, int]
    before: dict[str, tuple[str, ...]]  # member -> topics, first rebalance
    after: dict[str, tuple[str, ...]]  # member -> topics, the measured rebalance

    def partitions(self, members: Mapping[str, Sequence[str]]) -> list[TopicPartition]:
        subscribed = sorted({t for ts in members.values() for t in ts})
        return [(t, p) for t in subscribed for p in range(self.partitions_per_topic.get(t, 0))]


# --- the validity and balance the sticky assignors promise ------------------------------


def sticky_balanced(
    assignment: Mapping[str, Sequence[TopicPartition]], topics: Mapping[str, Sequence[str]]
) -> bool:
    """Kafka's isBalanced: no member subscribed to a partition's topic holds two or more
    partitions fewer than the partition's owner."""
    size = {m: len(tps) for m, tps in assignment.items()}
    for owner, tps in assignment.items():
        for t, _ in tps:
            if any(t in topics[m] and size[owner] > size[m] + 1 for m in assignment if m != owner):
                return False
    return True


def valid(case: Case, assignment: Mapping[str, Sequence[TopicPartition]]) -> bool:
    expected = case.partitions(case.after)
    got = [tp for tps in assignment.values() for tp in tps]
    return (
        set(assignment) == set(case.after)
        and sorted(got) == sorted(expected)
        and all(t in case.after[m] for m, tps in assignment.items() for t, _ in tps)
    )


def moves(
    previous: Mapping[str, Sequence[TopicPartition]], final: Mapping[str, Sequence[TopicPartition]]
) -> int:
    """Partitions whose previous owner is still a member but does not own them in ``final``."""
    return sum(
        1 for m, tps in previous.items() if m in final for tp in tps if tp not in set(final[m])
    )


# --- the optimum ------------------------------------------------------------------------------


def optimal_assignment(
    case: Case, previous: Mapping[str, Sequence[TopicPartition]]
) -> tuple[dict[str, list[TopicPartition]], int]:
    """The valid, sticky-balanced assignment for ``case.after`` that moves the fewest
    partitions away from their ``previous`` owners, and that number."""
    members = list(case.after)
    partitions = case.partitions(case.after)
    eligible = {m: [tp for tp in partitions if tp[0] in case.after[m]] for m in members}
    x = {(m, tp): z3.Bool(f"{m}_gets_{tp[0]}_{tp[1]}") for m in members for tp in eligible[m]}
    size = {
        m: z3.Sum([z3.If(x[m, tp], 1, 0) for tp in eligible[m]]) if eligible[m] else z3.IntVal(0)
        for m in members
    }
    opt = z3.Optimize()
    for tp in partitions:
        opt.add(z3.PbEq([(x[m, tp], 1) for m in members if (m, tp) in x], 1))
    for tp in partitions:
        holders = [m for m in members if (m, tp) in x]
        for owner in holders:
            for other in holders:
                if other != owner:
                    opt.add(z3.Implies(x[owner, tp], size[owner] <= size[other] + 1))
    owner_before = {tp: m for m, tps in previous.items() if m in case.after for tp in tps}
    moved = [
        z3.Not(x[m, tp]) if (m, tp) in x else z3.BoolVal(True)
        for tp, m in owner_before.items()
        if tp in set(partitions)
    ]
    # A previous owner's partition that no longer exists (its topic is gone) is not a move.
    objective = z3.Sum([z3.If(b, 1, 0) for b in moved]) if moved else z3.IntVal(0)
    opt.minimize(objective)
    if opt.check() != z3.sat:
        raise RuntimeError(f"no valid balanced assignment for {case}")
    model = opt.model()
    result = {
        m: sorted(
            tp for tp in eligible[m] if z3.is_true(model.eval(x[m, tp], model_completion=True))
        )
        for m in members
    }
    return result, moves(_live(previous, case, partitions), result)


def _live(
    previous: Mapping[str, Sequence[TopicPartition]],
    case: Case,
    partitions: Sequence[TopicPartition],
) -> dict:
    """The previous assignment restricted to surviving members and existing partitions."""
    exists = set(partitions)
    return {m: [tp for tp in tps if tp in exists] for m, tps in previous.items() if m in case.after}


# --- running an assignor through a membership change ---------------------------------------


def _grouped(partitions: Sequence[TopicPartition]) -> tuple[TopicPartitions, ...]:
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        by_topic.setdefault(t, []).append(p)
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())


def _subscriptions(
    assignor_name: str,
    members: Mapping[str, Sequence[str]],
    owned: Mapping[str, Sequence[TopicPartition]],
    generation: int,
) -> dict[str, Subscription]:
    out = {}
    for m in sorted(members):
        topics = tuple(members[m])
        if m not in owned:
            out[m] = Subscription(topics)  # a new member: owns nothing, no generation
        elif assignor_name == "cooperative-sticky":
            out[m] = Subscription(
                topics, cooperative_user_data(generation), _grouped(owned[m]), generation
            )
        else:
            out[m] = Subscription(topics, sticky_user_data(sorted(owned[m]), generation))
    return out


def rebalance(
    assignor_name: str,
    assignor: Assignor,
    case: Case,
    previous: Mapping[str, Sequence[TopicPartition]],
) -> tuple[Assignment, int]:
    """The assignment the group settles on after ``case.after`` joins with ``previous``
    owned, and how many rebalances that took. Cooperative members revoke what they own
    but were not assigned, and rejoin while anything was revoked."""
    owned = {m: list(tps) for m, tps in previous.items() if m in case.after}
    generation = 1
    for rounds in range(1, MAX_COOPERATIVE_ROUNDS + 1):
        result = assignor.assign(
            case.partitions_per_topic, _subscriptions(assignor_name, case.after, owned, generation)
        )
        revoked = any(set(owned.get(m, ())) - set(result[m]) for m in result)
        if assignor_name != "cooperative-sticky" or not revoked:
            return result, rounds
        owned = {m: list(tps) for m, tps in result.items()}
        generation += 1
    raise RuntimeError(
        f"{assignor_name} did not settle in {MAX_COOPERATIVE_ROUNDS} rebalances: {case}"
    )


def compare(assignor_name: str, case: Case) -> dict[str, Any]:
    """One case: the assignor's moves, the optimum's, and whether the optimum is never worse."""
    assignor = ASSIGNORS[assignor_name]
    start = time.process_time()
    first = assignor.assign(
        case.partitions_per_topic,
        {m: Subscription(tuple(ts)) for m, ts in sorted(case.before.items())},
    )
    final, rounds = rebalance(assignor_name, assignor, case, first)
    partitions = case.partitions(case.after)
    assignor_moves = moves(_live(first, case, partitions), final)
    optimum, optimal_moves = optimal_assignment(case, first)
    final_valid = valid(case, final)
    final_balanced = sticky_balanced(final, case.after)
    optimum_ok = valid(case, optimum) and sticky_balanced(optimum, case.after)
    never_worse = optimum_ok and (
        optimal_moves <= assignor_moves or not (final_valid and final_balanced)
    )
    return {
        "case": case,
        "first": first,
        "final": {m: sorted(tps) for m, tps in final.items()},
        "optimum": optimum,
        "assignor_moves": assignor_moves,
        "optimal_moves": optimal_moves,
        "ratio": ratio(assignor_moves, optimal_moves),
        "rebalances": rounds,
        "assignor_valid": final_valid,
        "assignor_balanced": final_balanced,
        "optimum_valid_and_balanced": optimum_ok,
        "never_worse": never_worse,
        "seconds": time.process_time() - start,
    }


def ratio(assignor_moves: int, optimal_moves: int) -> float:
    if optimal_moves == 0:
        return 1.0 if assignor_moves == 0 else float("inf")
    return assignor_moves / optimal_moves


def distribution(ratios: Sequence[float]) -> dict[str, float]:
    """mean, median, p90, max and count (inf if any case moved partitions when none had to)."""
    ordered = sorted(ratios)
    if not ordered:
        return {"count": 0}
    p90 = ordered[min(len(ordered) - 1, max(0, -(-9 * len(ordered) // 10) - 1))]  # nearest rank
    return {
        "mean": statistics.fmean(ordered) if ordered[-1] != float("inf") else float("inf"),
        "median": statistics.median(ordered),
        "p90": p90,
        "max": ordered[-1],
        "count": len(ordered),
    }


# --- cases ---------------------------------------------------------------------------------


def generate_cases(
    count: int, seed: int = 0, max_members: int = 5, topics: int = 3, max_partitions: int = 6
) -> list[Case]:
    """``count`` membership changes drawn by Hypothesis (reproducible for a seed)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    names = [f"t{i}" for i in range(topics)]
    subscription = st.sets(st.sampled_from(names), min_size=1).map(lambda s: tuple(sorted(s)))
    cases: list[Case] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        if len(cases) >= count:
            return
        ppt = {t: data.draw(st.integers(1, max_partitions), label=t) for t in names}
        size = data.draw(st.integers(1, max_members), label="members")
        before = {f"m{i}": data.draw(subscription, label=f"m{i}") for i in range(size)}
        after = dict(before)
        next_id = size
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            kind = data.draw(st.sampled_from(["join", "leave", "resubscribe"]), label="change")
            if kind == "join" and len(after) < max_members + 1:
                after[f"m{next_id}"] = data.draw(subscription, label="joiner")
                next_id += 1
            elif kind == "leave" and len(after) > 1:
                del after[data.draw(st.sampled_from(sorted(after)), label="leaver")]
            else:
                member = data.draw(st.sampled_from(sorted(after)), label="resubscriber")
                after[member] = data.draw(subscription, label="topics")
        cases.append(Case(ppt, before, after))

    draw()
    return cases


def compare_many(assignor_name: str, cases: Sequence[Case]) -> list[dict[str, Any]]:
    return [compare(assignor_name, case) for case in cases]


def summarize(assignor_name: str, outcomes: Sequence[dict[str, Any]]) -> list[ProofResult]:
    seconds = sum(o["seconds"] for o in outcomes)
    ratios = [o["ratio"] for o in outcomes]
    dist = distribution(ratios)
    total_assignor = sum(o["assignor_moves"] for o in outcomes)
    total_optimal = sum(o["optimal_moves"] for o in outcomes)
    bad = [o for o in outcomes if not o["never_worse"]]
    details = {
        "per_case": [
            {
                "assignor_moves": o["assignor_moves"],
                "optimal_moves": o["optimal_moves"],
                "ratio": o["ratio"],
            }
            for o in outcomes
        ],
        "distribution": dist,
        "goal_mean": GOAL,
        "within_goal": dist.get("mean", 1.0) <= GOAL,
        "moves": {"assignor": total_assignor, "optimal": total_optimal},
        "distribution_where_moves_needed": distribution(
            [r for r, o in zip(ratios, outcomes, strict=True) if o["optimal_moves"]]
        ),
        "excess_moves": distribution(
            [float(o["assignor_moves"] - o["optimal_moves"]) for o in outcomes]
        ),
        "zero_optimum_but_moved": sum(
            1 for o in outcomes if o["optimal_moves"] == 0 and o["assignor_moves"]
        ),
        "cases_with_extra_moves": sum(
            1 for o in outcomes if o["assignor_moves"] > o["optimal_moves"]
        ),
        "assignor_invalid": sum(1 for o in outcomes if not o["assignor_valid"]),
        "assignor_unbalanced": sum(1 for o in outcomes if not o["assignor_balanced"]),
        "rebalances": dict(sorted(Counter(o["rebalances"] for o in outcomes).items())),
    }
    worst = max(
        outcomes, key=lambda o: (o["ratio"], o["assignor_moves"] - o["optimal_moves"]), default=None
    )
    if worst is not None:
        details["worst_case"] = _describe(worst)
    never_worse = ProofResult(
        assignor_name,
        OPTIMUM_NEVER_WORSE,
        VIOLATED if bad else PROVED,
        len(outcomes),
        seconds,
        _describe(bad[0]) if bad else None,
        "z3 Optimize",
        PROVED,
    )
    measured = ProofResult(
        assignor_name,
        MOVEMENT_RATIO,
        MEASURED,
        len(outcomes),
        seconds,
        None,
        "z3 Optimize",
        MEASURED,
        details,
    )
    return [never_worse, measured]


def _describe(outcome: Mapping[str, Any]) -> dict[str, Any]:
    case = outcome["case"]
    return {
        "partitions_per_topic": case.partitions_per_topic,
        "before": {m: list(ts) for m, ts in case.before.items()},
        "after": {m: list(ts) for m, ts in case.after.items()},
        "first_assignment": outcome["first"],
        "assignor_assignment": outcome["final"],
        "optimal_assignment": outcome["optimum"],
        "assignor_moves": outcome["assignor_moves"],
        "optimal_moves": outcome["optimal_moves"],
        "assignor_valid": outcome["assignor_valid"],
        "assignor_balanced": outcome["assignor_balanced"],
    }


def start_comparison(
    count: int,
    seed: int = 0,
    executor: Executor | None = None,
    assignors: Sequence[str] = ("sticky", "cooperative-sticky"),
    chunk: int = 10,
) -> Callable[[], list[ProofResult]]:
    """Generate ``count`` cases and compare each assignor on all of them, in ``executor``
    if given; the returned function waits and summarizes."""
    cases = generate_cases(count, seed)
    if executor is None:
        done = [r for name in assignors for r in summarize(name, compare_many(name, cases))]
        return lambda: done
    futures = {
        name: [
            executor.submit(compare_many, name, cases[i : i + chunk])
            for i in range(0, len(cases), chunk)
        ]
        for name in assignors
    }
    return lambda: [
        r
        for name in assignors
        for r in summarize(name, [o for f in futures[name] for o in f.result()])
    ]
