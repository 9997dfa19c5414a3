"""Kafka's RangeAssignorTest, ported scenario by scenario (non-rack-aware paths).

Kafka runs most of these once per RackConfig; the rack-aware runs expect the same
result, so each is ported once, without racks.

Also ported, since ``member_order_key`` is Kafka's ``MemberInfo`` ordering:
AbstractPartitionAssignorTest.testMemberInfoSorting* and testMergeSortManyMemberInfo.

Skipped:
- RangeAssignorTest.testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges:
  needs partition replica racks (rack-aware assignment only).
- AbstractPartitionAssignorTest.testUseRackAwareAssignment: tests the rack-aware switch.
- The rack-aware halves of testRackAwareAssignmentWith* and
  testCoPartitionedAssignmentWithSameSubscription: only their non-rack-aware expectations
  (Kafka's verifyNonRackAwareAssignment, or the runs without broker racks) are ported.
"""

from __future__ import annotations

import random

from coordspec.reference.assignors import ASSIGNORS, RangeAssignor
from coordspec.reference.assignors.range import member_order_key
from coordspec.reference.consumer_protocol import Subscription

assignor = RangeAssignor()

topic1, topic2 = "topic1", "topic2"
consumer1, consumer2, consumer3 = "consumer1", "consumer2", "consumer3"
instance1, instance2, instance3 = "instance1", "instance2", "instance3"


def tp(topic: str, partition: int) -> tuple[str, int]:
    return (topic, partition)


def sub(*topics: str, instance: str | None = None) -> Subscription:
    return Subscription(tuple(topics), group_instance_id=instance)


def two_topics(n1: int, n2: int) -> dict[str, int]:
    return {topic1: n1, topic2: n2}


def assert_assignment(expected: list, actual: list) -> None:
    assert set(expected) == set(actual)


def static_assignment(
    partitions_per_topic: dict[str, int], consumers: dict[str, Subscription]
) -> dict[str, list]:
    """Kafka's checkStaticAssignment: the assignment keyed by group.instance.id."""
    by_member = assignor.assign(partitions_per_topic, consumers)
    return {
        s.group_instance_id: by_member[m]
        for m, s in consumers.items()
        if s.group_instance_id is not None
    }


def parse(expected: str) -> set[tuple[str, int]]:
    """'t1-0, t2-3' -> {('t1', 0), ('t2', 3)}"""
    out = set()
    for item in filter(None, expected.split(", ")):
        topic, _, p = item.rpartition("-")
        out.add((topic, int(p)))
    return out


def verify_non_rack_aware_assignment(
    topics: dict[str, int], consumer_topics: list[list[str]], expected: list[str]
) -> None:
    """Kafka's verifyRackAssignment with no racks: consumers consumer0.. subscribe to consumer_topics[i]."""
    subscriptions = {
        f"consumer{i}": Subscription(tuple(ts)) for i, ts in enumerate(consumer_topics)
    }
    assignment = assignor.assign(topics, subscriptions)
    assert {m: set(tps) for m, tps in assignment.items()} == {
        f"consumer{i}": parse(e) for i, e in enumerate(expected)
    }


def test_registered_under_its_protocol_name():
    assert isinstance(ASSIGNORS["range"], RangeAssignor)


def test_one_consumer_no_topic():
    """Kafka: RangeAssignorTest.testOneConsumerNoTopic"""
    assignment = assignor.assign({}, {consumer1: sub()})
    assert set(assignment) == {consumer1}
    assert assignment[consumer1] == []


def test_one_consumer_nonexistent_topic():
    """Kafka: RangeAssignorTest.testOneConsumerNonexistentTopic"""
    assignment = assignor.assign({}, {consumer1: sub(topic1)})
    assert set(assignment) == {consumer1}
    assert assignment[consumer1] == []


def test_one_consumer_one_topic():
    """Kafka: RangeAssignorTest.testOneConsumerOneTopic"""
    assignment = assignor.assign({topic1: 3}, {consumer1: sub(topic1)})
    assert set(assignment) == {consumer1}
    assert_assignment([tp(topic1, 0), tp(topic1, 1), tp(topic1, 2)], assignment[consumer1])


def test_only_assigns_partitions_from_subscribed_topics():
    """Kafka: RangeAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics"""
    assignment = assignor.assign({topic1: 3, "other": 3}, {consumer1: sub(topic1)})
    assert set(assignment) == {consumer1}
    assert_assignment([tp(topic1, 0), tp(topic1, 1), tp(topic1, 2)], assignment[consumer1])


def test_one_consumer_multiple_topics():
    """Kafka: RangeAssignorTest.testOneConsumerMultipleTopics"""
    assignment = assignor.assign(two_topics(1, 2), {consumer1: sub(topic1, topic2)})
    assert set(assignment) == {consumer1}
    assert_assignment([tp(topic1, 0), tp(topic2, 0), tp(topic2, 1)], assignment[consumer1])


def test_two_consumers_one_topic_one_partition():
    """Kafka: RangeAssignorTest.testTwoConsumersOneTopicOnePartition"""
    assignment = assignor.assign({topic1: 1}, {consumer1: sub(topic1), consumer2: sub(topic1)})
    assert_assignment([tp(topic1, 0)], assignment[consumer1])
    assert_assignment([], assignment[consumer2])


def test_two_consumers_one_topic_two_partitions():
    """Kafka: RangeAssignorTest.testTwoConsumersOneTopicTwoPartitions"""
    assignment = assignor.assign({topic1: 2}, {consumer1: sub(topic1), consumer2: sub(topic1)})
    assert_assignment([tp(topic1, 0)], assignment[consumer1])
    assert_assignment([tp(topic1, 1)], assignment[consumer2])


def test_multiple_consumers_mixed_topics():
    """Kafka: RangeAssignorTest.testMultipleConsumersMixedTopics"""
    consumers = {consumer1: sub(topic1), consumer2: sub(topic1, topic2), consumer3: sub(topic1)}
    assignment = assignor.assign(two_topics(3, 2), consumers)
    assert_assignment([tp(topic1, 0)], assignment[consumer1])
    assert_assignment([tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)], assignment[consumer2])
    assert_assignment([tp(topic1, 2)], assignment[consumer3])


def test_two_consumers_two_topics_six_partitions():
    """Kafka: RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions"""
    consumers = {consumer1: sub(topic1, topic2), consumer2: sub(topic1, topic2)}
    assignment = assignor.assign(two_topics(3, 3), consumers)
    assert_assignment(
        [tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)], assignment[consumer1]
    )
    assert_assignment([tp(topic1, 2), tp(topic2, 2)], assignment[consumer2])


def test_two_static_consumers_two_topics_six_partitions():
    """Kafka: RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions"""
    # consumer-a sorts before consumer-b, but instance ids decide.
    consumer_id_low, consumer_id_high = "consumer-b", "consumer-a"
    consumers = {
        consumer_id_low: sub(topic1, topic2, instance=instance1),
        consumer_id_high: sub(topic1, topic2, instance=instance2),
    }
    assignment = assignor.assign(two_topics(3, 3), consumers)
    assert_assignment(
        [tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)], assignment[consumer_id_low]
    )
    assert_assignment([tp(topic1, 2), tp(topic2, 2)], assignment[consumer_id_high])


def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions():
    """Kafka: RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions"""
    # The static member comes first whatever the member ids.
    consumer_id_low, consumer_id_high = "consumer-b", "consumer-a"
    consumers = {
        consumer_id_low: sub(topic1, topic2, instance=instance1),
        consumer_id_high: sub(topic1, topic2),
    }
    assignment = assignor.assign(two_topics(3, 3), consumers)
    assert_assignment(
        [tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)], assignment[consumer_id_low]
    )
    assert_assignment([tp(topic1, 2), tp(topic2, 2)], assignment[consumer_id_high])


def _static_members() -> dict[str, Subscription]:
    return {
        consumer1: sub(topic1, topic2, instance=instance1),
        consumer2: sub(topic1, topic2, instance=instance2),
        consumer3: sub(topic1, topic2, instance=instance3),
    }


def test_static_member_range_assignment_persistent():
    """Kafka: RangeAssignorTest.testStaticMemberRangeAssignmentPersistent"""
    partitions_per_topic = two_topics(5, 4)
    consumers = _static_members()
    consumers["consumer4"] = sub(topic1, topic2)  # a dynamic member
    expected = {
        consumer1: [tp(topic1, 0), tp(topic1, 1), tp(topic2, 0)],
        consumer2: [tp(topic1, 2), tp(topic2, 1)],
        consumer3: [tp(topic1, 3), tp(topic2, 2)],
        "consumer4": [tp(topic1, 4), tp(topic2, 3)],
    }
    assert assignor.assign(partitions_per_topic, consumers) == expected

    # Replace the dynamic member with another one.
    del consumers["consumer4"]
    consumers["consumer5"] = sub(topic1, topic2)
    expected["consumer5"] = expected.pop("consumer4")
    assert assignor.assign(partitions_per_topic, consumers) == expected


def test_static_member_range_assignment_persistent_after_member_id_changes():
    """Kafka: RangeAssignorTest.testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges"""
    partitions_per_topic = two_topics(5, 5)
    consumers = _static_members()
    expected_instance_assignment = {
        instance1: [tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)],
        instance2: [tp(topic1, 2), tp(topic1, 3), tp(topic2, 2), tp(topic2, 3)],
        instance3: [tp(topic1, 4), tp(topic2, 4)],
    }
    static = static_assignment(partitions_per_topic, consumers)
    assert static == expected_instance_assignment

    # New member ids for the same instances: the assignment follows the instances.
    consumers["consumer4"] = consumers.pop(consumer3)
    consumers["consumer5"] = consumers.pop(consumer2)
    assert static_assignment(partitions_per_topic, consumers) == static


def test_rack_aware_assignment_with_uniform_subscription():
    """Kafka: RangeAssignorTest.testRackAwareAssignmentWithUniformSubscription (non-rack-aware expectations)"""
    topics = {"t1": 6, "t2": 7, "t3": 2}
    all_topics = ["t1", "t2", "t3"]
    verify_non_rack_aware_assignment(
        topics,
        [all_topics, all_topics, all_topics],
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
            "t1-2, t1-3, t2-3, t2-4, t3-1",
            "t1-4, t1-5, t2-5, t2-6",
        ],
    )


def test_rack_aware_assignment_with_non_equal_subscription():
    """Kafka: RangeAssignorTest.testRackAwareAssignmentWithNonEqualSubscription (non-rack-aware expectations)"""
    topics = {"t1": 6, "t2": 7, "t3": 2}
    all_topics = ["t1", "t2", "t3"]
    verify_non_rack_aware_assignment(
        topics,
        [all_topics, all_topics, ["t1", "t3"]],
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
            "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
            "t1-4, t1-5",
        ],
    )


def test_rack_aware_assignment_with_uniform_partitions():
    """Kafka: RangeAssignorTest.testRackAwareAssignmentWithUniformPartitions (non-rack-aware expectations)"""
    topics = {"t1": 5, "t2": 5, "t3": 5}
    all_topics = ["t1", "t2", "t3"]
    verify_non_rack_aware_assignment(
        topics,
        [all_topics, all_topics, all_topics],
        [
            "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
            "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
            "t1-4, t2-4, t3-4",
        ],
    )


def test_rack_aware_assignment_with_uniform_partitions_non_equal_subscription():
    """Kafka: RangeAssignorTest.testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription (non-rack-aware expectations)"""
    topics = {"t1": 5, "t2": 5, "t3": 5}
    all_topics = ["t1", "t2", "t3"]
    verify_non_rack_aware_assignment(
        topics,
        [all_topics, all_topics, ["t1", "t3"]],
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
            "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
            "t1-4, t3-4",
        ],
    )


def test_rack_aware_assignment_with_co_partitioning():
    """Kafka: RangeAssignorTest.testRackAwareAssignmentWithCoPartitioning (non-rack-aware expectations)"""
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    verify_non_rack_aware_assignment(
        topics,
        [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]],
        [
            "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
            "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
            "t3-0, t4-0",
            "t3-1, t4-1",
        ],
    )
    all_topics = ["t1", "t2", "t3", "t4"]
    verify_non_rack_aware_assignment(
        topics,
        [all_topics] * 4,
        [
            "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0",
            "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
            "t1-4, t2-4",
            "t1-5, t2-5",
        ],
    )


def test_co_partitioned_assignment_with_same_subscription():
    """Kafka: RangeAssignorTest.testCoPartitionedAssignmentWithSameSubscription (the run without broker racks)"""
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    topic_list = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]  # t7..t9 have no metadata
    verify_non_rack_aware_assignment(
        topics,
        [topic_list] * 3,
        [
            "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
            "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
            "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
        ],
    )


# AbstractPartitionAssignorTest: MemberInfo ordering


def _sorted_members(members: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    return sorted(members, key=lambda m: member_order_key(*m))


def test_member_info_sorting_without_group_instance_id():
    """Kafka: AbstractPartitionAssignorTest.testMemberInfoSortingWithoutGroupInstanceId"""
    members = [("a", None), ("b", None), ("c", None)]
    assert _sorted_members(members) == members


def test_member_info_sorting_with_all_group_instance_id():
    """Kafka: AbstractPartitionAssignorTest.testMemberInfoSortingWithAllGroupInstanceId"""
    m1, m2, m3 = ("a", "y"), ("b", "z"), ("c", "x")
    assert _sorted_members([m1, m2, m3]) == [m3, m1, m2]


def test_member_info_sorting_some_group_instance_id():
    """Kafka: AbstractPartitionAssignorTest.testMemberInfoSortingSomeGroupInstanceId"""
    m1, m2, m3 = ("a", None), ("b", "y"), ("c", "x")
    assert _sorted_members([m1, m2, m3]) == [m3, m2, m1]


def test_merge_sort_many_member_info():
    """Kafka: AbstractPartitionAssignorTest.testMergeSortManyMemberInfo"""
    rng = random.Random(20)  # Kafka draws an unseeded Random; any draw must pass
    members = [(str(i + 100), str(i + 100) if rng.randrange(2) < 1 else None) for i in range(100)]
    static = [m for m in members if m[1] is not None]
    dynamic = [m for m in members if m[1] is None]
    rng.shuffle(members)
    assert _sorted_members(members) == static + dynamic
