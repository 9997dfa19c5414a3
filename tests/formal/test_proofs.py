"""The z3 proofs (conformance/formal/proofs): each real assignor is valid and balanced for every
input within the CI bounds, each broken variant gives a counterexample that really breaks
the property when replayed, the fencing invariants are proved by k-induction (and fail,
with a replayable trace, for broken stores), and the optimal-stickiness comparison runs."""

from __future__ import annotations

import dataclasses
import random

import pytest

from coordspec.conformance.formal.proofs import PROVED, VIOLATED, fencing, run_all, stickiness
from coordspec.conformance.formal.proofs import assignor_validity as av
from coordspec.reference.assignors import ASSIGNORS
from coordspec.reference.consumer_protocol import Subscription

# Groups of 1-3 members, 3 topics of 1-3 partitions: every input, in seconds.
CI = av.Bounds(members=3, topics=3, max_partitions=3)
CI_NON_EMPTY = dataclasses.replace(CI, empty_subscriptions=False)


class FirstSubscriberTakesAll:
    """A stand-in assignor: valid (each partition to one subscriber) but never balanced."""

    name = "first-subscriber"

    def assign(self, partitions_per_topic, subscriptions):
        out = {m: [] for m in subscriptions}
        for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
            first = min(m for m, s in subscriptions.items() if topic in s.topics)
            out[first] += [(topic, p) for p in range(partitions_per_topic.get(topic, 0))]
        return out


def by_property(results):
    return {r.property: r for r in results}


def assert_replays(assignor, result):
    """The counterexample is real: the assignor, run on its input, gives the reported
    assignment, and that assignment breaks the property."""
    cex = result.counterexample
    assert cex is not None
    out, violated = av.replay(assignor, cex)
    assert {m: sorted(tps) for m, tps in out.items()} == {
        m: sorted(map(tuple, tps)) for m, tps in cex["assignment"].items()
    }
    assert result.property in violated


# --- assignor validity: the symbolic proofs ---------------------------------------------------


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_symbolic_assignor_is_valid_and_balanced_for_every_input(name):
    for prop in av.GUARANTEES[name]:
        result = av.prove_symbolic(name, prop, av.Bounds())
        assert result.verdict == PROVED, result.counterexample
        assert result.checked == av.Bounds().symbolic_inputs() == 6560 * 216


def test_range_is_not_balanced_across_topics():
    """Kafka promises range balance per topic only: z3 finds the group it does not balance."""
    result = av.prove_symbolic("range", av.BALANCED, CI, expected=VIOLATED)
    assert result.verdict == VIOLATED
    assert_replays(ASSIGNORS["range"], result)
    sizes = sorted(len(tps) for tps in result.counterexample["assignment"].values())
    assert sizes[-1] - sizes[0] >= 2


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_encoding_matches_the_code(name):
    result = av.differential_check(name, ASSIGNORS[name], CI)
    assert result.verdict == PROVED, result.counterexample
    assert (
        result.checked == 2 * (9**3 - 1) + 3 * 27
    )  # every group and subscription twice, then every count


def test_differential_check_catches_an_encoding_that_is_not_the_code():
    result = av.differential_check("range", av.RangeDroppingRemainder(), CI)
    assert result.verdict == VIOLATED
    cex = result.counterexample
    assert cex["assignment"] != cex["model_assignment"]


@pytest.mark.parametrize("name", ["broken-range", "broken-roundrobin"])
def test_broken_symbolic_assignor_gives_a_real_counterexample(name):
    assignor, prop = av.BROKEN[name]
    result = av.prove_symbolic(name, prop, CI, expected=VIOLATED)
    assert result.verdict == VIOLATED
    assert result.counterexample["code_assignment"] == result.counterexample["assignment"]
    assert_replays(assignor, result)


# --- assignor validity: the enumeration -------------------------------------------------------


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_enumerated_assignor_is_valid_and_balanced_for_every_input(name):
    results = av.start_enumerated(name, ASSIGNORS[name], CI_NON_EMPTY)()
    assert [r.verdict for r in results] == [PROVED] * 3, [r.counterexample for r in results]
    assert all(r.checked == CI_NON_EMPTY.enumerated_inputs() for r in results)


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_empty_subscriptions_break_only_owner_subscribes(name):
    results = by_property(av.start_enumerated(name, ASSIGNORS[name], CI)())
    assert results[av.EXACTLY_ONE_OWNER].verdict == PROVED
    assert results[av.BALANCED].verdict == PROVED
    owner = results[av.OWNER_SUBSCRIBES]
    assert_replays(ASSIGNORS[name], owner)
    assert owner.counterexample["subscriptions"] == {"m0": [], "m1": ["t0"]}
    # Declared as Kafka's behaviour, and only that: every member subscribing to something keeps it.
    assert owner.as_expected and owner.details["kafka_behaviour"]
    assert owner.details["inputs_violating_with_every_member_subscribed"] == 0


def test_broken_sticky_gives_a_real_counterexample():
    assignor, prop = av.BROKEN["broken-sticky"]
    result = av.find_counterexample("broken-sticky", assignor, prop, CI)
    assert result.verdict == VIOLATED
    assert_replays(assignor, result)
    assert all(result.counterexample["subscriptions"].values())  # not the empty-subscription quirk
    _, violated = av.replay(ASSIGNORS["sticky"], result.counterexample)
    assert not violated  # the real sticky assignor gets this input right


def test_enumeration_catches_a_stand_in_that_never_balances():
    results = by_property(
        av.start_enumerated(
            "first-subscriber", FirstSubscriberTakesAll(), CI, props=av.GUARANTEES["roundrobin"]
        )()
    )
    assert results[av.EXACTLY_ONE_OWNER].verdict == PROVED
    assert results[av.OWNER_SUBSCRIBES].verdict == PROVED
    assert_replays(FirstSubscriberTakesAll(), results[av.BALANCED])
    assert results[av.BALANCED].counterexample["members"] == ["m0", "m1"]


def test_the_member_renaming_the_enumeration_relies_on():
    assert av.member_renaming_is_sound(av.Bounds(members=10))
    # and, on a sample, the sticky assignors really treat any subset as the prefix it renames
    rng = random.Random(0)
    choices = av.Bounds().subscription_choices()
    for _ in range(300):
        k = rng.randint(1, 4)
        subset = sorted(rng.sample(av.Bounds().member_ids, k))
        topics = [rng.choice(choices) for _ in range(k)]
        ppt = {t: rng.randint(1, 6) for t in av.Bounds().topic_names}
        for name in ("sticky", "cooperative-sticky"):
            prefix = ASSIGNORS[name].assign(
                ppt, {f"m{i}": Subscription(t) for i, t in enumerate(topics)}
            )
            renamed = ASSIGNORS[name].assign(
                ppt, {m: Subscription(t) for m, t in zip(subset, topics, strict=True)}
            )
            assert renamed == {subset[int(m[1:])]: tps for m, tps in prefix.items()}


def test_topic_renaming_is_not_a_symmetry_of_sticky():
    """Why the enumeration does not reduce by renaming topics."""
    sticky = ASSIGNORS["sticky"]
    subs = {"m0": ("t0",), "m1": ("t1",), "m2": ("t0", "t1")}
    swap = {"t0": "t1", "t1": "t0", "t2": "t2"}
    out = sticky.assign({"t0": 2, "t1": 2, "t2": 1}, {m: Subscription(t) for m, t in subs.items()})
    swapped = sticky.assign(
        {"t0": 2, "t1": 2, "t2": 1},
        {m: Subscription(tuple(sorted(swap[x] for x in t))) for m, t in subs.items()},
    )
    assert {m: sorted((swap[t], p) for t, p in tps) for m, tps in out.items()} != swapped


def test_violated_properties_on_hand_made_assignments():
    ppt = {"t0": 2, "t1": 1}
    subs = {"a": Subscription(("t0",)), "b": Subscription(("t0", "t1"))}
    assert (
        av.violated_properties(ppt, subs, {"a": [("t0", 0)], "b": [("t0", 1), ("t1", 0)]}) == set()
    )
    assert av.violated_properties(ppt, subs, {"a": [("t0", 0)], "b": [("t1", 0)]}) == {
        av.EXACTLY_ONE_OWNER
    }
    assert av.violated_properties(ppt, subs, {"a": [("t0", 0), ("t1", 0)], "b": [("t0", 1)]}) == {
        av.OWNER_SUBSCRIBES
    }
    same = {"a": Subscription(("t0", "t1")), "b": Subscription(("t0", "t1"))}
    assert av.violated_properties(ppt, same, {"a": [("t0", 0), ("t0", 1), ("t1", 0)], "b": []}) == {
        av.BALANCED,
        av.BALANCED_PER_TOPIC,
    }


# --- fencing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3])
def test_fencing_invariants_are_proved_by_k_induction(k):
    results = by_property(fencing.prove(fencing.CORRECT, k=k))
    for name in fencing.INVARIANTS + fencing.LEMMAS:
        assert results[name].verdict == PROVED, results[name].counterexample
    assert results[fencing.NO_WRITE_WITH_STALE_VERSION].details["lemmas"] == dict.fromkeys(
        fencing.LEMMAS, PROVED
    )
    # ControllerEpochMonotonic needs the lemmas: on its own it is not k-inductive.
    assert not any(results[fencing.CONTROLLER_EPOCH_MONOTONIC].details["inductive_alone"].values())


@pytest.mark.parametrize("variant", [fencing.UNCONDITIONAL_WRITE, fencing.NO_EPOCH_CHECK])
def test_broken_store_gives_a_trace_that_replays(variant):
    for result in fencing.prove(variant, k=2):
        assert result.verdict == fencing.EXPECTED[variant][result.property], result.counterexample
        if result.verdict != VIOLATED:
            continue
        trace = result.counterexample["trace"]
        faithful, violated = fencing.replay(trace, variant)
        assert faithful and result.property in violated
        # The same steps are impossible on the correct store: the bug is what allows them.
        faithful_on_correct, _ = fencing.replay(trace, fencing.CORRECT)
        assert not faithful_on_correct


def test_concrete_store_fences_a_stale_controller():
    store = fencing.ConcreteStore()
    assert store.step(fencing.ELECT_CONTROLLER, 1)
    assert store.step(fencing.ELECT_CONTROLLER, 2)
    assert store.step(fencing.CONTROLLER_WRITE, 2, 7)
    assert store.step(fencing.READ, 1)
    assert not store.step(fencing.CONTROLLER_WRITE, 1, 8)  # a newer controller exists
    assert (store.value, store.zk_version, store.controller_epoch) == (7, 1, 2)
    assert not store.violated()


# --- stickiness -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cases():
    return stickiness.generate_cases(12, seed=1)


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_optimum_is_valid_balanced_and_never_moves_more(name, cases):
    assert len(cases) == 12
    for case in cases:
        outcome = stickiness.compare(name, case)
        optimum = outcome["optimum"]
        assert stickiness.valid(case, optimum) and stickiness.sticky_balanced(optimum, case.after)
        assert outcome["assignor_valid"] and outcome["assignor_balanced"], outcome
        assert outcome["optimal_moves"] <= outcome["assignor_moves"]
        assert outcome["never_worse"]


def test_optimum_keeps_everything_when_nothing_has_to_move():
    case = stickiness.Case(
        {"t0": 4}, {"m0": ("t0",), "m1": ("t0",)}, {"m0": ("t0",), "m1": ("t0",)}
    )
    previous = {"m0": [("t0", 0), ("t0", 1)], "m1": [("t0", 2), ("t0", 3)]}
    optimum, moved = stickiness.optimal_assignment(case, previous)
    assert (optimum, moved) == (previous, 0)


def test_optimum_moves_what_balance_requires():
    # m2 joins three members holding two partitions each: it must take one from someone.
    case = stickiness.Case(
        {"t0": 6},
        {m: ("t0",) for m in ("m0", "m1", "m2")},
        {m: ("t0",) for m in ("m0", "m1", "m2", "m3")},
    )
    previous = {
        "m0": [("t0", 0), ("t0", 1)],
        "m1": [("t0", 2), ("t0", 3)],
        "m2": [("t0", 4), ("t0", 5)],
    }
    optimum, moved = stickiness.optimal_assignment(case, previous)
    assert moved == 1 and sorted(len(v) for v in optimum.values()) == [1, 1, 2, 2]


def test_ratio_and_distribution():
    assert (
        stickiness.ratio(0, 0) == 1.0
        and stickiness.ratio(3, 2) == 1.5
        and stickiness.ratio(1, 0) == float("inf")
    )
    d = stickiness.distribution([1.0] * 9 + [2.0])
    assert d == {"mean": 1.1, "median": 1.0, "p90": 1.0, "max": 2.0, "count": 10}


# --- everything together ------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_run_all_at_small_bounds(workers):
    results = run_all(
        validity_bounds=av.Bounds(members=2, topics=2, max_partitions=2),
        stickiness_cases=4,
        fencing_k=1,
        workers=workers,
    )
    assert [r for r in results if not r.as_expected] == []
    kafka_behaviour = {(r.name, r.property) for r in results if r.details.get("kafka_behaviour")}
    assert kafka_behaviour == {
        ("sticky", av.OWNER_SUBSCRIBES),
        ("cooperative-sticky", av.OWNER_SUBSCRIBES),
    }
    names = {r.name for r in results}
    assert {
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
        "broken-range",
        "broken-roundrobin",
        "broken-sticky",
        "fencing",
        "broken-unconditional-write",
        "broken-no-epoch-check",
    } <= names
