"""Transactional offsets (GM-57 … GM-59), ported from Kafka's OffsetMetadataManagerTest
(testGenericGroupTransactionalOffsetCommit*, test*WithPendingTransactionalOffsets,
testTransactionalReplay, testReplayWithTombstoneAndPendingTransactionalOffsets,
testReplayTransactionEndMarker*), commit 1eb7644349cb07139d6a3c1ad1986979647cac99, and the fixes
of KAFKA-19163 / KAFKA-19164 (Kafka 4.0.1).

Kafka's tests replay records into the offset manager directly; here the records reach the
coordinator the way they do in a broker: written by TxnOffsetCommit and WriteTxnMarker, or read
from a partition by LoadGroups. A record's place in the log is its order of completion.

Skipped Kafka tests:
- testConsumerGroupTransactionalOffsetCommit*: KIP-848 consumer groups are not modelled.
- testOffsetCommitsNumberMetricWithTransactionalOffsets: metrics are not modelled.
"""

from __future__ import annotations

from driver import GROUP_ID, Driver, kafka_test_config
from test_offset_delete import stable_consumer_group

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import FailNextWrite
from coordspec.reference.group.records import (
    EndTransactionMarker,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    FetchPartitionResponse,
    TxnOffsetCommitResponse,
)

UNSTABLE = ErrorCode.UNSTABLE_OFFSET_COMMIT


def offsets(d: Driver, group_id: str = GROUP_ID) -> dict[tuple[str, int], int]:
    return {p: v.offset for p, v in d.group(group_id).offsets.items()}


def pending(d: Driver, producer_id: int, group_id: str = GROUP_ID) -> dict[tuple[str, int], int]:
    return {p: o.value.offset for p, o in d.group(group_id).pending_offsets[producer_id].items()}


def answers(fetch) -> dict[tuple[str, int], tuple[int, ErrorCode]]:
    return {
        (t.name, p.partition_index): (p.committed_offset, p.error_code)
        for t in fetch.response.topics
        for p in t.partitions
    }


def commit_record(group: str, topic: str, partition: int, offset: int, producer_id: int = -1):
    return Record(
        OffsetCommitKey(group, topic, partition),
        OffsetCommitValue(offset, -1, "small", 0),
        producer_id,
    )


# -- TxnOffsetCommit -----------------------------------------------------------------------


def test_generic_group_transactional_offset_commit():
    """OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommit"""
    d = Driver(kafka_test_config())
    member = stable_consumer_group(d, "foo", "bar")
    commit = d.txn_commit(
        {("bar", 0): 100},
        group_id="foo",
        member_id=member,
        generation_id=1,
        leader_epoch=10,
        metadata="metadata",
        producer_id=10,
    )
    assert commit.response == TxnOffsetCommitResponse(
        (CommitTopicResponse("bar", (CommitPartitionResponse(0, ErrorCode.NONE),)),)
    )
    [record] = commit.records
    assert record == Record(
        OffsetCommitKey("foo", "bar", 0),
        OffsetCommitValue(100, 10, "metadata", d.now_ms),
        producer_id=10,
    )
    assert offsets(d, "foo") == {} and pending(d, 10, "foo") == {("bar", 0): 100}


def test_generic_group_transactional_offset_commit_with_unknown_group_id():
    """OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownGroupId:
    a member's commit to a group that does not exist is refused with ILLEGAL_GENERATION at every
    version (an OffsetCommit v9 would name the missing group)."""
    d = Driver(kafka_test_config())
    commit = d.txn_commit({("bar", 0): 100}, group_id="foo", member_id="member", generation_id=10)
    assert commit.response.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    assert "foo" not in d.coordinator.groups


def test_generic_group_transactional_offset_commit_with_unknown_member_id():
    """OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownMemberId"""
    d = Driver(kafka_test_config())
    d.commit({("bar", 0): 1}, group_id="foo")  # an empty (simple) group
    commit = d.txn_commit({("bar", 0): 100}, group_id="foo", member_id="member", generation_id=10)
    assert commit.response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_generic_group_transactional_offset_commit_with_illegal_generation_id():
    """OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithIllegalGenerationId"""
    d = Driver(kafka_test_config())
    member = stable_consumer_group(d, "foo", "bar")
    commit = d.txn_commit({("bar", 0): 100}, group_id="foo", member_id=member, generation_id=100)
    assert commit.response.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION


def test_a_producer_outside_the_group_commits_in_any_state():
    """ClassicGroup.validateOffsetCommit: without member id and generation (as every
    TxnOffsetCommit below v3 is) a transactional commit is accepted in a Stable group, where an
    OffsetCommit gets UNKNOWN_MEMBER_ID; a member's is accepted while the group completes its
    rebalance, where an OffsetCommit gets REBALANCE_IN_PROGRESS."""
    d = Driver(kafka_test_config())
    member = stable_consumer_group(d, "foo", "bar")
    assert d.commit({("bar", 0): 1}, group_id="foo").response.topics[0].partitions[
        0
    ].error_code == (ErrorCode.UNKNOWN_MEMBER_ID)
    for version in (0, 2, 5):
        commit = d.txn_commit({("bar", 0): 100}, group_id="foo", version=version)
        assert commit.response.topics[0].partitions[0].error_code == ErrorCode.NONE
    d.join(member, group_id="foo", protocols=d.group("foo").members[member].protocols)
    assert str(d.group("foo").state) == "CompletingRebalance"
    generation = d.group("foo").generation_id
    plain = d.commit({("bar", 0): 1}, group_id="foo", member_id=member, generation_id=generation)
    assert plain.response.topics[0].partitions[0].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    txn = d.txn_commit({("bar", 0): 2}, group_id="foo", member_id=member, generation_id=generation)
    assert txn.response.topics[0].partitions[0].error_code == ErrorCode.NONE


def test_an_empty_group_id_is_invalid():
    """GroupCoordinatorService.commitTransactionalOffsets: a null or empty group id."""
    d = Driver(kafka_test_config())
    for group_id in ("", None):
        commit = d.txn_commit({("bar", 0): 1}, group_id=group_id)
        assert commit.response.topics[0].partitions[0].error_code == ErrorCode.INVALID_GROUP_ID
    assert d.coordinator.groups == {}


def test_partitions_that_do_not_exist_are_refused_before_the_coordinator():
    """KafkaApis.handleTxnOffsetCommitRequest (GM-56): as for OffsetCommit."""
    d = Driver(kafka_test_config(), topics={"bar": 1})
    commit = d.txn_commit({("bar", 0): 1, ("bar", 1): 2, ("nope", 0): 3}, group_id="foo")
    assert isinstance(commit.response, TxnOffsetCommitResponse)
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert commit.response == TxnOffsetCommitResponse(
        (
            CommitTopicResponse(
                "bar",
                (CommitPartitionResponse(1, unknown), CommitPartitionResponse(0, ErrorCode.NONE)),
            ),
            CommitTopicResponse("nope", (CommitPartitionResponse(0, unknown),)),
        )
    )
    nothing = d.txn_commit({("nope", 0): 3}, group_id="other")
    assert (
        nothing.response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert "other" not in d.coordinator.groups


# -- OffsetFetch with require_stable ----------------------------------------------------------


def test_fetch_offsets_with_pending_transactional_offsets():
    """OffsetMetadataManagerTest.testFetchOffsetsWithPendingTransactionalOffsets"""
    d = Driver(kafka_test_config())
    d.commit({("foo", 0): 100, ("foo", 1): 110, ("bar", 0): 200}, group_id="group")
    d.txn_commit({("foo", 1): 111, ("bar", 0): 201, ("bar", 1): 211}, group_id="group")
    request = {"foo": (0, 1), "bar": (0, 1)}
    stable = d.fetch(request, group_id="group", require_stable=True)
    assert answers(stable) == {
        ("foo", 0): (100, ErrorCode.NONE),
        ("foo", 1): (-1, UNSTABLE),
        ("bar", 0): (-1, UNSTABLE),
        ("bar", 1): (-1, UNSTABLE),
    }
    assert stable.response.topics[0].partitions[1] == FetchPartitionResponse(1, error_code=UNSTABLE)
    assert answers(d.fetch(request, group_id="group")) == {
        ("foo", 0): (100, ErrorCode.NONE),
        ("foo", 1): (110, ErrorCode.NONE),
        ("bar", 0): (200, ErrorCode.NONE),
        ("bar", 1): (-1, ErrorCode.NONE),
    }
    d.marker(10, "COMMIT", group_id="group")
    assert answers(d.fetch(request, group_id="group", require_stable=True)) == {
        ("foo", 0): (100, ErrorCode.NONE),
        ("foo", 1): (111, ErrorCode.NONE),
        ("bar", 0): (201, ErrorCode.NONE),
        ("bar", 1): (211, ErrorCode.NONE),
    }


def test_fetch_all_offsets_with_pending_transactional_offsets():
    """OffsetMetadataManagerTest.testFetchAllOffsetsWithPendingTransactionalOffsets: a partition
    only a transaction holds is not listed until the transaction commits."""
    d = Driver(kafka_test_config())
    d.commit({("foo", 0): 100, ("foo", 1): 110, ("bar", 0): 200}, group_id="group")
    d.txn_commit({("foo", 1): 111, ("bar", 0): 201, ("bar", 1): 211}, group_id="group")
    assert answers(d.fetch(None, group_id="group", require_stable=True)) == {
        ("bar", 0): (-1, UNSTABLE),
        ("foo", 0): (100, ErrorCode.NONE),
        ("foo", 1): (-1, UNSTABLE),
    }
    assert answers(d.fetch(None, group_id="group")) == {
        ("bar", 0): (200, ErrorCode.NONE),
        ("foo", 0): (100, ErrorCode.NONE),
        ("foo", 1): (110, ErrorCode.NONE),
    }
    d.marker(10, "COMMIT", group_id="group")
    assert answers(d.fetch(None, group_id="group", require_stable=True)) == {
        ("bar", 0): (201, ErrorCode.NONE),
        ("bar", 1): (211, ErrorCode.NONE),
        ("foo", 0): (100, ErrorCode.NONE),
        ("foo", 1): (111, ErrorCode.NONE),
    }


# -- deleting and expiring ---------------------------------------------------------------------


def test_generic_group_offset_delete_with_pending_transactional_offsets():
    """OffsetMetadataManagerTest.testGenericGroupOffsetDeleteWithPendingTransactionalOffsets: a
    partition only a transaction holds gets a tombstone too, and the transaction's offset goes."""
    d = Driver(kafka_test_config())
    d.txn_commit({("bar", 0): 100}, group_id="foo")
    delete = d.delete_offsets({"bar": (0,)}, group_id="foo")
    assert delete.response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert [r.key for r in delete.records] == [OffsetCommitKey("foo", "bar", 0)]
    assert pending(d, 10, "foo") == {}  # the transaction stays open (KAFKA-19164)
    d.marker(10, "COMMIT", group_id="foo")
    assert offsets(d, "foo") == {} and d.group("foo").pending_offsets == {}


def test_delete_group_all_offsets_with_pending_transactional_offsets():
    """OffsetMetadataManagerTest.testDeleteGroupAllOffsetsWithPendingTransactionalOffsets: one
    tombstone per partition, committed or pending, then the group's."""
    d = Driver(kafka_test_config())
    d.commit({("bar-0", 0): 100, ("bar-0", 1): 100, ("bar-1", 0): 100}, group_id="foo")
    d.txn_commit({("bar-1", 0): 101, ("bar-2", 0): 100}, group_id="foo")
    delete = d.delete("foo")
    assert delete.response.results[0].error_code == ErrorCode.NONE
    keys = [r.key for r in delete.records]
    assert keys[:-1] == [
        OffsetCommitKey("foo", "bar-0", 0),
        OffsetCommitKey("foo", "bar-0", 1),
        OffsetCommitKey("foo", "bar-1", 0),
        OffsetCommitKey("foo", "bar-2", 0),
    ]
    assert all(r.value is None for r in delete.records)


def test_cleanup_expired_offsets_with_pending_transactional_offsets():
    """OffsetMetadataManagerTest.testCleanupExpiredOffsetsWithPendingTransactionalOffsets: an
    expired offset a transaction may still change stays; so does the group."""
    d = Driver(kafka_test_config(offsets_retention_ms=60_000))
    d.commit({("foo", 0): 100}, group_id="group-id")
    d.sleep(500)
    d.txn_commit({("foo", 0): 101}, group_id="group-id")
    d.sleep(d.coordinator.config.offsets_retention_check_interval_ms + 60_000)
    assert offsets(d, "group-id") == {("foo", 0): 100}
    d.marker(10, "ABORT", group_id="group-id")
    d.sleep(d.coordinator.config.offsets_retention_check_interval_ms)
    assert "group-id" not in d.coordinator.groups or offsets(d, "group-id") == {}


def test_a_group_with_only_pending_offsets_is_not_expired():
    """KAFKA-19163 (Kafka 4.0.1): a group whose only offsets are a transaction's is kept."""
    d = Driver(kafka_test_config(offsets_retention_ms=60_000))
    d.txn_commit({("foo", 0): 101}, group_id="group-id")
    d.sleep(d.coordinator.config.offsets_retention_check_interval_ms + 60_000)
    assert pending(d, 10, "group-id") == {("foo", 0): 101}
    d.marker(10, "ABORT", group_id="group-id")
    d.sleep(d.coordinator.config.offsets_retention_check_interval_ms)
    assert "group-id" not in d.coordinator.groups


# -- markers and the log -------------------------------------------------------------------------


def test_replay_transaction_end_marker_with_commit():
    """OffsetMetadataManagerTest.testReplayTransactionEndMarkerWithCommit (and its abort)."""
    d = Driver(kafka_test_config())
    d.commit({("bar", 0): 99}, group_id="foo")
    d.txn_commit({("bar", 0): 100}, group_id="foo", producer_id=5)
    d.txn_commit({("bar", 1): 200}, group_id="foo", producer_id=6)
    marker = d.marker(1, "COMMIT", group_id="foo")  # a producer with nothing pending
    assert marker == [Record(EndTransactionMarker("COMMIT"), None, 1)]
    d.marker(5, "COMMIT", group_id="foo")
    assert 5 not in d.group("foo").pending_offsets
    assert offsets(d, "foo") == {("bar", 0): 100}
    d.marker(6, "ABORT", group_id="foo")
    assert d.group("foo").pending_offsets == {}
    assert offsets(d, "foo") == {("bar", 0): 100}


def test_replay_transaction_end_marker_keeps_the_most_recent_committed_offset():
    """OffsetMetadataManagerTest.testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset,
    and the same between two transactions."""
    d = Driver(kafka_test_config())
    d.txn_commit({("bar", 0): 100}, group_id="foo", producer_id=5)
    d.commit({("bar", 0): 101}, group_id="foo")
    d.marker(5, "COMMIT", group_id="foo")
    assert offsets(d, "foo") == {("bar", 0): 101} and d.group("foo").pending_offsets == {}
    d.txn_commit({("bar", 0): 200}, group_id="foo", producer_id=7)
    d.txn_commit({("bar", 0): 300}, group_id="foo", producer_id=8)
    d.marker(8, "COMMIT", group_id="foo")
    d.marker(7, "COMMIT", group_id="foo")  # older than producer 8's: not materialized
    assert offsets(d, "foo") == {("bar", 0): 300}


def test_a_marker_the_log_refuses_changes_nothing():
    """GM-58: the transaction coordinator sends the marker again; until then it is pending."""
    d = Driver(kafka_test_config())
    d.txn_commit({("bar", 0): 100}, group_id="foo")
    d._step(FailNextWrite(ErrorCode.NOT_LEADER_OR_FOLLOWER, d.now_ms))
    assert d.marker(10, "COMMIT", group_id="foo") == []
    assert pending(d, 10, "foo") == {("bar", 0): 100}
    d.marker(10, "COMMIT", group_id="foo")
    assert offsets(d, "foo") == {("bar", 0): 100}


def test_transactional_replay():
    """OffsetMetadataManagerTest.testTransactionalReplay: loaded offsets of open transactions
    are pending, per producer and group."""
    d = Driver(kafka_test_config())
    d.load(
        [
            commit_record("foo", "bar", 0, 100, 5),
            commit_record("foo", "bar", 1, 101, 5),
            commit_record("bar", "zar", 0, 100, 5),
            commit_record("bar", "zar", 1, 101, 5),
            commit_record("foo", "bar", 2, 102, 6),
            commit_record("foo", "bar", 3, 102, 6),
        ]
    )
    assert pending(d, 5, "foo") == {("bar", 0): 100, ("bar", 1): 101}
    assert pending(d, 5, "bar") == {("zar", 0): 100, ("zar", 1): 101}
    assert pending(d, 6, "foo") == {("bar", 2): 102, ("bar", 3): 102}
    assert offsets(d, "foo") == {} and offsets(d, "bar") == {}


def test_replay_with_tombstone_and_pending_transactional_offsets():
    """OffsetMetadataManagerTest.testReplayWithTombstoneAndPendingTransactionalOffsets"""
    d = Driver(kafka_test_config())
    tombstone = Record(OffsetCommitKey("foo", "bar", 0), None)
    d.load(
        [
            commit_record("foo", "bar", 0, 100),
            commit_record("foo", "bar", 0, 100, 10),
            commit_record("foo", "bar", 1, 100, 10),
            tombstone,
            Record(OffsetCommitKey("foo", "bar", 1), None),
        ]
    )
    assert offsets(d, "foo") == {} and pending(d, 10, "foo") == {}


def test_a_loaded_log_keeps_the_most_recent_commit_across_markers():
    """The marker and the record positions are read back by LoadGroups as they were written."""
    d = Driver(kafka_test_config())
    d.txn_commit({("bar", 0): 100}, group_id="foo", producer_id=5)
    d.commit({("bar", 0): 101}, group_id="foo")
    d.txn_commit({("bar", 1): 7}, group_id="foo", producer_id=5)
    d.txn_commit({("bar", 2): 9}, group_id="foo", producer_id=6)
    d.marker(5, "COMMIT", group_id="foo")
    loaded = Driver(kafka_test_config())
    loaded.load(d.log)
    assert offsets(loaded, "foo") == offsets(d, "foo") == {("bar", 0): 101, ("bar", 1): 7}
    assert pending(loaded, 6, "foo") == {("bar", 2): 9}
    loaded.txn_commit({("bar", 2): 10}, group_id="foo", producer_id=7)
    loaded.marker(7, "COMMIT", group_id="foo")
    loaded.marker(6, "COMMIT", group_id="foo")  # written before producer 7's: not materialized
    assert offsets(loaded, "foo")[("bar", 2)] == 10
