"""OffsetDelete (GM-63), ported from Kafka's OffsetMetadataManagerTest (testGenericGroupOffsetDelete*),
ClassicGroupTest (testValidateOffsetDelete, testIsSubscribedToTopic) and GroupCoordinatorServiceTest
(testDeleteOffsets*), commit 1eb7644349cb07139d6a3c1ad1986979647cac99.

Kafka's tests build a group by hand and set its subscribed topics directly; here each group is
reached through the protocol (a simple group by a commit, a consumer group by a join), so a
subscription comes from the members' JoinGroup metadata. Kafka's test reads the records and
the response of one coordinator step; the reference answers once the tombstones are written.

Skipped Kafka tests:
- testGenericGroupOffsetDeleteWithPendingTransactionalOffsets: ported in test_txn_offsets.py.
- testConsumerGroupOffsetDelete / testConsumerGroupOffsetDeleteWithErrors /
  testConsumerGroupOffsetDeleteWithPendingTransactionalOffsets: KIP-848 consumer groups are not modelled.
- GroupCoordinatorServiceTest.testDeleteOffsetsWhenNotStarted: the "not started" service state is
  later work (as for the other APIs in test_service_checks.py).
- KafkaApisTest's OffsetDelete tests (unknown topics and partitions answered before the coordinator):
  the reference knows no topics yet and answers every topic as the coordinator does.
"""

from __future__ import annotations

import pytest
from driver import GROUP_ID, Driver, kafka_test_config
from kafka_context import offset_tombstone
from test_offsets import subscribing
from test_service_checks import APPEND_ERRORS, service_config

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import Protocol
from coordspec.reference.group.responses import (
    OffsetDeletePartitionResponse,
    OffsetDeleteResponse,
    OffsetDeleteTopicResponse,
)


def deleted(topic: str, *partitions: tuple[int, ErrorCode]) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(
        ErrorCode.NONE,
        (
            OffsetDeleteTopicResponse(
                topic, tuple(OffsetDeletePartitionResponse(p, e) for p, e in partitions)
            ),
        ),
    )


def committed(d: Driver, group_id: str, topic: str, partition: int) -> int:
    fetch = d.fetch({topic: (partition,)}, group_id=group_id)
    return fetch.response.topics[0].partitions[0].committed_offset


def stable_consumer_group(d: Driver, group_id: str, *topics: str, protocol_type="consumer"):
    """One member subscribed to ``topics`` leads generation 1, Stable; its member id."""
    join = d.join(
        group_id=group_id,
        protocols=subscribing(*topics),
        protocol_type=protocol_type,
        session_timeout_ms=600_000,
        rebalance_timeout_ms=10_000,
    )
    d.sleep(d.coordinator.config.initial_rebalance_delay_ms)
    member_id = join.response.member_id
    sync = d.sync(member_id, 1, group_id=group_id, protocol_type=protocol_type)
    assert sync.error == ErrorCode.NONE and str(d.group(group_id).state) == "Stable"
    return member_id


# -- OffsetMetadataManagerTest ----------------------------------------------------------------


def test_generic_group_offset_delete():
    """OffsetMetadataManagerTest.testGenericGroupOffsetDelete"""
    d = Driver(kafka_test_config(), complete_appends=False)
    d.commit({("bar", 0): 100}, group_id="foo")
    d.complete(d.appends[0])
    delete = d.delete_offsets({"bar": (0,)}, group_id="foo")
    assert delete.records == [offset_tombstone("foo", "bar", 0)]
    [append] = d.appends
    assert not delete.done
    assert committed(d, "foo", "bar", 0) == 100  # visible until the tombstone is written
    d.complete(append)
    assert delete.response == deleted("bar", (0, ErrorCode.NONE))
    assert committed(d, "foo", "bar", 0) == -1
    assert str(d.group("foo").state) == "Empty"  # the group itself stays


def test_generic_group_offset_delete_with_errors():
    """OffsetMetadataManagerTest.testGenericGroupOffsetDeleteWithErrors"""
    d = Driver()
    member_id = stable_consumer_group(d, "foo", "bar")
    d.commit({("bar", 0): 100}, group_id="foo", member_id=member_id, generation_id=1)
    # A partition with no committed offset: NONE, and nothing to write.
    absent = d.delete_offsets({"bar1": (0,)}, group_id="foo")
    assert absent.response == deleted("bar1", (0, ErrorCode.NONE)) and absent.records == []
    # A topic the group subscribes to keeps its offsets.
    subscribed = d.delete_offsets({"bar": (0,)}, group_id="foo")
    assert subscribed.response == deleted("bar", (0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
    assert subscribed.records == []
    assert committed(d, "foo", "bar", 0) == 100


def test_offset_delete_answers_each_topic_on_its_own():
    """deleteOffsets: the subscription is decided per topic, tombstones only for committed offsets."""
    d = Driver()
    member_id = stable_consumer_group(d, GROUP_ID, "foo")
    d.commit(
        {("foo", 0): 1, ("bar", 0): 2, ("bar", 1): 3},
        member_id=member_id,
        generation_id=1,
    )
    delete = d.delete_offsets({"foo": (0,), "bar": (0, 1, 2)})
    assert delete.response == OffsetDeleteResponse(
        ErrorCode.NONE,
        (
            OffsetDeleteTopicResponse(
                "foo", (OffsetDeletePartitionResponse(0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),)
            ),
            OffsetDeleteTopicResponse(
                "bar",
                tuple(OffsetDeletePartitionResponse(p, ErrorCode.NONE) for p in (0, 1, 2)),
            ),
        ),
    )
    assert delete.records == [
        offset_tombstone(GROUP_ID, "bar", 0),
        offset_tombstone(GROUP_ID, "bar", 1),
    ]
    assert [committed(d, GROUP_ID, t, p) for t, p in (("foo", 0), ("bar", 0), ("bar", 1))] == [
        1,
        -1,
        -1,
    ]


def test_deleted_offset_stays_deleted_after_reload():
    """The tombstone is in the log: a coordinator loading it finds no offset (GM-41)."""
    d = Driver()
    d.commit({("bar", 0): 5, ("bar", 1): 6}, group_id="foo")
    d.delete_offsets({"bar": (0,)}, group_id="foo")
    log = list(d.log)
    d.unload()
    reloaded = Driver()
    reloaded.load(log)
    assert committed(reloaded, "foo", "bar", 0) == -1
    assert committed(reloaded, "foo", "bar", 1) == 6


# -- ClassicGroupTest -------------------------------------------------------------------------


def test_validate_offset_delete():
    """ClassicGroupTest.testValidateOffsetDelete: a group of another protocol type is refused
    while it has a generation in progress or running; a consumer group is not."""
    d = Driver()
    topics = {"baz": (0,)}  # no member subscribes to it
    for group_id, protocol_type, refused in (
        ("other", "connect", ErrorCode.NON_EMPTY_GROUP),
        ("consumer", "consumer", ErrorCode.NONE),
    ):
        join = d.join(group_id=group_id, protocol_type=protocol_type, session_timeout_ms=600_000)
        assert str(d.group(group_id).state) == "PreparingRebalance"
        assert d.delete_offsets(topics, group_id=group_id).error == refused
        d.sleep(3_000)
        assert str(d.group(group_id).state) == "CompletingRebalance"
        assert d.delete_offsets(topics, group_id=group_id).error == refused
        member_id = join.response.member_id
        assert d.sync(member_id, 1, group_id=group_id, protocol_type=protocol_type).done
        assert str(d.group(group_id).state) == "Stable"
        assert d.delete_offsets(topics, group_id=group_id).error == refused
        assert d.leave(member_id, group_id=group_id).error == ErrorCode.NONE
        assert str(d.group(group_id).state) == "Empty"
        assert d.delete_offsets(topics, group_id=group_id).error == ErrorCode.NONE
    d.unload()
    assert str(d.group("consumer").state) == "Dead"
    assert d.delete_offsets(topics, group_id="consumer").response == OffsetDeleteResponse(
        ErrorCode.GROUP_ID_NOT_FOUND
    )
    assert d.delete_offsets(topics, group_id="unknown").response == OffsetDeleteResponse(
        ErrorCode.GROUP_ID_NOT_FOUND
    )


def test_is_subscribed_to_topic():
    """ClassicGroupTest.testIsSubscribedToTopic"""
    d = Driver()
    # 1. no protocol type (a simple group): not subscribed
    d.commit({("topic", 0): 1}, group_id="simple")
    assert not d.group("simple").is_subscribed_to_topic("topic")
    # 2. another protocol type: its subscriptions are unknown, and it is not subscribed
    d.join(group_id="other", protocol_type="My Protocol", protocols=subscribing("topic"))
    d.sleep(3_000)
    assert str(d.group("other").state) == "CompletingRebalance"
    assert d.group("other").subscribed_topics is None
    assert not d.group("other").is_subscribed_to_topic("topic")
    # 3. the consumer protocol with no members left: subscribed to nothing
    member_id = stable_consumer_group(d, "empty", "topic")
    d.leave(member_id, group_id="empty")
    group = d.group("empty")
    assert str(group.state) == "Empty" and group.subscribed_topics == set()
    assert group.uses_consumer_protocol() and not group.is_subscribed_to_topic("topic")
    # 4. the consumer protocol with a member subscribed: subscribed
    stable_consumer_group(d, "subscribed", "topic")
    group = d.group("subscribed")
    assert group.subscribed_topics == {"topic"} and group.is_subscribed_to_topic("topic")
    assert not group.is_subscribed_to_topic("other-topic")


def test_consumer_group_with_unknown_subscriptions_counts_as_subscribed():
    """ClassicGroup.isSubscribedToTopic: when the members' metadata cannot be read, a consumer
    group is taken to subscribe to every topic."""
    d = Driver()
    join = d.join(protocols=(Protocol("range", b"not a subscription"),), session_timeout_ms=600_000)
    d.sleep(3_000)
    assert d.sync(join.response.member_id, 1).error == ErrorCode.NONE
    assert d.group().subscribed_topics is None
    delete = d.delete_offsets({"anything": (0,)})
    assert delete.response == deleted("anything", (0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))


# -- GroupCoordinatorServiceTest --------------------------------------------------------------


def test_delete_offsets():
    """GroupCoordinatorServiceTest.testDeleteOffsets"""
    d = Driver(service_config())
    d.commit({("topic", 0): 1}, group_id="group")
    delete = d.delete_offsets({"topic": (0,)}, group_id="group")
    assert delete.response == deleted("topic", (0, ErrorCode.NONE))


def test_delete_offsets_invalid_group_id():
    """GroupCoordinatorServiceTest.testDeleteOffsetsInvalidGroupId"""
    d = Driver(service_config())
    delete = d.delete_offsets({"topic": (0,)}, group_id="")
    assert delete.response == OffsetDeleteResponse(ErrorCode.INVALID_GROUP_ID)
    assert delete.records == []


@pytest.mark.parametrize(("append_error", "expected"), APPEND_ERRORS)
def test_delete_offsets_with_exception(append_error, expected):
    """GroupCoordinatorServiceTest.testDeleteOffsetsWithException: a failed write is the
    top-level error, and the offset stays."""
    d = Driver(service_config(), complete_appends=False)
    d.commit({("topic", 0): 1}, group_id="group")
    d.complete(d.appends[0])
    delete = d.delete_offsets({"topic": (0,)}, group_id="group")
    assert not delete.done
    d.complete(d.appends[0], append_error)
    assert delete.response == OffsetDeleteResponse(expected)
    assert committed(d, "group", "topic", 0) == 1


# -- writes in flight -------------------------------------------------------------------------


def test_offset_delete_counts_a_commit_still_being_written():
    """Kafka's write operations read the uncommitted state (hasCommittedOffset on the latest
    timeline): a commit not yet written gets its tombstone, written after it."""
    d = Driver(kafka_test_config(), complete_appends=False)
    d.commit({("bar", 0): 100}, group_id="foo")
    [commit] = d.appends
    delete = d.delete_offsets({"bar": (0,)}, group_id="foo")
    assert delete.records == [offset_tombstone("foo", "bar", 0)]
    [tombstone] = d.appends
    d.complete(commit)
    assert committed(d, "foo", "bar", 0) == 100
    d.complete(tombstone)
    assert delete.response == deleted("bar", (0, ErrorCode.NONE))
    assert committed(d, "foo", "bar", 0) == -1


def test_offset_delete_skips_an_offset_a_write_in_flight_deletes():
    """A second OffsetDelete of the same partition, while the first's tombstone is being
    written, finds nothing left to delete."""
    d = Driver(kafka_test_config(), complete_appends=False)
    d.commit({("bar", 0): 100}, group_id="foo")
    d.complete(d.appends[0])
    first = d.delete_offsets({"bar": (0,)}, group_id="foo")
    [tombstone] = d.appends
    second = d.delete_offsets({"bar": (0,)}, group_id="foo")
    assert second.records == [] and second.response == deleted("bar", (0, ErrorCode.NONE))
    d.complete(tombstone)
    assert first.response == deleted("bar", (0, ErrorCode.NONE))
    assert committed(d, "foo", "bar", 0) == -1
