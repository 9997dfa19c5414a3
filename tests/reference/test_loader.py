"""Loading groups and offsets from __consumer_offsets records, ported from Kafka's
GroupMetadataManagerTest (replay/onLoaded) and OffsetMetadataManagerTest.testReplay,
commit 1eb7644349cb07139d6a3c1ad1986979647cac99.

Kafka replays records one by one and calls ``onLoaded`` separately; ``driver.load(records)``
does both. Kafka's heartbeat timer "heartbeat-<group>-<member>" is the reference's
``("ExpireSession", group, member)``.

Skipped Kafka tests:
- testUpdateClassicGroupSizeCounter: metrics only.
- testTransactionalReplay / testReplayWithTombstoneAndPendingTransactionalOffsets /
  testReplayTransactionEndMarkerWithCommit / testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset:
  transactional offsets are not modelled.
- Consumer-group (KIP-848) and share-group record replay tests: not modelled.
"""

from __future__ import annotations

import pytest
from driver import GROUP_ID, Driver, kafka_test_config
from kafka_context import join_dynamic_and_complete_rebalance, session_deadline

from coordspec.reference.consumer_protocol import Subscription, encode_subscription
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import Protocol
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from coordspec.reference.group.responses import (
    DescribedGroup,
    DescribeGroupsResponse,
    FetchPartitionResponse,
)
from coordspec.reference.group.state import Member

SUBSCRIPTION = encode_subscription(Subscription(("foo",)))
NOW = 10_000


def group_record(
    group_id: str = GROUP_ID,
    *,
    generation: int = 1,
    protocol_type: str = "consumer",
    protocol: str | None = "range",
    leader: str | None = "member-0",
    timestamp: int = NOW,
    members: tuple[MemberMetadata, ...] = (),
) -> Record:
    return Record(
        GroupMetadataKey(group_id),
        GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp, members),
    )


def record_member(
    i: int, *, session_timeout: int = 4_000, rebalance_timeout: int = 9_000, static: bool = True
) -> MemberMetadata:
    return MemberMetadata(
        member_id=f"member-{i}",
        group_instance_id=f"group-instance-id-{i}" if static else None,
        client_id=f"client-{i}",
        client_host=f"host-{i}",
        rebalance_timeout=rebalance_timeout,
        session_timeout=session_timeout,
        subscription=SUBSCRIPTION,
        assignment=bytes([2]),
    )


def offset_record(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    leader_epoch: int = -1,
    metadata: str = "metadata",
    commit_timestamp: int = NOW,
    expire_timestamp: int = -1,
) -> Record:
    return Record(
        OffsetCommitKey(group, topic, partition),
        OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp),
    )


@pytest.mark.parametrize("use_default_rebalance_timeout", [True, False])
def test_replay_group_metadata_records(use_default_rebalance_timeout):
    """GroupMetadataManagerTest.testReplayGroupMetadataRecords"""
    d = Driver(now_ms=NOW)
    rebalance_timeout = -1 if use_default_rebalance_timeout else 9_000
    d.load(
        [
            group_record(
                members=tuple(
                    record_member(i, rebalance_timeout=rebalance_timeout) for i in range(2)
                )
            )
        ]
    )
    group = d.group()
    assert group.group_id == GROUP_ID
    assert group.generation_id == 1
    assert group.protocol_type == "consumer"
    assert group.protocol_name == "range"
    assert group.leader_id == "member-0"
    assert str(group.state) == "Stable"
    assert group.state_timestamp_ms == NOW
    expected = {
        f"member-{i}": Member(
            member_id=f"member-{i}",
            group_instance_id=f"group-instance-id-{i}",
            client_id=f"client-{i}",
            client_host=f"host-{i}",
            rebalance_timeout_ms=4_000
            if use_default_rebalance_timeout
            else 9_000,  # -1: the session timeout
            session_timeout_ms=4_000,
            protocol_type="consumer",
            protocols=(Protocol("range", SUBSCRIPTION),),
            assignment=bytes([2]),
        )
        for i in range(2)
    }
    assert group.members == expected
    assert group.static_members == {
        "group-instance-id-0": "member-0",
        "group-instance-id-1": "member-1",
    }


def test_on_loaded_exceed_group_max_size_triggers_rebalance():
    """GroupMetadataManagerTest.testOnLoadedExceedGroupMaxSizeTriggersRebalance"""
    d = Driver(kafka_test_config(max_size=1), now_ms=NOW)
    d.load([group_record(members=(record_member(0), record_member(1)))])
    group = d.group()
    assert str(group.state) == "PreparingRebalance"
    assert set(group.members) == {"member-0", "member-1"}  # not removed at load


def test_on_loaded_schedules_classic_group_member_heartbeats():
    """GroupMetadataManagerTest.testOnLoadedSchedulesClassicGroupMemberHeartbeats"""
    d = Driver(now_ms=NOW)
    d.load([group_record(members=(record_member(0), record_member(1)))])
    # Kafka checks "heartbeat-group-id-member-1" twice; both members are checked here.
    assert session_deadline(d, "member-0") == NOW + 4_000
    assert session_deadline(d, "member-1") == NOW + 4_000


def test_on_classic_group_state_transition_on_loading():
    """GroupMetadataManagerTest.testOnClassicGroupStateTransitionOnLoading"""
    d = Driver(now_ms=NOW)
    records = [group_record(generation=0, protocol=None, leader=None, members=()) for _ in range(5)]
    records += [Record(GroupMetadataKey(GROUP_ID), None) for _ in range(4)]
    d.load(records)
    # The last record wins: the group is deleted; repeated tombstones are harmless.
    assert GROUP_ID not in d.coordinator.groups
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse(
        (DescribedGroup(ErrorCode.NONE, GROUP_ID, "Dead"),)
    )


def test_replay():
    """OffsetMetadataManagerTest.testReplay"""
    d = Driver(now_ms=NOW)
    records = [
        offset_record("foo", "bar", 0, 100),
        offset_record("foo", "bar", 0, 200, leader_epoch=10),
        offset_record("foo", "bar", 1, 200, leader_epoch=10),
        offset_record("foo", "bar", 1, 300, leader_epoch=10, expire_timestamp=12_345),
    ]
    d.load(records)
    assert d.group("foo").offsets == {
        ("bar", 0): OffsetCommitValue(200, 10, "metadata", NOW, -1),
        ("bar", 1): OffsetCommitValue(300, 10, "metadata", NOW, 12_345),
    }
    fetch = d.fetch({"bar": (0, 1)}, group_id="foo").response
    assert fetch.topics[0].partitions == (
        FetchPartitionResponse(0, 200, 10, "metadata"),
        FetchPartitionResponse(1, 300, 10, "metadata"),
    )


def test_offsets_only_group_loads_as_empty_simple_group():
    """A group known only through offset commits comes back Empty, without a protocol type."""
    d = Driver(now_ms=NOW)
    d.load([offset_record("simple", "bar", 0, 5)])
    group = d.group("simple")
    assert str(group.state) == "Empty" and group.protocol_type is None and group.generation_id == 0
    assert not group.members and group.leader_id is None
    commit = d.commit({("bar", 0): 6}, group_id="simple")  # still a simple group: commits accepted
    assert commit.response.topics[0].partitions[0].error_code == ErrorCode.NONE


def test_offset_tombstone_deletes_loaded_offset():
    """An offset tombstone deletes the partition's offset; the rest of the group stays."""
    d = Driver(now_ms=NOW)
    d.load(
        [
            offset_record("foo", "bar", 0, 1),
            offset_record("foo", "bar", 1, 2),
            Record(OffsetCommitKey("foo", "bar", 0), None),
        ]
    )
    assert set(d.group("foo").offsets) == {("bar", 1)}


def test_group_tombstone_after_offsets_deletes_group():
    """The group tombstone of a deleted group, written after its offset tombstones, removes it entirely."""
    d = Driver(now_ms=NOW)
    d.load(
        [
            offset_record("gone", "bar", 0, 1),
            group_record("gone", generation=3, members=(), leader=None, protocol=None),
            Record(OffsetCommitKey("gone", "bar", 0), None),
            Record(GroupMetadataKey("gone"), None),
            offset_record("kept", "bar", 0, 1),
        ]
    )
    assert set(d.coordinator.groups) == {"kept"}


def test_group_tombstone_deletes_the_group_not_its_offsets():
    """CG-3: a tombstone the join of a consumer group wrote over an Empty classic group leaves
    the offsets committed under the id (Kafka keeps them by group id). A deleted group whose
    transaction's offsets were tombstoned too is gone."""
    d = Driver(now_ms=NOW)
    pending = offset_record("gone", "bar", 0, 1)
    d.load(
        [
            offset_record("taken", "bar", 0, 7),
            Record(GroupMetadataKey("taken"), None),
            Record(pending.key, pending.value, producer_id=5),
            Record(OffsetCommitKey("gone", "bar", 0), None),
            Record(GroupMetadataKey("gone"), None),
        ]
    )
    assert set(d.coordinator.groups) == {"taken"}
    assert d.group("taken").offsets[("bar", 0)].offset == 7


def test_group_without_members_loads_empty():
    """A GroupMetadata record without members loads Empty, keeping its generation and protocol type."""
    d = Driver(now_ms=NOW)
    d.load(
        [group_record(generation=4, protocol=None, leader=None, members=(), timestamp=NOW - 5_000)]
    )
    group = d.group()
    assert str(group.state) == "Empty"
    assert (
        group.generation_id == 4
        and group.protocol_type == "consumer"
        and group.state_timestamp_ms == NOW - 5_000
    )
    assert len(d.coordinator.timers) == 1  # only the retention sweep: no sessions to arm


def test_loaded_member_session_expires_without_heartbeats():
    """Sessions armed at load expire like any other: the group rebalances and ends Empty."""
    d = Driver(now_ms=NOW)
    d.load([group_record(members=(record_member(0), record_member(1, session_timeout=6_000)))])
    d.sleep(3_999)
    assert (
        d.heartbeat("member-1", 1, group_instance_id="group-instance-id-1").error == ErrorCode.NONE
    )
    d.sleep(1)
    group = d.group()
    assert "member-0" not in group.members
    assert str(group.state) == "PreparingRebalance"


def test_loaded_group_resumes_its_generation():
    """Members of a loaded Stable group heartbeat and commit at the generation in the log."""
    d = Driver(now_ms=NOW)
    d.load(
        [
            group_record(members=(record_member(0, static=False),)),
            offset_record(GROUP_ID, "foo", 0, 1),
        ]
    )
    assert d.heartbeat("member-0", 1).error == ErrorCode.NONE
    assert d.heartbeat("member-0", 0).error == ErrorCode.ILLEGAL_GENERATION
    commit = d.commit({("foo", 0): 2}, member_id="member-0", generation_id=1)
    assert commit.response.topics[0].partitions[0].error_code == ErrorCode.NONE
    sync = d.sync("member-0", 1)
    assert sync.error == ErrorCode.NONE and sync.response.assignment == bytes([2])


def test_loaded_empty_group_offsets_expire_from_its_state_timestamp():
    """Loaded Empty groups: retention counts from the recorded state timestamp, or from the commit when
    the record has none (-1); the sweep then deletes the group."""
    d = Driver(
        kafka_test_config(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1_000),
        now_ms=NOW,
    )
    d.load(
        [
            group_record("with-timestamp", generation=2, protocol=None, leader=None, timestamp=NOW),
            offset_record("with-timestamp", "t", 0, 1, commit_timestamp=0),
            group_record(
                "without-timestamp", generation=2, protocol=None, leader=None, timestamp=-1
            ),
            offset_record("without-timestamp", "t", 0, 1, commit_timestamp=0),
        ]
    )
    assert d.group("without-timestamp").state_timestamp_ms is None
    assert d.sleep(60_000 - 1 - NOW) == []
    assert d.sleep(1) == [
        Record(OffsetCommitKey("without-timestamp", "t", 0), None),
        Record(GroupMetadataKey("without-timestamp"), None),
    ]
    assert d.sleep(NOW + 60_000 - 1 - d.now_ms) == []
    assert d.sleep(1) == [
        Record(OffsetCommitKey("with-timestamp", "t", 0), None),
        Record(GroupMetadataKey("with-timestamp"), None),
    ]
    assert not d.coordinator.groups


# -- round trip ------------------------------------------------------------------------------


def member_view(group, member_id):
    m = group.members[member_id]
    return (
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        m.rebalance_timeout_ms,
        m.session_timeout_ms,
        m.protocol_type,
        m.metadata(group.protocol_name),
        m.assignment,
    )


def group_view(group):
    members = {mid: member_view(group, mid) for mid in group.members} if group.members else {}
    return dict(
        state=str(group.state),
        generation=group.generation_id,
        protocol_type=group.protocol_type,
        protocol=group.protocol_name,
        leader=group.leader_id,
        members=members,
        static_members=dict(group.static_members),
        offsets=dict(group.offsets),
    )


def test_round_trip_through_the_log():
    """A log written by one coordinator loads into another as the same groups, members and offsets."""
    a = Driver(now_ms=1_000)
    kw = dict(
        protocol_names=("range", "roundrobin"),
        session_timeout_ms=30_000,
        rebalance_timeout_ms=20_000,
    )
    # Generation 1: a static leader and a dynamic follower (v4, member id required).
    leader = a.join(group_instance_id="leader-instance", version=5, **kw)
    first = a.join(version=4, **kw)
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    follower = a.join(first.response.member_id, version=4, **kw)
    a.sleep(3_000)
    a.sleep(3_000)
    assert leader.error == ErrorCode.NONE and follower.error == ErrorCode.NONE
    leader_id, follower_id = leader.response.member_id, follower.response.member_id
    assert leader.response.leader == leader_id and leader.response.generation_id == 1
    assert (
        a.sync(
            leader_id,
            1,
            group_instance_id="leader-instance",
            assignments={leader_id: b"\x01", follower_id: b"\x02"},
        ).error
        == ErrorCode.NONE
    )
    assert a.sync(follower_id, 1).error == ErrorCode.NONE
    a.commit(
        {("foo", 0): 10, ("foo", 1): 11},
        member_id=leader_id,
        group_instance_id="leader-instance",
        generation_id=1,
        metadata="m",
        leader_epoch=3,
    )
    a.commit({("bar", 0): 20}, member_id=follower_id, generation_id=1)

    # Generation 2: a third member (v3) joins; everyone rejoins and syncs.
    a.sleep(1_000)
    third = a.join(version=3, client_id="third-client", **kw)
    rejoin_leader = a.join(leader_id, group_instance_id="leader-instance", version=5, **kw)
    rejoin_follower = a.join(follower_id, version=4, **kw)
    assert third.error == rejoin_leader.error == rejoin_follower.error == ErrorCode.NONE
    third_id = third.response.member_id
    assert rejoin_leader.response.generation_id == 2
    assert (
        a.sync(
            leader_id,
            2,
            group_instance_id="leader-instance",
            assignments={leader_id: b"\x0a", follower_id: b"\x0b", third_id: b"\x0c"},
        ).error
        == ErrorCode.NONE
    )
    for member_id in (follower_id, third_id):
        assert a.sync(member_id, 2).error == ErrorCode.NONE
    a.commit({("foo", 0): 12}, member_id=third_id, generation_id=2, metadata="third")

    # Other groups: a simple group with a retention commit, one deleted, one left Empty by its member.
    a.commit({("baz", 3): 30}, group_id="simple", retention_time_ms=50_000, version=4)
    a.commit({("baz", 0): 1}, group_id="deleted")
    assert a.delete("deleted").response.results[0].error_code == ErrorCode.NONE
    lonely = join_dynamic_and_complete_rebalance(
        a, group_id="emptied", create_group=False
    ).response.member_id
    a.commit({("qux", 0): 5}, group_id="emptied", member_id=lonely, generation_id=1)
    assert a.leave(lonely, group_id="emptied").error == ErrorCode.NONE

    assert str(a.group().state) == "Stable" and a.group().generation_id == 2
    b = Driver(now_ms=a.now_ms)
    b.load(a.log)
    assert set(b.coordinator.groups) == set(a.coordinator.groups) == {GROUP_ID, "simple", "emptied"}
    for group_id in a.coordinator.groups:
        assert group_view(b.group(group_id)) == group_view(a.group(group_id)), group_id

    # The loaded group carries on where the original left off.
    loaded = b.group()
    assert loaded.leader_id == leader_id and loaded.protocol_name == "range"
    assert {m: loaded.members[m].assignment for m in loaded.members} == {
        leader_id: b"\x0a",
        follower_id: b"\x0b",
        third_id: b"\x0c",
    }
    for member_id in (leader_id, follower_id, third_id):
        assert session_deadline(b, member_id) == b.now_ms + 30_000
        instance = "leader-instance" if member_id == leader_id else None
        assert b.heartbeat(member_id, 2, group_instance_id=instance).error == ErrorCode.NONE
    assert b.fetch(None).response == a.fetch(None).response
    assert b.fetch(None, group_id="simple").response == a.fetch(None, group_id="simple").response
    assert (
        b.describe(GROUP_ID, "simple", "emptied").response
        == a.describe(GROUP_ID, "simple", "emptied").response
    )
