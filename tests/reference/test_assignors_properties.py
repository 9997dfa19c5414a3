"""Properties of the four assignors, over Hypothesis-generated groups.

What Kafka guarantees differs per assignor, and the properties say so:
- all: every member appears; no partition goes to two members; a member only gets
  partitions of topics it subscribes to and that exist.
- range, roundrobin, sticky: every partition of a subscribed, known topic is assigned.
  cooperative-sticky may withhold a partition for one rebalance, while its owner revokes it.
- balance: range balances each topic among its subscribers (whatever the subscriptions),
  not the group; roundrobin, sticky and cooperative-sticky balance the group (counts
  differ by at most one) when all subscriptions are identical; with differing
  subscriptions sticky still leaves no partition that could move to a member 2+ lighter.
- sticky, cooperative-sticky: fed back their own assignment with an unchanged group, every
  member keeps what it has (the assignment is a fixed point).
- cooperative-sticky: no partition is assigned to a new owner in the rebalance that
  revokes it from its previous owner, and the follow-up rebalances settle.

The generated groups are the ones Kafka's clients produce: non-empty subscriptions without
repeated topics, and previously owned partitions that exist. Outside that, Kafka's sticky
algorithm has quirks the reference reproduces (see test_assignors_sticky.py).
"""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from coordspec.reference.assignors import ASSIGNORS
from coordspec.reference.assignors.cooperative_sticky import (
    encode_user_data as cooperative_user_data,
)
from coordspec.reference.assignors.sticky import encode_user_data as sticky_user_data
from coordspec.reference.consumer_protocol import Subscription, TopicPartitions

# A third of the profile's examples per property (100 by default): seven properties, and
# generating a group costs a few milliseconds.
examples = settings(max_examples=max(1, settings.default.max_examples // 3))

TOPICS = ["a", "b", "c", "topic1"]
# Member ids chosen so that Java's HashMap order differs from sorted order.
MEMBER_IDS = [
    "consumer1",
    "consumer2",
    "consumer3",
    "consumer4",
    "c0",
    "c1",
    "m-a",
    "m-b",
    "kk",
    "paUnA",
]
TP = tuple[str, int]


def grouped(partitions: list[TP]) -> tuple[TopicPartitions, ...]:
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())


class Group:
    """A generated group: partition counts, and each member's topics, instance id and
    previous assignment (what it owns, at which generation)."""

    def __init__(self, counts, topics_of, instance_of, owned_of, generation):
        self.counts: dict[str, int] = counts
        self.topics_of: dict[str, tuple[str, ...]] = topics_of
        self.instance_of: dict[str, str | None] = instance_of
        self.owned_of: dict[str, list[TP]] = owned_of
        self.generation = generation

    def subscriptions(self, protocol: str) -> dict[str, Subscription]:
        """Subscriptions as a Java member speaking ``protocol`` (subscription v3) sends them."""
        subs = {}
        for member, topics in self.topics_of.items():
            owned = self.owned_of.get(member, [])
            generation = self.generation if member in self.owned_of else -1
            user_data = None
            if protocol == "sticky" and member in self.owned_of:
                user_data = sticky_user_data(owned, generation)
            elif protocol == "cooperative-sticky":
                user_data = cooperative_user_data(generation)
            subs[member] = Subscription(
                topics, user_data, grouped(owned), generation, None, self.instance_of[member]
            )
        return subs

    def with_owned(self, assignment: dict[str, list[TP]], generation: int) -> Group:
        return Group(
            self.counts,
            self.topics_of,
            self.instance_of,
            {m: list(tps) for m, tps in assignment.items()},
            generation,
        )

    def all_partitions(self) -> set[TP]:
        subscribed = {t for ts in self.topics_of.values() for t in ts}
        return {(t, p) for t, n in self.counts.items() if t in subscribed for p in range(n)}


@st.composite
def groups(draw, identical: bool | None = None) -> Group:
    counts = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 7), max_size=len(TOPICS)))
    members = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=7, unique=True))
    topic_sets = st.lists(
        st.sampled_from(TOPICS), min_size=1, max_size=len(TOPICS), unique=True
    ).map(tuple)
    if identical is None:
        identical = draw(st.booleans())
    if identical:
        common = draw(topic_sets)
        topics_of = {m: common for m in members}
    else:
        topics_of = dict(
            zip(
                members,
                draw(st.lists(topic_sets, min_size=len(members), max_size=len(members))),
                strict=True,
            )
        )
    flags = draw(
        st.lists(
            st.tuples(st.booleans(), st.booleans()), min_size=len(members), max_size=len(members)
        )
    )
    instance_of = {
        m: (f"instance-{m}" if static else None)
        for m, (static, _) in zip(members, flags, strict=True)
    }
    # A previous assignment: each existing partition owned by at most one member; members
    # not returning are new to the group (they own nothing and have no generation).
    returning = [m for m, (_, back) in zip(members, flags, strict=True) if back]
    partitions = [(t, p) for t, n in counts.items() for p in range(n)]
    owners = draw(
        st.lists(
            st.integers(-1, len(returning) - 1), min_size=len(partitions), max_size=len(partitions)
        )
    )
    owned_of: dict[str, list[TP]] = {m: [] for m in returning}
    for tp, owner in zip(partitions, owners, strict=True):
        if owner >= 0:
            owned_of[returning[owner]].append(tp)
    return Group(counts, topics_of, instance_of, owned_of, draw(st.integers(1, 5)))


def assign(protocol: str, group: Group):
    """The assignment, and what cooperative-sticky withholds (empty for the others)."""
    assignor = ASSIGNORS[protocol]
    subscriptions = group.subscriptions(protocol)
    if protocol in ("sticky", "cooperative-sticky"):
        outcome = assignor.assign_with_details(group.counts, subscriptions)
        assert outcome.sorted_assignment() == assignor.assign(group.counts, subscriptions)
        return outcome.sorted_assignment(), outcome.withheld
    return assignor.assign(group.counts, subscriptions), {}


def check_valid(group: Group, assignment: dict[str, list[TP]], withheld: dict[TP, str]) -> None:
    assert set(assignment) == set(group.topics_of)
    seen: set[TP] = set()
    for member, tps in assignment.items():
        assert tps == sorted(tps)
        for t, p in tps:
            assert t in group.topics_of[member] and 0 <= p < group.counts[t], (member, (t, p))
            assert (t, p) not in seen, f"{(t, p)} assigned twice"
            seen.add((t, p))
    assert seen | set(withheld) == group.all_partitions()
    assert not seen & set(withheld)


def check_balanced(assignment: dict[str, list[TP]]) -> None:
    sizes = [len(tps) for tps in assignment.values()]
    assert max(sizes) - min(sizes) <= 1, assignment


def with_withheld(assignment: dict[str, list[TP]], withheld: dict[TP, str]) -> dict[str, list[TP]]:
    """The assignment the cooperative assignor aims at: withheld partitions go to their new owner."""
    target = {m: list(tps) for m, tps in assignment.items()}
    for tp, member in withheld.items():
        target[member].append(tp)
    return target


@examples
@given(groups(), st.sampled_from(sorted(ASSIGNORS)))
def test_assignments_are_valid(group, protocol):
    assignment, withheld = assign(protocol, group)
    check_valid(group, assignment, withheld)
    if protocol != "cooperative-sticky":
        assert withheld == {}


@examples
@given(groups())
def test_range_balances_each_topic_among_its_subscribers(group):
    assignment, _ = assign("range", group)
    for topic in group.counts:
        subscribers = [m for m, ts in group.topics_of.items() if topic in ts]
        sizes = [sum(1 for t, _ in assignment[m] if t == topic) for m in subscribers]
        if sizes:
            assert max(sizes) - min(sizes) <= 1


@examples
@given(groups(identical=True), st.sampled_from(["roundrobin", "sticky", "cooperative-sticky"]))
def test_identical_subscriptions_give_a_balanced_group(group, protocol):
    assignment, withheld = assign(protocol, group)
    check_balanced(with_withheld(assignment, withheld))


@examples
@given(groups(identical=False), st.sampled_from(["sticky", "cooperative-sticky"]))
def test_sticky_leaves_no_partition_that_could_move_to_a_lighter_member(group, protocol):
    """Kafka's verifyValidityAndBalance: two members whose counts differ by 2+ were given
    no partitions of a common topic (one could have moved)."""
    target = with_withheld(*assign(protocol, group))
    for m1, tps1 in target.items():
        for m2, tps2 in target.items():
            if len(tps1) >= len(tps2) + 2:
                assert not {t for t, _ in tps1} & {t for t, _ in tps2}, (m1, m2, target)


@examples
@given(groups(), st.sampled_from(["sticky", "cooperative-sticky"]))
def test_an_unchanged_group_keeps_its_assignment(group, protocol):
    fresh = Group(group.counts, group.topics_of, group.instance_of, {}, 1)
    first, withheld = assign(protocol, fresh)
    assert withheld == {}  # nobody owned anything: nothing to revoke first
    again, withheld = assign(protocol, fresh.with_owned(first, 2))
    assert again == first
    assert withheld == {}


@examples
@given(groups(), st.sampled_from(["sticky", "cooperative-sticky"]))
def test_a_settled_assignment_is_a_fixed_point(group, protocol):
    """From any previous ownership: rebalance until nothing is withheld, then once more,
    which must change nothing."""
    assignment, withheld = assign(protocol, group)
    generation = group.generation
    for _ in range(4):
        if not withheld:
            break
        generation += 1
        assignment, withheld = assign(protocol, group.with_owned(assignment, generation))
    assert withheld == {}
    assert assign(protocol, group.with_owned(assignment, generation + 1)) == (assignment, {})


@examples
@given(groups())
def test_cooperative_never_assigns_a_partition_in_the_rebalance_that_revokes_it(group):
    current = group
    for generation in range(group.generation, group.generation + 4):
        assignment, withheld = assign("cooperative-sticky", current)
        added: set[TP] = set()
        revoked: set[TP] = set()
        for member, tps in assignment.items():
            owned = set(current.owned_of.get(member, []))
            added |= set(tps) - owned
            revoked |= owned - set(tps)
        assert not added & revoked
        assert set(withheld) <= revoked  # only partitions being revoked are held back
        if not revoked:
            break
        current = current.with_owned(assignment, generation + 1)
    else:
        raise AssertionError("still revoking after four follow-up rebalances")
