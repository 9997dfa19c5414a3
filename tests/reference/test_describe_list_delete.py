"""DescribeGroups, ListGroups and DeleteGroups, ported from Kafka's GroupMetadataManagerTest,
GroupCoordinatorShardTest (DeleteGroups) and ClassicGroupTest.testValidateDeleteGroup,
commit 1eb7644349cb07139d6a3c1ad1986979647cac99.

Kafka replays GroupMetadata records to build a group; here that is ``driver.load``. Kafka's
DescribeGroups/ListGroups read the last *committed* state; loaded records are committed, and a
write still in flight maps to ``Driver(complete_appends=False)`` before ``complete``.

Skipped Kafka tests:
- testListGroups, consumer/share-group parts and the group-type filter: KIP-848 consumer groups,
  share groups and ListGroups type filters are not modelled (the classic parts are ported).
- testClassicGroupCompletedRebalanceSensor: metrics only.
- GroupCoordinatorShardTest.testDeleteGroupsInvalidGroupId uses a mocked validateDeleteGroup that
  throws INVALID_GROUP_ID for a well-formed id; ported with a null id, the only way a group id is invalid here.
- Consumer-group variants of describe (testConsumerGroupDescribe*, testDescribeGroup* for consumer
  groups) and share-group tests: not modelled.
"""

from __future__ import annotations

from driver import GROUP_ID, Driver, kafka_test_config
from kafka_context import (
    group_tombstone,
    join_dynamic_and_complete_join,
    join_dynamic_and_complete_rebalance,
    offset_tombstone,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    Record,
)
from coordspec.reference.group.responses import (
    DeletableGroupResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    FetchPartitionResponse,
    FetchTopicResponse,
    ListedGroup,
    ListGroupsResponse,
    OffsetFetchResponse,
)


def group_record(
    group_id: str,
    *,
    protocol_type: str = "consumer",
    generation: int = 0,
    protocol: str | None = "range",
    leader: str | None = None,
    timestamp: int = 0,
    members: tuple[MemberMetadata, ...] = (),
) -> Record:
    return Record(
        GroupMetadataKey(group_id),
        GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp, members),
    )


def member(
    member_id: str = "member-id",
    instance_id: str | None = "group-instance-id",
    *,
    subscription: bytes = bytes([0, 1, 2]),
    assignment: bytes = bytes([0]),
) -> MemberMetadata:
    # Kafka's record leaves the timeouts at their defaults; the reference arms the session timer on
    # load (Kafka's onLoaded, not called by these tests), so a real timeout is given.
    return MemberMetadata(
        member_id,
        instance_id,
        "client-id",
        "client-host",
        rebalance_timeout=5_000,
        session_timeout=5_000,
        subscription=subscription,
        assignment=assignment,
    )


def dead(group_id: str) -> DescribedGroup:
    """verifyDescribeGroupsReturnsDeadGroup: only the id and "Dead"; every other field default."""
    return DescribedGroup(ErrorCode.NONE, group_id, "Dead", "", "", ())


def results(pending) -> dict[str | None, ErrorCode]:
    """DeleteGroups results by group id (Kafka orders them by partition; the order is not asserted)."""
    out = {r.group_id: r.error_code for r in pending.response.results}
    assert len(out) == len(pending.response.results)
    return out


def empty_group(d: Driver, group_id: str = GROUP_ID) -> None:
    """A classic group that had a member and is Empty again, without offsets."""
    member_id = join_dynamic_and_complete_rebalance(
        d, group_id=group_id, create_group=False
    ).response.member_id
    assert d.leave(member_id, group_id=group_id).error == ErrorCode.NONE
    assert str(d.group(group_id).state) == "Empty"


# -- DescribeGroups ---------------------------------------------------------------------------


def test_describe_group_stable():
    """GroupMetadataManagerTest.testDescribeGroupStable"""
    d = Driver()
    # Kafka leaves the leader null; a loaded group with members and no leader breaks the
    # reference's LeaderIsMember invariant, and a real log always names the leader.
    d.load([group_record(GROUP_ID, leader="member-id", members=(member(),))])
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse(
        (
            DescribedGroup(
                ErrorCode.NONE,
                GROUP_ID,
                "Stable",
                "consumer",
                "range",
                (
                    DescribedMember(
                        "member-id",
                        "group-instance-id",
                        "client-id",
                        "client-host",
                        bytes([0, 1, 2]),
                        bytes([0]),
                    ),
                ),
            ),
        )
    )


def test_describe_group_rebalancing():
    """GroupMetadataManagerTest.testDescribeGroupRebalancing"""
    d = Driver()
    d.load(
        [
            group_record(
                GROUP_ID,
                leader="member-id",
                members=(member(), member("other-member-id", None, assignment=bytes([1]))),
            )
        ]
    )
    # Kafka calls prepareRebalance directly; here the other member leaves, which starts one.
    assert d.leave("other-member-id").error == ErrorCode.NONE
    assert str(d.group().state) == "PreparingRebalance"
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse(
        (
            DescribedGroup(
                ErrorCode.NONE,
                GROUP_ID,
                "PreparingRebalance",
                "consumer",
                "",
                (
                    # Outside Stable the metadata is withheld but the assignment is still shown.
                    DescribedMember(
                        "member-id",
                        "group-instance-id",
                        "client-id",
                        "client-host",
                        b"",
                        bytes([0]),
                    ),
                ),
            ),
        )
    )


def test_describe_groups_group_id_not_found_exception():
    """GroupMetadataManagerTest.testDescribeGroupsGroupIdNotFoundException"""
    d = Driver()
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse((dead(GROUP_ID),))


def test_describe_and_list_read_the_last_committed_state():
    """Kafka reads DescribeGroups/ListGroups at the last committed offset: a group whose creation
    record is not yet written is Dead to DescribeGroups and absent from ListGroups."""
    d = Driver(complete_appends=False)
    join = d.join(version=3)
    assert not join.done and len(d.appends) == 1  # the empty GroupMetadata record of the new group
    append = d.appends[0]
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse((dead(GROUP_ID),))
    assert d.list_groups().response == ListGroupsResponse(ErrorCode.NONE, ())
    d.complete(append)
    assert d.describe(GROUP_ID).response.groups[0].group_state == "PreparingRebalance"
    assert d.list_groups().response == ListGroupsResponse(
        ErrorCode.NONE, (ListedGroup(GROUP_ID, "consumer", "PreparingRebalance"),)
    )


def test_describe_dead_group_after_unload():
    """A group this coordinator no longer leads is described as Dead."""
    d = Driver()
    join_dynamic_and_complete_rebalance(d, create_group=False)
    d.unload()
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse((dead(GROUP_ID),))
    assert d.list_groups().response == ListGroupsResponse(ErrorCode.NONE, ())


def test_describe_group_completing_rebalance_shows_assignment_without_metadata():
    """CompletingRebalance: protocolData "" and no member metadata (describeGroups' non-Stable branch)."""
    d = Driver()
    join = join_dynamic_and_complete_join(d, check_records=False)
    described = d.describe(GROUP_ID).response.groups[0]
    assert described == DescribedGroup(
        ErrorCode.NONE,
        GROUP_ID,
        "CompletingRebalance",
        "consumer",
        "",
        (DescribedMember(join.response.member_id, None, "client", "/127.0.0.1", b"", b""),),
    )


# -- ListGroups -------------------------------------------------------------------------------


def test_list_groups():
    """GroupMetadataManagerTest.testListGroups (classic parts; no type filter)"""
    d = Driver()
    d.load(
        [group_record("classic-group-id", protocol_type="classic", generation=2, protocol="range")]
    )
    classic = ListedGroup("classic-group-id", "classic", "Empty")
    assert d.list_groups().response == ListGroupsResponse(ErrorCode.NONE, (classic,))
    assert d.list_groups("empty").response == ListGroupsResponse(ErrorCode.NONE, (classic,))
    assert d.list_groups("assigning").response == ListGroupsResponse(ErrorCode.NONE, ())
    assert d.list_groups("Empty").response == ListGroupsResponse(ErrorCode.NONE, (classic,))
    assert d.list_groups("empty", "Assigning").response == ListGroupsResponse(
        ErrorCode.NONE, (classic,)
    )
    assert d.list_groups("Invalid").response == ListGroupsResponse(ErrorCode.NONE, ())


def test_list_groups_reports_each_state():
    """ListGroups lists every classic group with its protocol type and state; filters are case-insensitive."""
    d = Driver()
    join_dynamic_and_complete_rebalance(d, group_id="stable", create_group=False)
    join_dynamic_and_complete_join(
        d,
        group_id="completing",
        session_timeout_ms=600_000,
        rebalance_timeout_ms=600_000,
        check_records=False,
    )
    d.join(group_id="preparing", version=3)
    d.commit({("t", 0): 1}, group_id="simple")
    groups = {g.group_id: g for g in d.list_groups().response.groups}
    assert groups == {
        "simple": ListedGroup("simple", "", "Empty"),
        "preparing": ListedGroup("preparing", "consumer", "PreparingRebalance"),
        "completing": ListedGroup("completing", "consumer", "CompletingRebalance"),
        "stable": ListedGroup("stable", "consumer", "Stable"),
    }
    filtered = d.list_groups("STABLE", "completingrebalance").response
    assert {g.group_id for g in filtered.groups} == {"stable", "completing"}


# -- DeleteGroups -----------------------------------------------------------------------------


def test_classic_group_delete():
    """GroupMetadataManagerTest.testClassicGroupDelete"""
    d = Driver()
    empty_group(d)
    delete = d.delete(GROUP_ID)
    assert delete.records == [group_tombstone(GROUP_ID)]
    assert results(delete) == {GROUP_ID: ErrorCode.NONE}
    assert GROUP_ID not in d.coordinator.groups


def test_classic_group_maybe_delete():
    """GroupMetadataManagerTest.testClassicGroupMaybeDelete (through the retention sweep, its caller)"""
    d = Driver(kafka_test_config(offsets_retention_check_interval_ms=60_000))
    empty_group(d)
    d.join(
        group_id="rebalancing", version=3, session_timeout_ms=600_000, rebalance_timeout_ms=600_000
    )
    d.join(
        group_id="rebalancing", version=3, session_timeout_ms=600_000, rebalance_timeout_ms=600_000
    )
    assert str(d.group("rebalancing").state) == "PreparingRebalance"
    d.sleep(3_000)
    d.sleep(3_000)
    assert str(d.group("rebalancing").state) == "CompletingRebalance"
    records = d.sleep(60_000 - d.now_ms)  # the first sweep
    assert records == [
        group_tombstone(GROUP_ID)
    ]  # the Empty group goes; the other one is not Empty
    assert GROUP_ID not in d.coordinator.groups and "rebalancing" in d.coordinator.groups


def test_delete_groups():
    """GroupCoordinatorShardTest.testDeleteGroups"""
    d = Driver()
    for group_id in ("group-id-1", "group-id-2"):
        d.commit({("topic-name", 0): 10}, group_id=group_id)
    delete = d.delete("group-id-1", "group-id-2")
    assert delete.records == [
        offset_tombstone("group-id-1", "topic-name", 0),
        group_tombstone("group-id-1"),
        offset_tombstone("group-id-2", "topic-name", 0),
        group_tombstone("group-id-2"),
    ]
    assert results(delete) == {"group-id-1": ErrorCode.NONE, "group-id-2": ErrorCode.NONE}
    assert not d.coordinator.groups


def test_delete_groups_invalid_group_id():
    """GroupCoordinatorShardTest.testDeleteGroupsInvalidGroupId (the invalid id is null here)"""
    d = Driver()
    for group_id in ("group-id-1", "group-id-3"):
        d.commit({("topic-name", 0): 10}, group_id=group_id)
    delete = d.delete("group-id-1", None, "group-id-3")
    assert delete.records == [
        offset_tombstone("group-id-1", "topic-name", 0),
        group_tombstone("group-id-1"),
        offset_tombstone("group-id-3", "topic-name", 0),
        group_tombstone("group-id-3"),
    ]
    assert results(delete) == {
        "group-id-1": ErrorCode.NONE,
        None: ErrorCode.INVALID_GROUP_ID,
        "group-id-3": ErrorCode.NONE,
    }


def test_validate_delete_group():
    """ClassicGroupTest.testValidateDeleteGroup"""
    d = Driver()
    join = d.join(version=3)
    assert str(d.group().state) == "PreparingRebalance"
    delete = d.delete(GROUP_ID)
    assert results(delete) == {GROUP_ID: ErrorCode.NON_EMPTY_GROUP} and delete.records == []

    d.sleep(3_000)
    assert str(d.group().state) == "CompletingRebalance"
    delete = d.delete(GROUP_ID)
    assert results(delete) == {GROUP_ID: ErrorCode.NON_EMPTY_GROUP} and delete.records == []

    member_id = join.response.member_id
    assert d.sync(member_id, 1).error == ErrorCode.NONE
    assert str(d.group().state) == "Stable"
    delete = d.delete(GROUP_ID)
    assert results(delete) == {GROUP_ID: ErrorCode.NON_EMPTY_GROUP} and delete.records == []

    assert d.leave(member_id).error == ErrorCode.NONE
    assert str(d.group().state) == "Empty"
    d.commit({("bar", 0): 1}, group_id="other")
    d.unload()
    assert str(d.group().state) == "Dead" and str(d.group("other").state) == "Dead"
    delete = d.delete(GROUP_ID, "other", "unknown")
    assert results(delete) == {
        GROUP_ID: ErrorCode.GROUP_ID_NOT_FOUND,
        "other": ErrorCode.GROUP_ID_NOT_FOUND,
        "unknown": ErrorCode.GROUP_ID_NOT_FOUND,
    }
    assert delete.records == []


def test_delete_empty_group_removes_it_and_its_offsets():
    """An Empty group is deleted with its offsets: offset tombstones, then the group tombstone."""
    d = Driver()
    member_id = join_dynamic_and_complete_rebalance(d, create_group=False).response.member_id
    d.commit(
        {("foo", 0): 1, ("foo", 1): 2, ("bar", 0): 3},
        group_id=GROUP_ID,
        member_id=member_id,
        generation_id=1,
    )
    assert d.leave(member_id).error == ErrorCode.NONE
    delete = d.delete(GROUP_ID)
    assert results(delete) == {GROUP_ID: ErrorCode.NONE}
    assert set(delete.records[:-1]) == {
        offset_tombstone(GROUP_ID, "foo", 0),
        offset_tombstone(GROUP_ID, "foo", 1),
        offset_tombstone(GROUP_ID, "bar", 0),
    }
    assert len(delete.records) == 4 and delete.records[-1] == group_tombstone(GROUP_ID)
    assert d.describe(GROUP_ID).response == DescribeGroupsResponse((dead(GROUP_ID),))
    assert d.list_groups().response == ListGroupsResponse(ErrorCode.NONE, ())
    assert d.fetch({"foo": (0,)}).response == OffsetFetchResponse(
        ErrorCode.NONE, (FetchTopicResponse("foo", (FetchPartitionResponse(0),)),)
    )
    # Deleting it again: it is gone.
    assert results(d.delete(GROUP_ID)) == {GROUP_ID: ErrorCode.GROUP_ID_NOT_FOUND}


def test_delete_group_mixed_results():
    """One request: deletable, non-empty, unknown and null ids each get their own result."""
    d = Driver()
    d.commit({("t", 0): 1}, group_id="simple")
    join_dynamic_and_complete_rebalance(d, group_id="busy", create_group=False)
    delete = d.delete("simple", "busy", "missing", None)
    assert results(delete) == {
        "simple": ErrorCode.NONE,
        "busy": ErrorCode.NON_EMPTY_GROUP,
        "missing": ErrorCode.GROUP_ID_NOT_FOUND,
        None: ErrorCode.INVALID_GROUP_ID,
    }
    assert delete.records == [offset_tombstone("simple", "t", 0), group_tombstone("simple")]
    assert set(d.coordinator.groups) == {"busy"}


def test_delete_groups_answers_after_the_tombstones_are_written():
    """DeleteGroups is a write: its response comes once the tombstones are appended."""
    d = Driver(complete_appends=False)
    d.commit({("t", 0): 1}, group_id="simple")
    d.complete(d.appends[0])
    delete = d.delete("simple")
    assert not delete.done and len(d.appends) == 1
    assert d.appends[0].records == (offset_tombstone("simple", "t", 0), group_tombstone("simple"))
    d.complete(d.appends[0])
    assert delete.response.results == (DeletableGroupResult("simple", ErrorCode.NONE),)
    assert "simple" not in d.coordinator.groups
