"""Kafka's RoundRobinAssignorTest, ported scenario by scenario (all 13; none skipped)."""

from __future__ import annotations

from coordspec.reference.assignors import ASSIGNORS, RoundRobinAssignor
from coordspec.reference.consumer_protocol import Subscription

assignor = RoundRobinAssignor()

topic, topic1, topic2 = "topic", "topic1", "topic2"
consumer_id = "consumer"


def tp(t: str, partition: int) -> tuple[str, int]:
    return (t, partition)


def sub(*topics: str, instance: str | None = None) -> Subscription:
    return Subscription(tuple(topics), group_instance_id=instance)


def two_topics(n1: int, n2: int) -> dict[str, int]:
    return {topic1: n1, topic2: n2}


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


def test_registered_under_its_protocol_name():
    assert isinstance(ASSIGNORS["roundrobin"], RoundRobinAssignor)


def test_one_consumer_no_topic():
    """Kafka: RoundRobinAssignorTest.testOneConsumerNoTopic"""
    assignment = assignor.assign({}, {consumer_id: sub()})
    assert set(assignment) == {consumer_id}
    assert assignment[consumer_id] == []


def test_one_consumer_nonexistent_topic():
    """Kafka: RoundRobinAssignorTest.testOneConsumerNonexistentTopic"""
    assignment = assignor.assign({}, {consumer_id: sub(topic)})
    assert set(assignment) == {consumer_id}
    assert assignment[consumer_id] == []


def test_one_consumer_one_topic():
    """Kafka: RoundRobinAssignorTest.testOneConsumerOneTopic"""
    assignment = assignor.assign({topic: 3}, {consumer_id: sub(topic)})
    assert assignment[consumer_id] == [tp(topic, 0), tp(topic, 1), tp(topic, 2)]


def test_only_assigns_partitions_from_subscribed_topics():
    """Kafka: RoundRobinAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics"""
    assignment = assignor.assign({topic: 3, "other": 3}, {consumer_id: sub(topic)})
    assert assignment[consumer_id] == [tp(topic, 0), tp(topic, 1), tp(topic, 2)]


def test_one_consumer_multiple_topics():
    """Kafka: RoundRobinAssignorTest.testOneConsumerMultipleTopics"""
    assignment = assignor.assign(two_topics(1, 2), {consumer_id: sub(topic1, topic2)})
    assert assignment[consumer_id] == [tp(topic1, 0), tp(topic2, 0), tp(topic2, 1)]


def test_two_consumers_one_topic_one_partition():
    """Kafka: RoundRobinAssignorTest.testTwoConsumersOneTopicOnePartition"""
    assignment = assignor.assign({topic: 1}, {"consumer1": sub(topic), "consumer2": sub(topic)})
    assert assignment["consumer1"] == [tp(topic, 0)]
    assert assignment["consumer2"] == []


def test_two_consumers_one_topic_two_partitions():
    """Kafka: RoundRobinAssignorTest.testTwoConsumersOneTopicTwoPartitions"""
    assignment = assignor.assign({topic: 2}, {"consumer1": sub(topic), "consumer2": sub(topic)})
    assert assignment["consumer1"] == [tp(topic, 0)]
    assert assignment["consumer2"] == [tp(topic, 1)]


def test_multiple_consumers_mixed_topics():
    """Kafka: RoundRobinAssignorTest.testMultipleConsumersMixedTopics"""
    consumers = {
        "consumer1": sub(topic1),
        "consumer2": sub(topic1, topic2),
        "consumer3": sub(topic1),
    }
    assignment = assignor.assign(two_topics(3, 2), consumers)
    assert assignment["consumer1"] == [tp(topic1, 0)]
    assert assignment["consumer2"] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)]
    assert assignment["consumer3"] == [tp(topic1, 2)]


def test_two_dynamic_consumers_two_topics_six_partitions():
    """Kafka: RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions"""
    consumers = {"consumer1": sub(topic1, topic2), "consumer2": sub(topic1, topic2)}
    assignment = assignor.assign(two_topics(3, 3), consumers)
    assert assignment["consumer1"] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)]
    assert assignment["consumer2"] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]


def test_two_static_consumers_two_topics_six_partitions():
    """Kafka: RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions"""
    # consumer-a sorts before consumer-b, but instance ids decide.
    consumer1, consumer2 = "consumer-b", "consumer-a"
    consumers = {
        consumer1: sub(topic1, topic2, instance="instance1"),
        consumer2: sub(topic1, topic2, instance="instance2"),
    }
    assignment = assignor.assign(two_topics(3, 3), consumers)
    assert assignment[consumer1] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)]
    assert assignment[consumer2] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]


def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions():
    """Kafka: RoundRobinAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions"""
    # The static member comes first whatever the member ids.
    consumer1, consumer2 = "consumer-b", "consumer-a"
    consumers = {
        consumer1: sub(topic1, topic2, instance="instance1"),
        consumer2: sub(topic1, topic2),
    }
    assignment = assignor.assign(two_topics(3, 3), consumers)
    assert assignment[consumer1] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)]
    assert assignment[consumer2] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]


def test_static_member_round_robin_assignment_persistent():
    """Kafka: RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent"""
    partitions_per_topic = two_topics(3, 3)
    consumers = {
        "consumer1": sub(topic1, topic2, instance="instance1"),
        "consumer2": sub(topic1, topic2, instance="instance2"),
        "consumer3": sub(topic1, topic2, instance="instance3"),
        "consumer4": sub(topic1, topic2),  # a dynamic member
    }
    expected = {
        "consumer1": [tp(topic1, 0), tp(topic2, 1)],
        "consumer2": [tp(topic1, 1), tp(topic2, 2)],
        "consumer3": [tp(topic1, 2)],
        "consumer4": [tp(topic2, 0)],
    }
    assert assignor.assign(partitions_per_topic, consumers) == expected

    # Replace the dynamic member with another one.
    del consumers["consumer4"]
    consumers["consumer5"] = sub(topic1, topic2)
    expected["consumer5"] = expected.pop("consumer4")
    assert assignor.assign(partitions_per_topic, consumers) == expected


def test_static_member_round_robin_assignment_persistent_after_member_id_changes():
    """Kafka: RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges"""
    partitions_per_topic = two_topics(5, 5)
    expected_instance_assignment = {
        "instance1": [tp(topic1, 0), tp(topic1, 3), tp(topic2, 1), tp(topic2, 4)],
        "instance2": [tp(topic1, 1), tp(topic1, 4), tp(topic2, 2)],
        "instance3": [tp(topic1, 2), tp(topic2, 0), tp(topic2, 3)],
    }
    consumers = {
        "consumer1": sub(topic1, topic2, instance="instance1"),
        "consumer2": sub(topic1, topic2, instance="instance2"),
        "consumer3": sub(topic1, topic2, instance="instance3"),
    }
    static = static_assignment(partitions_per_topic, consumers)
    assert static == expected_instance_assignment

    # New member ids for the same instances: the assignment follows the instances.
    consumers["consumer4"] = consumers.pop("consumer3")
    consumers["consumer5"] = consumers.pop("consumer2")
    assert static_assignment(partitions_per_topic, consumers) == static
