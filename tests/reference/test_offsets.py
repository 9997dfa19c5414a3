"""OffsetCommit, OffsetFetch and offset expiry, ported from Kafka's OffsetMetadataManagerTest
(and ClassicGroupTest.testValidateOffsetCommit), commit 1eb7644349cb07139d6a3c1ad1986979647cac99.

Kafka builds groups by hand (adding members, forcing states); here every group is reached
through the protocol, so member ids are the ones the coordinator hands out. Kafka's
"committed offset" (timeline) reads map to ``Driver(complete_appends=False)``: a commit's
offsets become visible to OffsetFetch only once its append completes. Offset expiry is
driven by the periodic retention sweep (``offsets_retention_check_interval_ms``). Where it
matters, sleeps end on a sweep's deadline: the reference runs the sweep at each of its deadlines
during a long sleep (Kafka's mock timer would run it once, at the end of the sleep), so an offset's
tombstone is checked at the first sweep at which it is due.

Skipped Kafka tests:
- testGenericGroupTransactionalOffsetCommit: TxnOffsetCommit is not modelled.
- testGenericGroupTransactionalOffsetCommitWithUnknownGroupId: TxnOffsetCommit is not modelled.
- testGenericGroupTransactionalOffsetCommitWithUnknownMemberId: TxnOffsetCommit is not modelled.
- testGenericGroupTransactionalOffsetCommitWithIllegalGenerationId: TxnOffsetCommit is not modelled.
- testFetchOffsetsWithPendingTransactionalOffsets: pending transactional offsets are not modelled.
- testFetchAllOffsetsWithPendingTransactionalOffsets: pending transactional offsets are not modelled.
- testGenericGroupOffsetDelete*: ported in test_offset_delete.py.
- testDeleteGroupAllOffsets: internal helper of DeleteGroups; covered through DeleteGroups in test_describe_list_delete.py.
- testDeleteGroupAllOffsetsWithPendingTransactionalOffsets: pending transactional offsets are not modelled.
- testCleanupExpiredOffsetsGroupDoesNotExist: needs offsets without a group (a mocked group manager); the reference always has a group for its offsets.
- testCleanupExpiredOffsetsWithPendingTransactionalOffsets: pending transactional offsets are not modelled.
- testOnPartitionsDeleted: topic deletion is not an input of the reference.
- testTransactionalReplay / testReplayWithTombstoneAndPendingTransactionalOffsets /
  testReplayTransactionEndMarkerWithCommit / testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset:
  transactions are not modelled (testReplay is ported in test_loader.py).
- testOffsetCommitsNumberMetricWithTransactionalOffsets / testOffsetCommitsSensor / testOffsetsExpiredSensor /
  testOffsetDeletionsSensor: metrics only.
- All KIP-848 consumer-group member-epoch tests (testConsumerGroupOffsetCommit*, except the group-agnostic
  metadata-too-large one, ported on a classic group): consumer groups are not modelled.
"""

from __future__ import annotations

import pytest
from driver import GROUP_ID, Driver, kafka_test_config
from kafka_context import (
    group_tombstone,
    join_dynamic_and_complete_rebalance,
    offset_tombstone,
    session_deadline,
)

from coordspec.reference.consumer_protocol import Subscription, encode_subscription
from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.group import (
    CommitPartition,
    CommitTopic,
    FetchGroup,
    FetchTopic,
    OffsetCommit,
    OffsetFetch,
    Protocol,
)
from coordspec.reference.group.records import OffsetCommitKey, OffsetCommitValue, Record
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    FetchGroupResponse,
    FetchPartitionResponse,
    FetchTopicResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)

COMMIT_VERSIONS = range(2, 10)


# -- helpers ----------------------------------------------------------------------------------


def commit_response(topic: str, *partitions: tuple[int, ErrorCode]) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        (CommitTopicResponse(topic, tuple(CommitPartitionResponse(p, e) for p, e in partitions)),)
    )


def commit_record(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    leader_epoch: int = -1,
    metadata: str = "",
    commit_timestamp: int,
    expire_timestamp: int = -1,
) -> Record:
    return Record(
        OffsetCommitKey(group, topic, partition),
        OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp),
    )


def invalid(partition: int) -> FetchPartitionResponse:
    """Kafka's "invalid offset" fetch partition: offset -1, epoch -1, metadata "", NONE."""
    return FetchPartitionResponse(partition, -1, -1, "", ErrorCode.NONE)


def fetched(
    partition: int, offset: int, leader_epoch: int, metadata: str = "metadata"
) -> FetchPartitionResponse:
    return FetchPartitionResponse(partition, offset, leader_epoch, metadata, ErrorCode.NONE)


def fetch_topics(response: OffsetFetchResponse) -> dict[str, tuple[FetchPartitionResponse, ...]]:
    """Topics by name: Kafka lists them in hash-map order, so only the partitions' order counts."""
    assert response.error_code == ErrorCode.NONE
    topics = {t.name: t.partitions for t in response.topics}
    assert len(topics) == len(response.topics), "a topic is listed twice"
    return topics


def subscribing(*topics: str, name: str = "range") -> tuple[Protocol, ...]:
    return (Protocol(name, encode_subscription(Subscription(tuple(topics)))),)


def static_member_completing(
    d: Driver,
    *,
    group_id: str = "foo",
    instance_id: str = "new-instance-id",
    session_timeout_ms: int = 5_000,
    rebalance_timeout_ms: int = 5_000,
) -> str:
    """A group with one static member at generation 1, CompletingRebalance (Kafka: add member,
    transition to PreparingRebalance, initNextGeneration). Returns the member id."""
    join = d.join(
        group_id=group_id,
        group_instance_id=instance_id,
        version=5,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
    )
    assert not join.done
    d.sleep(d.coordinator.config.initial_rebalance_delay_ms)
    assert join.error == ErrorCode.NONE and join.response.generation_id == 1
    assert str(d.group(group_id).state) == "CompletingRebalance"
    return join.response.member_id


def stabilize(
    d: Driver,
    member_id: str,
    *,
    group_id: str = "foo",
    generation_id: int = 1,
    group_instance_id: str | None = None,
) -> None:
    sync = d.sync(
        member_id,
        generation_id,
        group_id=group_id,
        group_instance_id=group_instance_id,
        assignments={member_id: b""},
    )
    assert sync.error == ErrorCode.NONE
    assert str(d.group(group_id).state) == "Stable"


# -- OffsetCommit -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_with_unknown_group(version):
    """OffsetMetadataManagerTest.testOffsetCommitWithUnknownGroup"""
    d = Driver()
    commit = d.commit(
        {("bar", 0): 100}, group_id="foo", member_id="member", generation_id=10, version=version
    )
    expected = ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
    assert commit.response == commit_response("bar", (0, expected))
    assert commit.records == []
    assert "foo" not in d.coordinator.groups


def test_generic_group_offset_commit_with_dead_group():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithDeadGroup"""
    d = Driver()
    created = d.commit(
        {("bar", 0): 1}, group_id="foo"
    )  # a simple commit creates the classic group "foo"
    assert created.response == commit_response("bar", (0, ErrorCode.NONE))
    d.unload()  # Kafka transitions the group to Dead directly
    assert str(d.group("foo").state) == "Dead"
    commit = d.commit({("bar", 0): 100}, group_id="foo", member_id="member", generation_id=10)
    assert commit.response == commit_response("bar", (0, ErrorCode.COORDINATOR_NOT_AVAILABLE))
    assert commit.records == []


def test_generic_group_offset_commit_with_unknown_member_id():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithUnknownMemberId"""
    d = Driver()
    d.commit({("other", 0): 1}, group_id="foo")  # creates "foo", Empty, no members
    assert str(d.group("foo").state) == "Empty" and not d.group("foo").members
    commit = d.commit({("bar", 0): 100}, group_id="foo", member_id="member", generation_id=10)
    assert commit.response == commit_response("bar", (0, ErrorCode.UNKNOWN_MEMBER_ID))
    assert commit.records == []


def test_generic_group_offset_commit_with_illegal_generation():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithIllegalGeneration"""
    d = Driver()
    member = static_member_completing(d)
    # Without an instance id; the generation check comes before the rebalance-in-progress one.
    commit = d.commit({("bar", 0): 100}, group_id="foo", member_id=member, generation_id=10)
    assert commit.response == commit_response("bar", (0, ErrorCode.ILLEGAL_GENERATION))
    assert commit.records == []


def test_generic_group_offset_commit_with_unknown_instance_id():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithUnknownInstanceId"""
    # Kafka's group is Empty with a dynamic member, a state the protocol never produces; a
    # Stable group with one dynamic member exercises the same validateMember rule.
    d = Driver()
    member = join_dynamic_and_complete_rebalance(
        d, group_id="foo", create_group=False
    ).response.member_id
    commit = d.commit(
        {("bar", 0): 100},
        group_id="foo",
        member_id=member,
        group_instance_id="instanceid",
        generation_id=10,
    )
    assert commit.response == commit_response("bar", (0, ErrorCode.UNKNOWN_MEMBER_ID))
    assert commit.records == []


def test_generic_group_offset_commit_with_fenced_instance_id():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithFencedInstanceId"""
    d = Driver()
    member = static_member_completing(d, instance_id="new-instance-id")
    # The instance id is unknown to the group, so the member is unknown rather than fenced.
    commit = d.commit(
        {("bar", 0): 100},
        group_id="foo",
        member_id=member,
        group_instance_id="old-instance-id",
        generation_id=10,
    )
    assert commit.response == commit_response("bar", (0, ErrorCode.UNKNOWN_MEMBER_ID))
    assert commit.records == []


def test_generic_group_offset_commit_while_in_completing_rebalance_state():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWhileInCompletingRebalanceState"""
    d = Driver()
    member = static_member_completing(d)
    commit = d.commit({("bar", 0): 100}, group_id="foo", member_id=member, generation_id=1)
    assert commit.response == commit_response("bar", (0, ErrorCode.REBALANCE_IN_PROGRESS))
    assert commit.records == []


def test_generic_group_offset_commit_without_member_id_and_generation():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithoutMemberIdAndGeneration"""
    d = Driver()
    static_member_completing(d)
    commit = d.commit({("bar", 0): 100}, group_id="foo")  # member "", generation -1, no instance id
    assert commit.response == commit_response("bar", (0, ErrorCode.UNKNOWN_MEMBER_ID))
    assert commit.records == []


def test_generic_group_offset_commit_with_retention_time():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithRetentionTime"""
    d = Driver()
    member = static_member_completing(d)
    stabilize(d, member, group_instance_id="new-instance-id")
    # Kafka sends the retention at the latest version (its manager ignores the version); on the
    # wire the field exists only in v2-v4, so the commit goes at v4.
    commit = d.commit(
        {("bar", 0): 100},
        group_id="foo",
        member_id=member,
        generation_id=1,
        retention_time_ms=1234,
        version=4,
    )
    assert commit.response == commit_response("bar", (0, ErrorCode.NONE))
    assert commit.records == [
        commit_record(
            "foo",
            "bar",
            0,
            100,
            metadata="",
            commit_timestamp=d.now_ms,
            expire_timestamp=d.now_ms + 1234,
        )
    ]


def test_generic_group_offset_commit_maintains_session():
    """OffsetMetadataManagerTest.testGenericGroupOffsetCommitMaintainsSession"""
    d = Driver()
    member = join_dynamic_and_complete_rebalance(
        d, group_id="foo", create_group=False
    ).response.member_id  # session 5000
    assert session_deadline(d, member, "foo") == d.now_ms + 5_000
    assert d.sleep(2_500) == []
    assert member in d.group("foo").members
    commit = d.commit(
        {("bar", 0): 100},
        group_id="foo",
        member_id=member,
        generation_id=1,
        retention_time_ms=1234,
        version=4,
    )
    assert commit.response == commit_response("bar", (0, ErrorCode.NONE))
    assert session_deadline(d, member, "foo") == d.now_ms + 5_000  # rescheduled by the commit
    d.sleep(2_500)  # past the deadline the session had before the commit
    assert member in d.group("foo").members
    d.sleep(2_500)
    assert member not in d.group("foo").members


def test_offset_commit_in_preparing_rebalance_is_accepted_and_maintains_session():
    """A member of the current generation may commit while the group prepares a rebalance (GM-52)."""
    d = Driver()
    first = join_dynamic_and_complete_rebalance(
        d, group_id="foo", create_group=False
    ).response.member_id
    newcomer = d.join(
        group_id="foo", version=3, session_timeout_ms=5_000, rebalance_timeout_ms=10_000
    )
    assert not newcomer.done and str(d.group("foo").state) == "PreparingRebalance"
    d.sleep(1_000)
    commit = d.commit({("bar", 0): 7}, group_id="foo", member_id=first, generation_id=1)
    assert commit.response == commit_response("bar", (0, ErrorCode.NONE))
    assert session_deadline(d, first, "foo") == d.now_ms + 5_000


def test_simple_group_offset_commit():
    """OffsetMetadataManagerTest.testSimpleGroupOffsetCommit"""
    d = Driver(now_ms=1_000)
    commit = d.commit({("bar", 0): 100}, group_id="foo")
    assert commit.response == commit_response("bar", (0, ErrorCode.NONE))
    assert commit.records == [commit_record("foo", "bar", 0, 100, commit_timestamp=1_000)]
    group = d.group("foo")
    assert str(group.state) == "Empty" and group.protocol_type is None and not group.members


def test_simple_group_offset_commit_with_instance_id():
    """OffsetMetadataManagerTest.testSimpleGroupOffsetCommitWithInstanceId"""
    d = Driver(now_ms=1_000)
    commit = d.commit({("bar", 0): 100}, group_id="foo", group_instance_id="instance-id")
    assert commit.response == commit_response("bar", (0, ErrorCode.NONE))
    assert commit.records == [commit_record("foo", "bar", 0, 100, commit_timestamp=1_000)]
    assert str(d.group("foo").state) == "Empty"


def test_consumer_group_offset_commit_with_offset_metadata_too_large():
    """OffsetMetadataManagerTest.testConsumerGroupOffsetCommitWithOffsetMetadataTooLarge (on a classic simple group)"""
    d = Driver(kafka_test_config(offset_metadata_max_bytes=5))
    commit = d.send(
        OffsetCommit,
        group_id="foo",
        topics=(
            CommitTopic(
                "bar",
                (
                    CommitPartition(0, 100, 10, "toolarge"),
                    CommitPartition(1, 100, 10, "small"),
                ),
            ),
        ),
    )
    assert commit.response == commit_response(
        "bar", (0, ErrorCode.OFFSET_METADATA_TOO_LARGE), (1, ErrorCode.NONE)
    )
    assert commit.records == [
        commit_record(
            "foo", "bar", 1, 100, leader_epoch=10, metadata="small", commit_timestamp=d.now_ms
        )
    ]
    assert fetch_topics(d.fetch({"bar": (0, 1)}, group_id="foo").response) == {
        "bar": (invalid(0), fetched(1, 100, 10, "small")),
    }


def test_offset_commit_with_null_metadata_stores_empty_metadata():
    """A null committed metadata is stored as "" (OffsetAndMetadata.NO_METADATA) and is never too large."""
    d = Driver(kafka_test_config(offset_metadata_max_bytes=0))
    commit = d.commit({("bar", 0): 100}, group_id="foo", metadata=None)
    assert commit.response == commit_response("bar", (0, ErrorCode.NONE))
    assert commit.records == [
        commit_record("foo", "bar", 0, 100, metadata="", commit_timestamp=d.now_ms)
    ]
    assert fetch_topics(d.fetch({"bar": (0,)}, group_id="foo").response) == {
        "bar": (fetched(0, 100, -1, ""),)
    }


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_validate_offset_commit(version):
    """ClassicGroupTest.testValidateOffsetCommit (instance-id cases only from v7, where the field exists)"""
    d = Driver()
    instance = version >= 7

    def commit(member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        pending = d.commit(
            {("bar", 0): 100},
            group_id=GROUP_ID,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=instance_id if instance else None,
            version=version,
        )
        errors = {p.error_code for t in pending.response.topics for p in t.partitions}
        assert len(errors) == 1
        return errors.pop()

    # Empty: a commit from outside group management passes (instance id "" is ignored too).
    assert commit("", "", -1) == ErrorCode.NONE
    assert str(d.group().state) == "Empty"

    member = static_member_completing(d, group_id=GROUP_ID, instance_id="instance-id")
    assert commit("", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("unknown", "unknown", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    if instance:
        assert commit(member, "unknown", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(member, "instance-id", 0) == ErrorCode.ILLEGAL_GENERATION
    assert commit(member, "instance-id", 1) == ErrorCode.REBALANCE_IN_PROGRESS

    stabilize(d, member, group_id=GROUP_ID, group_instance_id="instance-id")
    assert commit(member, "instance-id", 1) == ErrorCode.NONE

    if instance:
        # replaceStaticMember: the instance rejoins with an unknown member id and takes over.
        rejoin = d.join(
            group_id=GROUP_ID,
            group_instance_id="instance-id",
            version=5,
            session_timeout_ms=5_000,
            rebalance_timeout_ms=5_000,
        )
        assert rejoin.error == ErrorCode.NONE and rejoin.response.member_id != member
        assert commit(member, "instance-id", 1) == ErrorCode.FENCED_INSTANCE_ID

    d.unload()
    assert commit(member, "instance-id", 1) == ErrorCode.COORDINATOR_NOT_AVAILABLE


# -- OffsetFetch ------------------------------------------------------------------------------


def test_generic_group_fetch_offsets_with_dead_group():
    """OffsetMetadataManagerTest.testGenericGroupFetchOffsetsWithDeadGroup"""
    d = Driver()
    d.commit({("foo", 0): 100, ("bar", 0): 200}, group_id="group")
    d.unload()
    assert str(d.group("group").state) == "Dead"
    response = d.fetch({"foo": (0, 1), "bar": (0,)}, group_id="group").response
    assert response == OffsetFetchResponse(
        ErrorCode.NONE,
        (
            FetchTopicResponse("foo", (invalid(0), invalid(1))),
            FetchTopicResponse("bar", (invalid(0),)),
        ),
    )


def test_fetch_offsets_with_unknown_group():
    """OffsetMetadataManagerTest.testFetchOffsetsWithUnknownGroup"""
    d = Driver()
    response = d.fetch({"foo": (0, 1), "bar": (0,)}, group_id="group").response
    assert response == OffsetFetchResponse(
        ErrorCode.NONE,
        (
            FetchTopicResponse("foo", (invalid(0), invalid(1))),
            FetchTopicResponse("bar", (invalid(0),)),
        ),
    )
    assert "group" not in d.coordinator.groups


def test_generic_group_fetch_all_offsets_with_dead_group():
    """OffsetMetadataManagerTest.testGenericGroupFetchAllOffsetsWithDeadGroup"""
    d = Driver()
    d.commit({("foo", 0): 100}, group_id="group")
    d.unload()
    assert d.fetch(None, group_id="group").response == OffsetFetchResponse(ErrorCode.NONE, ())


def test_fetch_all_offsets_with_unknown_group():
    """OffsetMetadataManagerTest.testFetchAllOffsetsWithUnknownGroup"""
    d = Driver()
    assert d.fetch(None, group_id="group").response == OffsetFetchResponse(ErrorCode.NONE, ())


def test_fetch_several_groups_answers_each_as_if_alone():
    """GM-54: an OffsetFetch v8+ naming several groups (KafkaApis answers each group from its
    own fetchOffsets or fetchAllOffsets): a known group's offsets, an unknown group's -1 or
    nothing, in the order named; v9's member fields are not read for a classic group."""
    d = Driver()
    d.commit({("foo", 0): 100, ("bar", 0): 200}, group_id="group")
    d.commit({("foo", 0): 7}, group_id="other")
    response = d.send(
        OffsetFetch,
        9,
        group_id="missing",
        topics=(FetchTopic("foo", (0,)),),
        other_groups=(
            FetchGroup("group", (FetchTopic("foo", (0, 1)),), "no-such-member", 42),
            FetchGroup("other", None),
            FetchGroup("missing", None),
        ),
    ).response
    assert response == OffsetFetchResponse(
        ErrorCode.NONE,
        (FetchTopicResponse("foo", (invalid(0),)),),
        (
            FetchGroupResponse(
                "group",
                ErrorCode.NONE,
                (FetchTopicResponse("foo", (fetched(0, 100, -1, ""), invalid(1))),),
            ),
            FetchGroupResponse(
                "other", ErrorCode.NONE, (FetchTopicResponse("foo", (fetched(0, 7, -1, ""),)),)
            ),
            FetchGroupResponse("missing", ErrorCode.NONE, ()),
        ),
    )
    assert "missing" not in d.coordinator.groups


@pytest.mark.parametrize("version", range(1, 10))
def test_fetch_of_several_groups_or_member_fields_needs_their_version(version):
    """Several groups need v8+ and the member fields v9+: a caller's misuse, never sent."""
    several = {"other_groups": (FetchGroup("other"),)}
    member = {"member_id": "m", "member_epoch": 1}
    for fields, since in ((several, 8), (member, 9)):
        if version < since:
            with pytest.raises(UsageError, match=f"need v{since}\\+"):
                OffsetFetch(1, version, 0, group_id="g", **fields)
        else:
            OffsetFetch(1, version, 0, group_id="g", **fields)


def _five_commits(d: Driver):
    """Kafka's replays foo-0=100, foo-1=110, bar-0=200 (epoch 1), foo-1=111, bar-1=210 (epoch 2),
    each as its own commit; yields after each commit with its append (not yet completed)."""
    for (topic, partition), offset, epoch in (
        (("foo", 0), 100, 1),
        (("foo", 1), 110, 1),
        (("bar", 0), 200, 1),
        (("foo", 1), 111, 2),
        (("bar", 1), 210, 2),
    ):
        commit = d.commit(
            {(topic, partition): offset}, group_id="group", leader_epoch=epoch, metadata="metadata"
        )
        assert not commit.done and len(d.appends) == 1
        yield commit, d.appends[0]


def test_fetch_offsets_at_different_committed_offset():
    """OffsetMetadataManagerTest.testFetchOffsetsAtDifferentCommittedOffset (on a classic simple group)"""
    d = Driver(complete_appends=False)
    pending = list(_five_commits(d))
    request = {"foo": (0, 1), "bar": (0, 1)}
    expected = [
        {"foo": (invalid(0), invalid(1)), "bar": (invalid(0), invalid(1))},
        {"foo": (fetched(0, 100, 1), invalid(1)), "bar": (invalid(0), invalid(1))},
        {"foo": (fetched(0, 100, 1), fetched(1, 110, 1)), "bar": (invalid(0), invalid(1))},
        {"foo": (fetched(0, 100, 1), fetched(1, 110, 1)), "bar": (fetched(0, 200, 1), invalid(1))},
        {"foo": (fetched(0, 100, 1), fetched(1, 111, 2)), "bar": (fetched(0, 200, 1), invalid(1))},
        {
            "foo": (fetched(0, 100, 1), fetched(1, 111, 2)),
            "bar": (fetched(0, 200, 1), fetched(1, 210, 2)),
        },
    ]
    for committed in range(6):
        if committed:
            commit, append = pending[committed - 1]
            d.complete(append)
            assert commit.response == commit_response(
                append.records[0].key.topic, (append.records[0].key.partition, ErrorCode.NONE)
            )
        assert fetch_topics(d.fetch(request, group_id="group").response) == expected[committed], (
            committed
        )
    # Kafka's Long.MAX_VALUE ("require stable") read sees the same once everything is committed.
    stable = d.send(
        OffsetFetch,
        group_id="group",
        topics=tuple(FetchTopic(t, ps) for t, ps in request.items()),
        require_stable=True,
    )
    assert fetch_topics(stable.response) == expected[5]


def test_fetch_all_offsets_at_different_committed_offset():
    """OffsetMetadataManagerTest.testFetchAllOffsetsAtDifferentCommittedOffset (on a classic simple group)"""
    d = Driver(complete_appends=False)
    pending = list(_five_commits(d))
    expected = [
        {},
        {"foo": (fetched(0, 100, 1),)},
        {"foo": (fetched(0, 100, 1), fetched(1, 110, 1))},
        {"bar": (fetched(0, 200, 1),), "foo": (fetched(0, 100, 1), fetched(1, 110, 1))},
        {"bar": (fetched(0, 200, 1),), "foo": (fetched(0, 100, 1), fetched(1, 111, 2))},
        {
            "bar": (fetched(0, 200, 1), fetched(1, 210, 2)),
            "foo": (fetched(0, 100, 1), fetched(1, 111, 2)),
        },
    ]
    for committed in range(6):
        if committed:
            commit, append = pending[committed - 1]
            d.complete(append)
            assert commit.done
        assert fetch_topics(d.fetch(None, group_id="group").response) == expected[committed], (
            committed
        )


def test_offset_fetch_sees_offsets_only_after_commit_is_acknowledged():
    """A commit whose append fails is never visible, and its partitions get the mapped error."""
    d = Driver(complete_appends=False)
    commit = d.commit({("bar", 0): 100}, group_id="group")
    d.complete(d.appends[0], ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert commit.response == commit_response("bar", (0, ErrorCode.NOT_COORDINATOR))
    assert fetch_topics(d.fetch({"bar": (0,)}, group_id="group").response) == {"bar": (invalid(0),)}


def test_fetch_returns_latest_committed_metadata_and_epoch():
    """OffsetFetch returns the last committed offset, leader epoch (v5+) and metadata."""
    d = Driver()
    d.commit({("bar", 0): 1}, group_id="g", leader_epoch=3, metadata="m1")
    d.commit({("bar", 0): 2}, group_id="g", leader_epoch=4, metadata="m2")
    assert fetch_topics(d.fetch({"bar": (0,)}, group_id="g").response) == {
        "bar": (fetched(0, 2, 4, "m2"),)
    }
    old = d.fetch({"bar": (0,)}, group_id="g", version=4).response  # no leader epoch below v5
    assert fetch_topics(old) == {"bar": (fetched(0, 2, -1, "m2"),)}


# -- expiry -----------------------------------------------------------------------------------


def expiry_config(**overrides):
    settings = dict(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=500)
    settings.update(overrides)
    return kafka_test_config(**settings)


def test_cleanup_expired_offsets_group_has_no_offsets():
    """OffsetMetadataManagerTest.testCleanupExpiredOffsetsGroupHasNoOffsets"""
    # A group without offsets counts as "all expired": an Empty one is deleted by the sweep with a
    # lone group tombstone, a non-empty one is left alone (maybeDeleteGroup).
    d = Driver(expiry_config())
    join_dynamic_and_complete_rebalance(d, group_id="stable-group", create_group=False)
    member = join_dynamic_and_complete_rebalance(
        d, group_id="empty-group", create_group=False
    ).response.member_id
    leave = d.leave(member, group_id="empty-group")
    assert leave.error == ErrorCode.NONE and str(d.group("empty-group").state) == "Empty"
    records = d.sleep(500)
    assert records == [group_tombstone("empty-group")]
    assert "empty-group" not in d.coordinator.groups
    assert str(d.group("stable-group").state) == "Stable"


def test_cleanup_expired_offsets_empty_offset_expiration_condition():
    """OffsetMetadataManagerTest.testCleanupExpiredOffsetsEmptyOffsetExpirationCondition"""
    # A Stable group of a non-consumer protocol has no expiration condition: nothing expires.
    d = Driver(expiry_config())
    join = d.join(
        group_id="connect-group",
        version=3,
        protocol_type="connect",
        protocols=(Protocol("default", b"\x01"),),
        session_timeout_ms=600_000,
        rebalance_timeout_ms=10_000,
    )
    d.sleep(3_000)
    member = join.response.member_id
    sync = d.sync(
        member,
        1,
        group_id="connect-group",
        protocol_type="connect",
        protocol_name="default",
        assignments={member: b""},
    )
    assert sync.error == ErrorCode.NONE
    d.commit({("bar", 0): 100}, group_id="connect-group", member_id=member, generation_id=1)
    assert d.sleep(200_000) == []
    assert (
        fetch_topics(d.fetch({"bar": (0,)}, group_id="connect-group").response)["bar"][
            0
        ].committed_offset
        == 100
    )


def test_cleanup_expired_offsets():
    """OffsetMetadataManagerTest.testCleanupExpiredOffsets"""
    d = Driver(expiry_config())
    join = d.join(
        group_id="foo",
        version=3,
        protocols=subscribing("firstTopic"),
        session_timeout_ms=600_000,
        rebalance_timeout_ms=10_000,
    )
    d.sleep(3_000)
    member = join.response.member_id
    stabilize(d, member)
    t0 = d.now_ms
    assert t0 % 500 == 0  # the sweep runs every 500 ms from time 0
    d.commit(
        {("firstTopic", 0): 100, ("secondTopic", 0): 100},
        group_id="foo",
        member_id=member,
        generation_id=1,
    )
    d.sleep(500)
    d.commit({("secondTopic", 1): 100}, group_id="foo", member_id=member, generation_id=1)

    # Base timestamp: the commit's (Stable consumer group); the subscribed firstTopic never expires.
    assert d.sleep(t0 + 59_500 - d.now_ms) == []
    assert d.sleep(500) == [offset_tombstone("foo", "secondTopic", 0)]
    assert d.sleep(500) == [offset_tombstone("foo", "secondTopic", 1)]

    # firstTopic is no longer subscribed (Kafka sets the subscribed topics directly; here the member
    # rejoins with a new subscription).
    rejoin = d.join(
        member,
        group_id="foo",
        version=3,
        protocols=subscribing("otherTopic"),
        session_timeout_ms=600_000,
        rebalance_timeout_ms=10_000,
    )
    assert rejoin.error == ErrorCode.NONE and rejoin.response.generation_id == 2
    stabilize(d, member, generation_id=2)
    d.commit(
        {("firstTopic", 1): 100, ("secondTopic", 0): 101},
        group_id="foo",
        member_id=member,
        generation_id=2,
    )
    # Kafka replays these two commits with commit timestamp t0 + 500, so all three offsets expire in
    # one cleanup. Through the API they are stamped now (t0 + 60500): firstTopic-0 expires at the
    # next sweep, the new ones one retention later.
    assert d.sleep(500) == [offset_tombstone("foo", "firstTopic", 0)]
    assert d.sleep(t0 + 120_000 - d.now_ms) == []
    assert set(d.sleep(500)) == {
        offset_tombstone("foo", "firstTopic", 1),
        offset_tombstone("foo", "secondTopic", 0),
    }
    # Every offset expired (cleanup returns true) but the group is not Empty: it is not deleted.
    assert str(d.group("foo").state) == "Stable" and not d.group("foo").offsets


def test_simple_group_is_deleted_when_all_its_offsets_expire():
    """A simple group's offsets expire from their commit time; with none left the group is deleted."""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    d.commit({("bar", 0): 1, ("bar", 1): 2}, group_id="simple")
    d.sleep(30_000)
    d.commit({("baz", 0): 3}, group_id="simple")
    assert d.sleep(29_999) == []
    assert d.sleep(1) == [
        offset_tombstone("simple", "bar", 0),
        offset_tombstone("simple", "bar", 1),
    ]
    assert "simple" in d.coordinator.groups
    assert d.sleep(29_000) == []
    assert d.sleep(1_000) == [offset_tombstone("simple", "baz", 0), group_tombstone("simple")]
    assert "simple" not in d.coordinator.groups
    assert d.fetch(None, group_id="simple").response == OffsetFetchResponse(ErrorCode.NONE, ())
    assert d.list_groups().response.groups == ()


def test_empty_group_offsets_expire_from_when_the_group_became_empty():
    """In an Empty group with a protocol type, retention counts from the state change, not the commit."""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    member = join_dynamic_and_complete_rebalance(
        d, group_id="foo", create_group=False
    ).response.member_id
    d.commit({("foo", 0): 10}, group_id="foo", member_id=member, generation_id=1)
    committed_at = d.now_ms
    for _ in range(5):  # the member stays 20 s, heartbeating within its 5 s session
        d.sleep(4_000)
        assert d.heartbeat(member, 1, group_id="foo").error == ErrorCode.NONE
    assert d.leave(member, group_id="foo").error == ErrorCode.NONE
    empty_since = d.now_ms
    assert str(d.group("foo").state) == "Empty" and d.group("foo").state_timestamp_ms == empty_since
    assert (
        d.sleep(committed_at + 60_000 - d.now_ms) == []
    )  # the commit alone would have expired by now
    assert d.sleep(empty_since + 60_000 - 1 - d.now_ms) == []
    assert d.sleep(1) == [offset_tombstone("foo", "foo", 0), group_tombstone("foo")]
    assert "foo" not in d.coordinator.groups


def test_offset_with_explicit_retention_expires_at_its_expire_timestamp():
    """A v2-v4 commit's retention time sets the offset's expire timestamp, ahead of offsets.retention."""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    d.commit({("bar", 0): 1}, group_id="g", retention_time_ms=5_000, version=4)
    d.commit({("bar", 1): 1}, group_id="g", version=4)
    assert d.sleep(4_000) == []
    assert d.sleep(1_000) == [offset_tombstone("g", "bar", 0)]
    assert [t.partitions for t in d.fetch(None, group_id="g").response.topics] == [
        (fetched(1, 1, -1, ""),)
    ]


def test_offsets_do_not_expire_while_the_group_is_rebalancing():
    """ClassicGroupTest.testOffsetExpirationCondition, PreparingRebalance: no expiration condition."""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    kw = dict(group_id="foo", version=3, session_timeout_ms=600_000, rebalance_timeout_ms=300_000)
    first = d.join(**kw)
    second = d.join(**kw)
    d.sleep(3_000)
    d.sleep(3_000)
    a, b = first.response.member_id, second.response.member_id
    assert d.sync(a, 1, group_id="foo", assignments={a: b"", b: b""}).error == ErrorCode.NONE
    assert d.sync(b, 1, group_id="foo").error == ErrorCode.NONE
    d.commit({("unsubscribed", 0): 5}, group_id="foo", member_id=a, generation_id=1)
    rejoin = d.join(a, **kw)  # b never rejoins: the join phase lasts the rebalance timeout
    assert not rejoin.done and str(d.group("foo").state) == "PreparingRebalance"
    assert d.sleep(120_000) == []
    assert str(d.group("foo").state) == "PreparingRebalance"
    assert ("unsubscribed", 0) in d.group("foo").offsets


def test_cleanup_group_metadata():
    """GroupCoordinatorShardTest.testCleanupGroupMetadata"""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    d.commit({("topic", 0): 1}, group_id="group-id")
    d.sleep(30_000)
    d.commit({("topic", 0): 1}, group_id="other-group-id")
    assert d.sleep(29_000) == []
    # group-id: every offset expired -> offset tombstone, then (Empty) group tombstone;
    # other-group-id: nothing expired, so it is not deleted.
    assert d.sleep(1_000) == [offset_tombstone("group-id", "topic", 0), group_tombstone("group-id")]
    assert set(d.coordinator.groups) == {"other-group-id"}


def test_schedule_cleanup_group_metadata():
    """GroupCoordinatorShardTest.testScheduleCleanupGroupMetadata"""
    d = Driver(kafka_test_config(offsets_retention_check_interval_ms=1_000))
    key = ("ExpireOffsets",)
    assert d.coordinator.timers.deadline(key) == 1_000  # armed when the coordinator starts leading
    d.sleep(1_000)
    assert d.coordinator.timers.deadline(key) == 2_000  # re-armed after each run
    d.unload()
    assert d.coordinator.timers.deadline(key) is None  # cancelled on unload


def test_no_offset_expiry_after_unload():
    """An unloaded coordinator no longer sweeps: its former groups' offsets get no tombstones from it."""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    d.commit({("bar", 0): 1}, group_id="simple")
    d.unload()
    assert d.sleep(120_000) == []


def test_failed_simple_commit_leaves_no_group():
    """Kafka reverts the uncommitted state of a failed write: the simple group the commit created is gone."""
    d = Driver(complete_appends=False)
    commit = d.commit({("bar", 0): 1}, group_id="simple")
    append = d.appends[0]
    d.complete(append, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert commit.response == commit_response("bar", (0, ErrorCode.COORDINATOR_NOT_AVAILABLE))
    assert d.list_groups().response.groups == ()
    assert d.describe("simple").response.groups[0].group_state == "Dead"
    assert d.delete("simple").response.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_subscribed_topics_are_those_of_the_current_generation():
    """Kafka's ClassicGroup caches subscribedTopics at initNextGeneration: a static member that
    restarts with a new subscription but the same protocol (no rebalance) does not change which
    offsets may expire until the next generation."""
    d = Driver(expiry_config(offsets_retention_check_interval_ms=1_000))
    kw = dict(
        group_id="foo",
        group_instance_id="instance",
        version=5,
        session_timeout_ms=600_000,
        rebalance_timeout_ms=10_000,
    )
    join = d.join(protocols=subscribing("foo"), **kw)
    d.sleep(3_000)
    member = join.response.member_id
    stabilize(d, member, group_instance_id="instance")
    d.commit(
        {("foo", 0): 1, ("bar", 0): 1},
        group_id="foo",
        member_id=member,
        group_instance_id="instance",
        generation_id=1,
    )
    committed_at = d.now_ms
    restart = d.join(
        protocols=subscribing("bar"), **kw
    )  # same protocol name: persisted without a rebalance
    assert restart.error == ErrorCode.NONE and restart.response.generation_id == 1
    assert str(d.group("foo").state) == "Stable" and d.group("foo").generation_id == 1
    assert d.sleep(committed_at + 60_000 - 1 - d.now_ms) == []
    # Generation 1 subscribed to foo: bar's offset expires, foo's does not.
    assert d.sleep(1) == [offset_tombstone("foo", "bar", 0)]
