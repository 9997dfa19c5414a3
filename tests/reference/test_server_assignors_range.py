"""Kafka's RangeAssignorTest of the group coordinator (the server-side range assignor),
ported scenario by scenario. Its layouts depend on no hash-map order and are asserted as
Kafka asserts them.

Adapted: testOneMemberSubscribedToNonExistentTopic expects an exception because the
describer lacks a topic id the subscription holds. Here subscriptions are names resolved
against the same ``topics`` mapping, and an unknown name is dropped (as Kafka's
``TopicIds`` drops a name the metadata image lacks), so the member gets nothing.
"""

from __future__ import annotations

from coordspec.reference.assignors.server import GroupSpec, MemberSpec, SubscriptionType
from coordspec.reference.assignors.server.range import assign

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
HETEROGENEOUS = SubscriptionType.HETEROGENEOUS
T1, T2, T3 = "topic1", "topic2", "topic3"
Layout = dict[str, dict[str, set[int]]]


def member(*topics: str, instance: str | None = None, **assignment: list[int]) -> MemberSpec:
    """A member subscribed to ``topics``; ``topic1=[0, 2]`` is its current assignment."""
    return MemberSpec(
        frozenset(topics), {t: frozenset(ps) for t, ps in assignment.items()}, instance
    )


def run(topics: dict[str, int], members: dict[str, MemberSpec], kind: SubscriptionType) -> Layout:
    result = assign(GroupSpec(members, topics, kind))
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


def test_one_member_no_topic():
    """RangeAssignorTest.testOneMemberNoTopic"""
    assert run({T1: 3}, {"A": member()}, HOMOGENEOUS) == {"A": {}}


def test_one_member_subscribed_to_non_existent_topic():
    """RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic (adapted, see above)"""
    assert run({T1: 3}, {"A": member(T2)}, HOMOGENEOUS) == {"A": {}}


def test_first_assignment_two_members_two_topics_same_subscriptions():
    """RangeAssignorTest.testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions"""
    members = {"A": member(T1, T3), "B": member(T1, T3)}
    assert run({T1: 3, T3: 2}, members, HOMOGENEOUS) == {
        "A": {T1: {0, 1}, T3: {0}},
        "B": {T1: {2}, T3: {1}},
    }


def test_first_assignment_three_members_three_topics_different_subscriptions():
    """RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions"""
    members = {"A": member(T1, T2), "B": member(T3), "C": member(T2, T3)}
    assert run({T1: 3, T2: 3, T3: 2}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2}, T2: {0, 1}},
        "B": {T3: {0}},
        "C": {T2: {2}, T3: {1}},
    }


def test_first_assignment_num_members_greater_than_num_partitions():
    """RangeAssignorTest.testFirstAssignmentNumMembersGreaterThanNumPartitions"""
    members = {m: member(T1, T3) for m in "ABC"}
    assert run({T1: 3, T3: 2}, members, HOMOGENEOUS) == {
        "A": {T1: {0}, T3: {0}},
        "B": {T1: {1}, T3: {1}},
        "C": {T1: {2}},
    }


def test_static_membership():
    """RangeAssignorTest.testStaticMembership: a static member rejoining under a new member
    id gets the same partitions."""
    members = {"A": member(T1, instance="instanceA"), "B": member(T1, instance="instanceB")}
    before = run({T1: 3}, members, HOMOGENEOUS)
    del members["A"]
    members["memberA1"] = member(T1, instance="instanceA")
    after = run({T1: 3}, members, HOMOGENEOUS)
    assert after["memberA1"] == before["A"] == {T1: {0, 1}}
    assert after["B"] == before["B"] == {T1: {2}}


def test_mixed_static_membership():
    """RangeAssignorTest.testMixedStaticMembership"""
    members = {
        "A": member(T1, instance="instanceA"),
        "C": member(T1, instance="instanceC"),
        "B": member(T1),
    }
    before = run({T1: 5}, members, HOMOGENEOUS)
    del members["A"]
    members["memberA1"] = member(T1, instance="instanceA")
    after = run({T1: 5}, members, HOMOGENEOUS)
    assert after["memberA1"] == before["A"] == {T1: {0, 1}}
    assert after["B"] == before["B"] == {T1: {4}}  # dynamic members come after static ones
    assert after["C"] == before["C"] == {T1: {2, 3}}


def test_reassignment_num_members_greater_than_num_partitions_when_one_member_added():
    """RangeAssignorTest.testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded"""
    members = {
        "A": member(T1, T2, topic1=[0], topic2=[0]),
        "B": member(T1, T2, topic1=[1], topic2=[1]),
        "C": member(T1, T2),
    }
    assert run({T1: 2, T2: 2}, members, HOMOGENEOUS) == {
        "A": {T1: {0}, T2: {0}},
        "B": {T1: {1}, T2: {1}},
        "C": {},
    }


def test_reassignment_when_one_partition_added_for_two_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics"""
    members = {
        "A": member(T1, T2, topic1=[0, 1], topic2=[0, 1]),
        "B": member(T1, T2, topic1=[2], topic2=[2]),
    }
    assert run({T1: 4, T2: 4}, members, HOMOGENEOUS) == {
        "A": {T1: {0, 1}, T2: {0, 1}},
        "B": {T1: {2, 3}, T2: {2, 3}},
    }


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics"""
    members = {
        "A": member(T1, T2, topic1=[0, 1], topic2=[0, 1]),
        "B": member(T1, T2, topic1=[2], topic2=[2]),
        "C": member(T1, T2),
    }
    assert run({T1: 3, T2: 3}, members, HOMOGENEOUS) == {
        "A": {T1: {0}, T2: {0}},
        "B": {T1: {1}, T2: {1}},
        "C": {T1: {2}, T2: {2}},
    }


def test_reassignment_when_one_member_added_and_one_partition_after_initial_assignment_with_two_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics"""
    members = {
        "A": member(T1, T2, topic1=[0, 1], topic2=[0, 1]),
        "B": member(T1, T2, topic1=[2], topic2=[2]),
        "C": member(T1),
    }
    assert run({T1: 4, T2: 3}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1}, T2: {0, 1}},
        "B": {T1: {2}, T2: {2}},
        "C": {T1: {3}},
    }


def test_reassignment_when_one_member_removed_after_initial_assignment_with_two_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics"""
    members = {"B": member(T1, T2, topic1=[2], topic2=[2])}
    assert run({T1: 3, T2: 3}, members, HOMOGENEOUS) == {"B": {T1: {0, 1, 2}, T2: {0, 1, 2}}}


def test_reassignment_when_multiple_subscriptions_removed_after_initial_assignment_with_three_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics"""
    members = {
        "A": member(T1, topic1=[0, 1, 2], topic2=[0]),
        "B": member(T1, T2, T3, topic2=[1]),
        "C": member(T2, topic2=[2], topic3=[0, 1]),
    }
    assert run({T1: 3, T2: 3, T3: 2}, members, HETEROGENEOUS) == {
        "A": {T1: {0, 1}},
        "B": {T1: {2}, T2: {0, 1}, T3: {0, 1}},
        "C": {T2: {2}},
    }
