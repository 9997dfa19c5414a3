"""A consumer group's offsets (CG-60..CG-65): OffsetCommit and TxnOffsetCommit checked by
member epochs, OffsetFetch v9 with a member, OffsetDelete by the members' subscriptions,
DeleteGroups of an empty consumer group and the expiry of its offsets.

Ported from Kafka's OffsetMetadataManagerTest, commit 1eb7644349cb07139d6a3c1ad1986979647cac99:
testConsumerGroupOffsetCommitWithUnknownMemberId, testConsumerGroupOffsetCommitWithStaleMemberEpoch,
testConsumerGroupOffsetCommitFromAdminClient, testConsumerGroupOffsetCommit,
testConsumerGroupTransactionalOffsetCommit, testConsumerGroupTransactionalOffsetCommitWithUnknownMemberId,
testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch,
testConsumerGroupOffsetFetchWithMemberIdAndEpoch, testConsumerGroupOffsetFetchFromAdminClient,
testConsumerGroupOffsetFetchWithUnknownMemberId, testConsumerGroupOffsetFetchWithStaleMemberEpoch,
testConsumerGroupOffsetDelete, testConsumerGroupOffsetDeleteWithErrors. Kafka's tests put
members in the group directly; here they join by heartbeats, so their epochs are the ones
the heartbeats give.
"""

from __future__ import annotations

from consumer_group_context import GROUP_ID, Context

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    OffsetCommitKey,
    Record,
)
from coordspec.reference.group.requests import (
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    FailNextWrite,
    FetchTopic,
    JoinGroup,
    LoadGroups,
    OffsetCommit,
    OffsetDelete,
    OffsetDeletePartition,
    OffsetDeleteTopic,
    OffsetFetch,
    Protocol,
    Tick,
    TxnOffsetCommit,
    WriteTxnMarker,
)

JOIN = {"rebalance_timeout_ms": 5000, "topic_partitions": ()}
TOPICS = {"foo": 1, "bar": 1}


class Offsets(Context):
    """The consumer group context with the offset requests Kafka's test context sends."""

    def __init__(self, config: GroupConfig | None = None) -> None:
        super().__init__(TOPICS)
        if config is not None:
            self.coordinator = GroupCoordinator(
                config, topics=TOPICS, observer=self.monitor, now_ms=self.now_ms
            )
        self.coordinator.handle(LoadGroups((), now_ms=0))

    def join(self, member_id: str, *topics: str) -> int:
        response, _ = self.heartbeat(
            member_id=member_id, subscribed_topic_names=topics or ("foo",), **JOIN
        )
        assert response.error_code == ErrorCode.NONE
        return response.member_epoch

    def send(self, request_type: type, **fields: object) -> tuple[object, list[Record]]:
        self._requests += 1
        fields.setdefault("api_version", 9)
        effects = self.coordinator.handle(
            request_type(request_id=self._requests, now_ms=self.now_ms, **fields)
        )
        (response,) = [e.response for e in effects if isinstance(e, Reply)]
        return response, self._written(effects)

    def commit(self, member_id: str = "", epoch: int = -1, **fields: object) -> ErrorCode:
        """The error of committing bar-0 = 100 (Kafka's tests commit topic bar)."""
        topics = (CommitTopic("bar", (CommitPartition(0, 100, 10, "metadata"),)),)
        response, _ = self.send(
            OffsetCommit,
            group_id=GROUP_ID,
            member_id=member_id,
            generation_id=epoch,
            topics=topics,
            **fields,
        )
        (topic,) = response.topics
        return topic.partitions[0].error_code

    def txn_commit(self, member_id: str = "", epoch: int = -1) -> ErrorCode:
        topics = (CommitTopic("bar", (CommitPartition(0, 100),)),)
        response, _ = self.send(
            TxnOffsetCommit,
            api_version=3,
            group_id=GROUP_ID,
            producer_id=10,
            member_id=member_id,
            generation_id=epoch,
            topics=topics,
        )
        return response.topics[0].partitions[0].error_code

    def fetch(self, member_id: str | None = None, epoch: int = -1, all_topics: bool = False):
        topics = None if all_topics else (FetchTopic("bar", (0,)),)
        response, _ = self.send(
            OffsetFetch, group_id=GROUP_ID, topics=topics, member_id=member_id, member_epoch=epoch
        )
        return response

    def delete_offset(self, topic: str) -> ErrorCode:
        topics = (OffsetDeleteTopic(topic, (OffsetDeletePartition(0),)),)
        response, _ = self.send(OffsetDelete, api_version=0, group_id=GROUP_ID, topics=topics)
        assert response.error_code == ErrorCode.NONE
        return response.topics[0].partitions[0].error_code

    def committed(self) -> dict[tuple[str, int], int]:
        return {k: v.offset for k, v in self.group().store.offsets.items()}


def test_consumer_group_offset_commit_with_unknown_member_id():
    """Kafka: testConsumerGroupOffsetCommitWithUnknownMemberId (CG-60)."""
    ctx = Offsets()
    ctx.join("m1")
    assert ctx.commit("member", 10) == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.commit() == ErrorCode.UNKNOWN_MEMBER_ID  # no epoch: only while empty
    assert ctx.committed() == {}


def test_consumer_group_offset_commit_with_stale_member_epoch():
    """Kafka: testConsumerGroupOffsetCommitWithStaleMemberEpoch (CG-60): an epoch behind and
    one ahead are both stale."""
    ctx = Offsets()
    epoch = ctx.join("member")
    assert ctx.commit("member", epoch - 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert ctx.commit("member", epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert ctx.committed() == {}


def test_consumer_group_offset_commit_below_v9_is_unsupported():
    """CG-60: ConsumerGroup.validateOffsetCommit refuses a KIP-848 member's commit below v9."""
    ctx = Offsets()
    epoch = ctx.join("member")
    assert ctx.commit("member", epoch, api_version=8) == ErrorCode.UNSUPPORTED_VERSION
    assert ctx.commit("member", epoch) == ErrorCode.NONE


def test_consumer_group_offset_commit_from_admin_client():
    """Kafka: testConsumerGroupOffsetCommitFromAdminClient (CG-60): no member, no epoch, an
    empty group: accepted, its record written without a leader epoch given."""
    ctx = Offsets()
    ctx.join("member")
    ctx.heartbeat(member_id="member", member_epoch=-1)  # leaves: the group is Empty
    assert ctx.group().state == "Empty"
    topics = (CommitTopic("bar", (CommitPartition(0, 100),)),)
    response, records = ctx.send(OffsetCommit, group_id=GROUP_ID, topics=topics)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    (record,) = records
    assert record.key == OffsetCommitKey(GROUP_ID, "bar", 0)
    assert (record.value.offset, record.value.leader_epoch) == (100, -1)
    assert ctx.committed() == {("bar", 0): 100}


def test_consumer_group_offset_commit():
    """Kafka: testConsumerGroupOffsetCommit (CG-60): the member at its epoch commits, with
    its leader epoch and metadata; no classic group is made for the id."""
    ctx = Offsets()
    epoch = ctx.join("member")
    assert ctx.commit("member", epoch) == ErrorCode.NONE
    value = ctx.group().store.offsets[("bar", 0)]
    assert (value.offset, value.leader_epoch, value.metadata) == (100, 10, "metadata")
    assert GROUP_ID not in ctx.coordinator.groups


def test_consumer_group_transactional_offset_commit():
    """Kafka: testConsumerGroupTransactionalOffsetCommit (CG-61): pending until the marker."""
    ctx = Offsets()
    epoch = ctx.join("member")
    assert ctx.txn_commit("member", epoch) == ErrorCode.NONE
    assert ctx.committed() == {}
    assert ctx.group().store.has_pending_offset(("bar", 0))
    ctx.coordinator.handle(WriteTxnMarker(GROUP_ID, 10, "COMMIT", now_ms=ctx.now_ms))
    assert ctx.committed() == {("bar", 0): 100}


def test_consumer_group_transactional_offset_commit_with_unknown_member_id():
    """Kafka: testConsumerGroupTransactionalOffsetCommitWithUnknownMemberId (CG-61)."""
    ctx = Offsets()
    ctx.join("m1")
    assert ctx.txn_commit("member", 10) == ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_transactional_offset_commit_with_stale_member_epoch():
    """Kafka: testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch (CG-61): a stale
    epoch is answered ILLEGAL_GENERATION, at any TxnOffsetCommit version."""
    ctx = Offsets()
    epoch = ctx.join("member")
    assert ctx.txn_commit("member", epoch + 1) == ErrorCode.ILLEGAL_GENERATION


def test_consumer_group_offset_fetch_with_member_id_and_epoch():
    """Kafka: testConsumerGroupOffsetFetchWithMemberIdAndEpoch (CG-62), by partition and all."""
    ctx = Offsets()
    epoch = ctx.join("member")
    ctx.commit("member", epoch)
    for all_topics in (False, True):
        response = ctx.fetch("member", epoch, all_topics)
        assert response.error_code == ErrorCode.NONE
        (topic,) = response.topics
        (partition,) = topic.partitions
        assert (topic.name, partition.committed_offset) == ("bar", 100)


def test_consumer_group_offset_fetch_from_admin_client():
    """Kafka: testConsumerGroupOffsetFetchFromAdminClient (CG-62): no member id, no epoch."""
    ctx = Offsets()
    epoch = ctx.join("member")
    ctx.commit("member", epoch)
    response = ctx.fetch()
    assert response.topics[0].partitions[0].committed_offset == 100


def test_consumer_group_offset_fetch_with_unknown_member_id():
    """Kafka: testConsumerGroupOffsetFetchWithUnknownMemberId (CG-62): a blank member id is
    one no member has."""
    ctx = Offsets()
    ctx.join("m1")
    for member_id in ("", "member"):
        for all_topics in (False, True):
            response = ctx.fetch(member_id, 0, all_topics)
            assert response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
            assert response.topics == ()


def test_consumer_group_offset_fetch_with_stale_member_epoch():
    """Kafka: testConsumerGroupOffsetFetchWithStaleMemberEpoch (CG-62)."""
    ctx = Offsets()
    epoch = ctx.join("member")
    for all_topics in (False, True):
        response = ctx.fetch("member", epoch + 9, all_topics)
        assert response.error_code == ErrorCode.STALE_MEMBER_EPOCH


def test_consumer_group_offset_delete():
    """Kafka: testConsumerGroupOffsetDelete (CG-63): no state check; the tombstone is written."""
    ctx = Offsets()
    epoch = ctx.join("member", "foo")
    ctx.commit("member", epoch)
    topics = (OffsetDeleteTopic("bar", (OffsetDeletePartition(0),)),)
    response, records = ctx.send(OffsetDelete, api_version=0, group_id=GROUP_ID, topics=topics)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert records == [Record(OffsetCommitKey(GROUP_ID, "bar", 0), None)]
    assert ctx.committed() == {}


def test_consumer_group_offset_delete_with_errors():
    """Kafka: testConsumerGroupOffsetDeleteWithErrors (CG-63): a topic a member subscribes to
    is refused, another one is not."""
    ctx = Offsets()
    epoch = ctx.join("member1", "bar")
    ctx.commit("member1", epoch)
    assert ctx.delete_offset("foo") == ErrorCode.NONE
    assert ctx.delete_offset("bar") == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    assert ctx.committed() == {("bar", 0): 100}


def test_delete_groups_of_a_consumer_group():
    """CG-64: a consumer group with members is not deleted; once empty, its offsets' and its
    own tombstones are written (Kafka's deleteAllOffsets, then createGroupTombstoneRecords)
    and the id is free."""
    ctx = Offsets()
    epoch = ctx.join("member")
    ctx.commit("member", epoch)
    response, _ = ctx.send(DeleteGroups, api_version=2, groups_names=(GROUP_ID,))
    assert response.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    ctx.heartbeat(member_id="member", member_epoch=-1)
    response, records = ctx.send(DeleteGroups, api_version=2, groups_names=(GROUP_ID,))
    assert response.results[0].error_code == ErrorCode.NONE
    assert records == [
        Record(OffsetCommitKey(GROUP_ID, "bar", 0), None),
        Record(ConsumerGroupTargetAssignmentMetadataKey(GROUP_ID), None),
        Record(ConsumerGroupMetadataKey(GROUP_ID), None),
    ]
    assert GROUP_ID not in ctx.coordinator.consumer_groups
    assert ctx.fetch().topics[0].partitions[0].committed_offset == -1


def test_offsets_expire_by_commit_time_unless_subscribed():
    """CG-65: a consumer group's offsets expire by their commit time, whatever its state,
    unless a member subscribes to their topic; an empty group whose offsets all expired is
    deleted with them."""
    config = GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000)
    ctx = Offsets(config)
    epoch = ctx.join("member", "foo")
    ctx.commit("member", epoch)
    topics = (CommitTopic("foo", (CommitPartition(0, 7),)),)
    ctx.send(
        OffsetCommit, group_id=GROUP_ID, member_id="member", generation_id=epoch, topics=topics
    )
    for _ in range(6):  # the member stays, heartbeating past the retention
        ctx.now_ms += 10_000
        ctx.coordinator.handle(Tick(now_ms=ctx.now_ms))
        ctx.heartbeat(member_id="member", member_epoch=epoch)
    assert ctx.committed() == {("foo", 0): 7}  # bar-0 expired; foo is subscribed
    ctx.heartbeat(member_id="member", member_epoch=-1)
    records = ctx.sleep(60_000)
    assert Record(ConsumerGroupMetadataKey(GROUP_ID), None) in records
    assert GROUP_ID not in ctx.coordinator.consumer_groups


def test_failed_write_of_a_heartbeat_keeps_the_offsets():
    """CG-60: putting the group back after a failed heartbeat write leaves its offsets."""
    ctx = Offsets()
    epoch = ctx.join("member")
    ctx.commit("member", epoch)
    ctx.coordinator.handle(FailNextWrite(ErrorCode.NOT_LEADER_OR_FOLLOWER, now_ms=ctx.now_ms))
    response, _ = ctx.heartbeat(member_id="m2", subscribed_topic_names=("foo",), **JOIN)
    assert response.error_code == ErrorCode.NOT_COORDINATOR
    assert ctx.committed() == {("bar", 0): 100}


def test_loading_rebuilds_the_offsets_of_a_consumer_group():
    """CG-60, CG-41: the loaded consumer group holds its offsets; no classic group is made."""
    ctx = Offsets()
    epoch = ctx.join("member")
    ctx.commit("member", epoch)
    loaded = GroupCoordinator(topics=TOPICS, now_ms=ctx.now_ms)
    effects = loaded.handle(LoadGroups(tuple(ctx.log), now_ms=ctx.now_ms))
    assert not [e for e in effects if isinstance(e, AppendRecords)]
    assert GROUP_ID not in loaded.groups
    assert loaded.consumer_groups[GROUP_ID].store.offsets[("bar", 0)].offset == 100


def test_a_classic_join_keeps_the_offsets_of_the_empty_consumer_group():
    """CG-60, CG-36: the classic group that takes an empty consumer group's id has its
    offsets, as Kafka keeps offsets by group id."""
    ctx = Offsets()
    epoch = ctx.join("member")
    ctx.commit("member", epoch)
    ctx.heartbeat(member_id="member", member_epoch=-1)
    join = JoinGroup(30, 3, 0, group_id=GROUP_ID, member_id="", protocols=(Protocol("range"),))
    ctx.coordinator.handle(join)
    assert GROUP_ID not in ctx.coordinator.consumer_groups
    assert ctx.coordinator.groups[GROUP_ID].offsets[("bar", 0)].offset == 100
    assert ctx.fetch().topics[0].partitions[0].committed_offset == 100
