"""Kafka's tests of the server-side uniform assignor, ported scenario by scenario:
OptimizedUniformAssignmentBuilderTest (the homogeneous builder) and
UniformHeterogeneousAssignmentBuilderTest.

Kafka's heterogeneous tests iterate members in sorted order and its topic ids sort as
the topic names do, so their layouts are deterministic and are asserted as they are. Three
homogeneous tests expect a layout that depends on the order in which Java's ``HashSet``
happened to iterate two topic ids (topic3 or topic2 before topic1). Their ports assert
what holds for every order (the counts, what each member keeps, validity), the layout for
the reference's order (topic names ascending), and Kafka's layout when the topics are
renamed so that the reference's order is the one Kafka's run took (``in_kafka_order``).

Adapted: the ``*NonexistentTopic*`` tests expect an exception because the describer lacks
a topic id the subscription holds. Here subscriptions are names resolved against the
same ``topics`` mapping, and an unknown name is dropped, as Kafka's ``TopicIds`` drops a
name the metadata image lacks, so those members get nothing. Kafka's assignor returns no
entry for a member with nothing; the reference returns the member with ``{}``.
"""

from __future__ import annotations

import pytest

from coordspec.reference.assignors.server import GroupSpec, MemberSpec, SubscriptionType
from coordspec.reference.assignors.server.uniform import assign
from coordspec.reference.errors import UsageError

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
HETEROGENEOUS = SubscriptionType.HETEROGENEOUS
T1, T2, T3, T4 = "topic1", "topic2", "topic3", "topic4"
Layout = dict[str, dict[str, set[int]]]


def member(*topics: str, **assignment: list[int]) -> MemberSpec:
    """A member subscribed to ``topics``; ``topic1=[0, 2]`` is its current assignment."""
    return MemberSpec(frozenset(topics), {t: frozenset(ps) for t, ps in assignment.items()})


def run(topics: dict[str, int], members: dict[str, MemberSpec], kind: SubscriptionType) -> Layout:
    result = assign(GroupSpec(members, topics, kind))
    assert_valid(topics, members, result)
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


def assert_valid(
    topics: dict[str, int],
    members: dict[str, MemberSpec],
    result: dict[str, dict[str, frozenset[int]]],
) -> None:
    """Kafka's checkValidityAndBalance, less the balance, plus completeness: every member
    is present, partitions go only to subscribers, and every subscribed partition of an
    existing topic goes to exactly one member."""
    assert set(result) == set(members)
    given = [(t, p) for m, a in result.items() for t, ps in a.items() for p in ps]
    assert len(given) == len(set(given))
    for m, a in result.items():
        assert all(ps and t in members[m].subscribed_topics for t, ps in a.items())
    subscribed = {t for s in members.values() for t in s.subscribed_topics if t in topics}
    assert set(given) == {(t, p) for t in subscribed for p in range(topics[t])}


def counts(layout: Layout) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in layout.items()}


def kept(layout: Layout, members: dict[str, MemberSpec]) -> dict[str, set[tuple[str, int]]]:
    """What each member still has of its current assignment."""
    return {
        m: {(t, p) for t, ps in s.assignment.items() for p in ps if p in layout[m].get(t, ())}
        for m, s in members.items()
    }


def in_kafka_order(first: str, topics: dict[str, int], members: dict[str, MemberSpec]) -> Layout:
    """The homogeneous layout when ``first`` is iterated before the other topics, as in the
    Kafka run the test's expectation comes from: ``first`` is renamed to sort first."""
    alias = "0-" + first

    def rename(topic: str) -> str:
        return alias if topic == first else topic

    renamed = {
        m: MemberSpec(
            frozenset(map(rename, s.subscribed_topics)),
            {rename(t): ps for t, ps in s.assignment.items()},
        )
        for m, s in members.items()
    }
    layout = run({rename(t): n for t, n in topics.items()}, renamed, HOMOGENEOUS)
    return {m: {first if t == alias else t: ps for t, ps in a.items()} for m, a in layout.items()}


def assert_balanced(layout: Layout) -> None:
    assert max(counts(layout).values()) - min(counts(layout).values()) <= 1


# --- OptimizedUniformAssignmentBuilderTest (homogeneous) ---


def test_one_member_no_topic_subscription():
    """OptimizedUniformAssignmentBuilderTest.testOneMemberNoTopicSubscription"""
    assert run({T1: 3}, {"A": member()}, HOMOGENEOUS) == {"A": {}}


def test_one_member_subscribed_to_nonexistent_topic():
    """OptimizedUniformAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic
    (adapted: the unknown name is dropped, see the module docstring)."""
    assert run({T1: 3}, {"A": member(T2)}, HOMOGENEOUS) == {"A": {}}


def test_first_assignment_two_members_two_topics_no_member_racks():
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks

    Kafka's run iterated topic3 before topic1 and expects A: topic1 0, topic3 0-1; with
    topic1 first, the same quotas give A the whole of topic1."""
    layout = run({T1: 3, T3: 2}, {"A": member(T1, T3), "B": member(T1, T3)}, HOMOGENEOUS)
    assert counts(layout) == {"A": 3, "B": 2}  # the first member in order gets the extra one
    assert layout == {"A": {T1: {0, 1, 2}}, "B": {T3: {0, 1}}}
    assert in_kafka_order(T3, {T1: 3, T3: 2}, {"A": member(T1, T3), "B": member(T1, T3)}) == {
        "A": {T1: {0}, T3: {0, 1}},
        "B": {T1: {1, 2}},
    }


def test_first_assignment_num_members_greater_than_total_num_partitions():
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions"""
    members = {m: member(T3) for m in "ABC"}
    assert run({T3: 2}, members, HOMOGENEOUS) == {"A": {T3: {0}}, "B": {T3: {1}}, "C": {}}


def test_validity_and_balance_for_large_sample_set():
    """OptimizedUniformAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet"""
    topics = {f"topic-{i}": 3 for i in range(1, 100)}
    members = {f"member{i}": member(*topics) for i in range(1, 50)}
    assert_balanced(run(topics, members, HOMOGENEOUS))


def test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment"""
    members = {
        "A": member(T1, T2, topic1=[0, 1], topic2=[0, 1]),
        "B": member(T1, T2, topic1=[2], topic2=[2]),
    }
    assert run({T1: 3, T2: 3}, members, HOMOGENEOUS) == {
        "A": {T1: {0, 1}, T2: {0}},
        "B": {T1: {2}, T2: {1, 2}},
    }


def test_reassignment_when_partitions_are_added_for_two_members_two_topics():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics

    Kafka's run dealt the new partitions of topic2 first (A: topic1 3, topic2 3-4; B:
    topic1 4-5); with topic1 first, A takes the new partitions of topic1."""
    members = {
        "A": member(T1, T2, topic1=[0, 2], topic2=[0]),
        "B": member(T1, T2, topic1=[1], topic2=[1, 2]),
    }
    layout = run({T1: 6, T2: 5}, members, HOMOGENEOUS)
    assert counts(layout) == {"A": 6, "B": 5}
    assert kept(layout, members) == {
        "A": {(T1, 0), (T1, 2), (T2, 0)},
        "B": {(T1, 1), (T2, 1), (T2, 2)},
    }
    assert layout == {"A": {T1: {0, 2, 3, 4, 5}, T2: {0}}, "B": {T1: {1}, T2: {1, 2, 3, 4}}}
    assert in_kafka_order(T2, {T1: 6, T2: 5}, members) == {
        "A": {T1: {0, 2, 3}, T2: {0, 3, 4}},
        "B": {T1: {1, 4, 5}, T2: {1, 2}},
    }


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics"""
    members = {
        "A": member(T1, T2, topic1=[0, 2], topic2=[0]),
        "B": member(T1, T2, topic1=[1], topic2=[1, 2]),
        "C": member(T1, T2),
    }
    assert run({T1: 3, T2: 3}, members, HOMOGENEOUS) == {
        "A": {T1: {0, 2}},
        "B": {T1: {1}, T2: {1}},
        "C": {T2: {0, 2}},
    }


def test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_two_topics():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics

    The removed member's topic1 2 and topic2 2 are dealt to A then B; Kafka's run had
    topic2 first (A: topic2 2), the reference has topic1 first."""
    members = {
        "A": member(T1, T2, topic1=[0], topic2=[0]),
        "B": member(T1, T2, topic1=[1], topic2=[1]),
    }
    layout = run({T1: 3, T2: 3}, members, HOMOGENEOUS)
    assert counts(layout) == {"A": 3, "B": 3}
    assert kept(layout, members) == {"A": {(T1, 0), (T2, 0)}, "B": {(T1, 1), (T2, 1)}}
    assert layout == {"A": {T1: {0, 2}, T2: {0}}, "B": {T1: {1}, T2: {1, 2}}}
    assert in_kafka_order(T2, {T1: 3, T2: 3}, members) == {
        "A": {T1: {0}, T2: {0, 2}},
        "B": {T1: {1, 2}, T2: {1}},
    }


def test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics"""
    members = {
        "A": member(T2, topic1=[0], topic2=[0]),
        "B": member(T2, topic1=[1], topic2=[1]),
    }
    assert run({T1: 2, T2: 2}, members, HOMOGENEOUS) == {"A": {T2: {0}}, "B": {T2: {1}}}


# --- UniformHeterogeneousAssignmentBuilderTest ---


def test_two_members_no_topic_subscription():
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersNoTopicSubscription"""
    assert run({T1: 3}, {"A": member(), "B": member()}, HETEROGENEOUS) == {"A": {}, "B": {}}


def test_two_members_subscribed_to_nonexistent_topics():
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToNonexistentTopics
    (adapted: the unknown names are dropped, see the module docstring)."""
    members = {"A": member(T3), "B": member(T2)}
    assert run({T1: 3}, members, HETEROGENEOUS) == {"A": {}, "B": {}}


def test_first_assignment_two_members_two_topics():
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics"""
    members = {"A": member(T1, T3), "B": member(T3)}
    assert run({T1: 3, T3: 6}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2}, T3: {4}},
        "B": {T3: {0, 1, 2, 3, 5}},
    }


def test_heterogeneous_first_assignment_num_members_greater_than_total_num_partitions():
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions"""
    members = {"A": member(T3), "B": member(T3), "C": member(T1)}
    assert run({T3: 1, T1: 2}, members, HETEROGENEOUS) == {
        "A": {T3: {0}},
        "B": {},
        "C": {T1: {0, 1}},
    }


def test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment():
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment"""
    members = {
        "A": member(T1, topic1=[0, 1, 2]),
        "B": member(T1, T2, topic1=[3], topic2=[0]),
        "C": member(T1, T2, T3, topic1=[4, 5], topic2=[1, 2, 3], topic3=[0, 1, 2, 3]),
    }
    assert run({T1: 6, T2: 4, T3: 4}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2, 5}},
        "B": {T1: {3}, T2: {0, 1, 2, 3}},
        "C": {T1: {4}, T3: {0, 1, 2, 3}},
    }


def test_reassignment_when_partitions_are_added_for_two_members():
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenPartitionsAreAddedForTwoMembers"""
    members = {
        "A": member(T1, T3, topic1=[0, 1, 2, 3], topic3=[0, 1]),
        "B": member(T1, T2, T3, T4, topic2=[0, 1, 2], topic4=[0, 1, 2]),
    }
    assert run({T1: 6, T2: 5, T3: 3, T4: 3}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2, 3, 4, 5}, T3: {0, 1, 2}},
        "B": {T2: {0, 1, 2, 3, 4}, T4: {0, 1, 2}},
    }


def test_reassignment_when_one_member_added_and_partitions_added_two_members_two_topics():
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics"""
    members = {
        "A": member(T1, topic1=[0, 2], topic2=[0]),
        "B": member(T1, T2, topic1=[1], topic2=[1, 2]),
        "C": member(T1, T2),
    }
    assert run({T1: 6, T2: 7}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 2, 3, 4, 5}},
        "B": {T1: {1}, T2: {1, 2, 6}},
        "C": {T2: {0, 3, 4, 5}},
    }


def test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_three_topics():
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics"""
    members = {
        "A": member(T1, T3, topic1=[0, 1, 2], topic3=[0, 1]),
        "B": member(T2, topic2=[3, 4, 5, 6]),
    }
    assert run({T1: 3, T2: 8, T3: 3}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2}, T3: {0, 1, 2}},
        "B": {T2: set(range(8))},
    }


def test_heterogeneous_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics():
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics"""
    members = {
        "A": member(T1, topic1=[0, 2], topic2=[1, 3]),
        "B": member(T1, T2, topic1=[1], topic2=[0, 2, 4]),
    }
    assert run({T1: 3, T2: 5}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2}},
        "B": {T2: {0, 1, 2, 3, 4}},
    }


def test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions():
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions

    Identical subscriptions under the heterogeneous type: the balancing pass runs out of
    topic1's partitions before the members are balanced and moves on to topic2."""
    members = {
        "A": member(T1, T2, T3, topic1=[0, 1], topic2=[0, 1], topic3=[0, 1]),
        "B": member(T1, T2, T3),
    }
    assert run({T1: 2, T2: 2, T3: 2}, members, HETEROGENEOUS) == {
        "A": {T2: {0}, T3: {0, 1}},
        "B": {T1: {0, 1}, T2: {1}},
    }


def test_first_assignment_with_two_members_including_one_without_subscriptions():
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions"""
    members = {"A": member(T1), "B": member()}
    assert run({T1: 3}, members, HETEROGENEOUS) == {"A": {T1: {0, 1, 2}}, "B": {}}


# --- the reference's own checks ---


def test_a_deleted_topic_is_dropped_from_the_assignment():
    """A topic missing from ``topics`` was deleted: its partitions leave the assignment,
    whichever algorithm runs."""
    for kind in SubscriptionType:
        members = {"A": member(T1, T2, topic1=[0], topic2=[0, 1]), "B": member(T1, T2)}
        assert run({T1: 2}, members, kind) == {"A": {T1: {0}}, "B": {T1: {1}}}


@pytest.mark.parametrize(
    ("topics", "members", "kind", "message"),
    [
        ({T1: -1}, {"A": member(T1)}, HOMOGENEOUS, "negative partition count"),
        ({T1: 2}, {"A": member(T1, topic1=[2])}, HOMOGENEOUS, "topic1-2, which does not exist"),
        (
            {T1: 2},
            {"A": member(T1, topic1=[0]), "B": member(T1, topic1=[0])},
            HOMOGENEOUS,
            "topic1-0 is in the assignments of both 'A' and 'B'",
        ),
        ({T1: 2}, {"A": member(T1), "B": member()}, HOMOGENEOUS, "subscriptions differ"),
    ],
)
def test_a_spec_no_coordinator_builds_is_a_usage_error(topics, members, kind, message):
    with pytest.raises(UsageError, match=message):
        assign(GroupSpec(members, topics, kind))
