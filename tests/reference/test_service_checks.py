"""Checks Kafka's GroupCoordinatorService makes before a request reaches the state machine,
ported from GroupCoordinatorServiceTest, commit 1eb7644349cb07139d6a3c1ad1986979647cac99 (classic parts).

The service's config: sessions 120 ms .. 50 000 ms. Kafka's failed writes reach clients through
the error mapping in coordspec.reference.errors.append_error_to_response_error; in the reference a write
fails when the driver completes its append with an error (``Driver(complete_appends=False)``).

Skipped Kafka tests:
- testJoinGroup / testSyncGroup / testHeartbeat / testLeaveGroup / testFetchOffsets /
  testCommitTransactionalOffsets: check which runtime operation (name, partition, timeout) the service
  schedules; the reference has no runtime layer.
- testJoinGroupWithException / testSyncGroupWithException / testHeartbeatCoordinatorNotAvailableException /
  testHeartbeatCoordinatorException / testDescribeGroupCoordinatorLoadInProgress / testListGroupsWithFailure /
  testListGroupsFailedWithNotCoordinatorException: runtime-failure service paths (later work).
- testJoinGroupWhenNotStarted / testSyncGroupWhenNotStarted / testHeartbeatWhenNotStarted / testLeaveGroupWhenNotStarted /
  testListGroupsWhenNotStarted / testDescribeGroupsWhenNotStarted / testFetchOffsetsWhenNotStarted /
  testDeleteOffsetsWhenNotStarted / testDeleteGroupsWhenNotStarted / testCommitTransactionalOffsetsWhenNotStarted:
  the "not started" service state is later work.
- testListGroups / testListGroupsWithEmptyTopicPartitions: fan-out over __consumer_offsets partitions; the
  reference is one partition's coordinator.
- testFetchOffsetsWithWrappedError: the require-stable OffsetFetch is a write in Kafka; the reference's
  OffsetFetch never writes, so no append can fail.
- testDeleteOffsets / testDeleteOffsetsInvalidGroupId / testDeleteOffsetsWithException: ported in
  test_offset_delete.py.
- testCommitTransactionalOffsetsWithInvalidGroupId / testCommitTransactionalOffsetsWithWrappedError:
  TxnOffsetCommit is not modelled.
- testDeleteGroups, the partition that fails with COORDINATOR_LOAD_IN_PROGRESS: runtime failure (the rest is ported).
- testDeleteGroupsWithException, RecordBatchTooLargeException / InvalidFetchSizeException / InvalidRequestException:
  RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE and INVALID_REQUEST are not in the reference's ErrorCode.
"""

from __future__ import annotations

import pytest
from driver import GROUP_ID, Driver, kafka_test_config

from coordspec.reference.errors import ErrorCode, UsageError, append_error_to_response_error
from coordspec.reference.group import FetchTopic, OffsetFetch
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    DeletableGroupResult,
    DescribedGroup,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)


def service_config(**overrides):
    """createGroupCoordinatorConfig: sessions 120..50000 ms."""
    return kafka_test_config(min_session_timeout_ms=120, max_session_timeout_ms=50_000, **overrides)


# The errors a failed write surfaces as (CoordinatorOperationExceptionHelper / handleOperationException).
APPEND_ERRORS = [
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
]


# -- group id checks --------------------------------------------------------------------------


def test_join_group_invalid_group_id():
    """GroupCoordinatorServiceTest.testJoinGroupInvalidGroupId"""
    d = Driver(service_config())
    join = d.join(group_id=None, version=9)
    # Kafka's JoinGroupResponse sends an unset (empty) protocol name as null from v7 on.
    assert join.response == JoinGroupResponse(ErrorCode.INVALID_GROUP_ID, member_id="")
    assert join.records == [] and not d.coordinator.groups


def test_join_group_empty_group_id_is_invalid():
    """JoinGroup: "" is as invalid as null, and the request's member id is echoed."""
    d = Driver(service_config())
    join = d.join("some-member", group_id="", version=9)
    assert join.response == JoinGroupResponse(ErrorCode.INVALID_GROUP_ID, member_id="some-member")
    assert not d.coordinator.groups


@pytest.mark.parametrize("group_id", [None, ""])
def test_sync_group_invalid_group_id(group_id):
    """GroupCoordinatorServiceTest.testSyncGroupInvalidGroupId (null; "" is invalid as well)"""
    d = Driver(service_config())
    sync = d.sync("", 0, group_id=group_id)
    assert sync.response == SyncGroupResponse(ErrorCode.INVALID_GROUP_ID)


@pytest.mark.parametrize("group_id", [None, ""])
def test_heartbeat_invalid_group_id(group_id):
    """Heartbeat: a null or "" group id is INVALID_GROUP_ID (service table)."""
    d = Driver(service_config())
    assert d.heartbeat("member", 1, group_id=group_id).response == HeartbeatResponse(
        ErrorCode.INVALID_GROUP_ID
    )


@pytest.mark.parametrize("group_id", [None, ""])
def test_leave_group_invalid_group_id(group_id):
    """LeaveGroup: a null or "" group id is a top-level INVALID_GROUP_ID (service table)."""
    d = Driver(service_config())
    leave = d.leave(("member-1", "instance-1"), group_id=group_id)
    assert leave.response == LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID)


def test_offset_commit_null_group_id_is_invalid():
    """OffsetCommit: only a null group id is invalid, on every partition."""
    d = Driver(service_config())
    commit = d.commit({("foo", 0): 1, ("foo", 1): 2, ("bar", 0): 3}, group_id=None)
    assert commit.response == OffsetCommitResponse(
        (
            CommitTopicResponse(
                "foo",
                (
                    CommitPartitionResponse(0, ErrorCode.INVALID_GROUP_ID),
                    CommitPartitionResponse(1, ErrorCode.INVALID_GROUP_ID),
                ),
            ),
            CommitTopicResponse("bar", (CommitPartitionResponse(0, ErrorCode.INVALID_GROUP_ID),)),
        )
    )
    assert commit.records == [] and not d.coordinator.groups


def test_offset_commit_empty_group_id_is_allowed():
    """OffsetCommit: "" is accepted for backward compatibility (a simple group named "")."""
    d = Driver(service_config())
    commit = d.commit({("foo", 0): 1}, group_id="")
    assert commit.response == OffsetCommitResponse(
        (CommitTopicResponse("foo", (CommitPartitionResponse(0, ErrorCode.NONE),)),)
    )
    assert (
        d.fetch({"foo": (0,)}, group_id="").response.topics[0].partitions[0].committed_offset == 1
    )


@pytest.mark.parametrize("fetch_all", [False, True])
def test_offset_fetch_null_group_id_is_invalid(fetch_all):
    """OffsetFetch: only a null group id is INVALID_GROUP_ID."""
    d = Driver(service_config())
    fetch = d.fetch(None if fetch_all else {"foo": (0,)}, group_id=None)
    assert fetch.response == OffsetFetchResponse(ErrorCode.INVALID_GROUP_ID)


@pytest.mark.parametrize("require_stable", [False, True])
def test_offset_fetch_empty_group_id_is_allowed(require_stable):
    """OffsetFetch: "" is fetched like any unknown group."""
    d = Driver(service_config())
    fetch = d.send(
        OffsetFetch, group_id="", topics=(FetchTopic("foo", (0,)),), require_stable=require_stable
    )
    assert fetch.error == ErrorCode.NONE
    assert fetch.response.topics[0].partitions[0].committed_offset == -1


def test_describe_groups_invalid_group_id():
    """GroupCoordinatorServiceTest.testDescribeGroupsInvalidGroupId"""
    d = Driver(service_config())
    described = d.describe("", None).response.groups
    # Kafka lists the invalid entries first, then the partitions' results; the order is not asserted.
    assert sorted(described, key=lambda g: g.group_id is None) == [
        DescribedGroup(ErrorCode.NONE, "", "Dead"),  # "" is described normally (unknown, so Dead)
        DescribedGroup(ErrorCode.INVALID_GROUP_ID, None, ""),
    ]
    assert len(described) == 2


def test_describe_groups():
    """GroupCoordinatorServiceTest.testDescribeGroups (one coordinator, two groups)"""
    d = Driver(service_config())
    d.commit({("foo", 0): 1}, group_id="group-id-1")
    described = d.describe("group-id-1", "group-id-2").response.groups
    assert [(g.group_id, g.error_code, g.group_state) for g in described] == [
        ("group-id-1", ErrorCode.NONE, "Empty"),
        ("group-id-2", ErrorCode.NONE, "Dead"),
    ]


def test_delete_groups():
    """GroupCoordinatorServiceTest.testDeleteGroups (without the runtime failure of group-id-3)"""
    d = Driver(service_config())
    for group_id in ("group-id-1", "group-id-2"):
        d.commit({("foo", 0): 1}, group_id=group_id)
    delete = d.delete("group-id-1", "group-id-2", None)
    assert sorted(
        delete.response.results, key=lambda r: (r.group_id is not None, r.group_id or "")
    ) == [
        DeletableGroupResult(None, ErrorCode.INVALID_GROUP_ID),
        DeletableGroupResult("group-id-1", ErrorCode.NONE),
        DeletableGroupResult("group-id-2", ErrorCode.NONE),
    ]


def test_delete_groups_empty_group_id_is_not_found():
    """DeleteGroups: only null is INVALID_GROUP_ID; "" reaches the shard and is not found."""
    d = Driver(service_config())
    assert d.delete("").response.results == (
        DeletableGroupResult("", ErrorCode.GROUP_ID_NOT_FOUND),
    )


# -- session timeout bounds -------------------------------------------------------------------


@pytest.mark.parametrize("session_timeout_ms", [119, 50_001])
def test_join_group_invalid_session_timeout(session_timeout_ms):
    """GroupCoordinatorServiceTest.testJoinGroupInvalidSessionTimeout"""
    d = Driver(service_config())
    join = d.join(version=9, protocols=(), session_timeout_ms=session_timeout_ms)
    assert join.response == JoinGroupResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id="")
    assert join.records == [] and not d.coordinator.groups


@pytest.mark.parametrize("session_timeout_ms", [120, 50_000])
def test_join_group_session_timeout_bounds_are_inclusive(session_timeout_ms):
    """The configured minimum and maximum session timeouts themselves are valid."""
    d = Driver(service_config())
    join = d.join(version=3, session_timeout_ms=session_timeout_ms)
    assert not join.done  # accepted: parked in the initial rebalance delay
    d.sleep(3_000)
    assert join.error == ErrorCode.NONE


def test_join_group_invalid_session_timeout_echoes_member_id():
    """INVALID_SESSION_TIMEOUT echoes the request's member id (checked before the group is looked up)."""
    d = Driver(service_config())
    join = d.join("someone", version=9, session_timeout_ms=119)
    assert join.response == JoinGroupResponse(
        ErrorCode.INVALID_SESSION_TIMEOUT, member_id="someone"
    )


# -- LeaveGroup on an unknown group -----------------------------------------------------------


def test_leave_group_throws_unknown_member_id_exception():
    """GroupCoordinatorServiceTest.testLeaveGroupThrowsUnknownMemberIdException"""
    d = Driver(service_config())
    leave = d.leave(("member-1", "instance-1"), ("member-2", "instance-2"), group_id="foo")
    assert leave.response == LeaveGroupResponse(
        ErrorCode.NONE,
        (
            LeaveMemberResponse("member-1", "instance-1", ErrorCode.UNKNOWN_MEMBER_ID),
            LeaveMemberResponse("member-2", "instance-2", ErrorCode.UNKNOWN_MEMBER_ID),
        ),
    )
    assert "foo" not in d.coordinator.groups


def test_leave_unknown_group_below_v3_reports_the_member_error_at_top_level():
    """Below v3 LeaveGroup has no member list: the single member's UNKNOWN_MEMBER_ID is the top-level error."""
    d = Driver(service_config())
    leave = d.leave("member-1", group_id="foo", version=2)
    assert leave.response == LeaveGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)


# -- append errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(("append_error", "expected"), APPEND_ERRORS)
def test_append_error_to_response_error(append_error, expected):
    """handleOperationException's mapping of storage errors to coordinator errors."""
    assert append_error_to_response_error(append_error) == expected


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.UNKNOWN_SERVER_ERROR,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ],
)
def test_append_error_to_response_error_keeps_other_errors(error):
    """Any other error reaches the client as itself."""
    assert append_error_to_response_error(error) == error


@pytest.mark.parametrize(("append_error", "expected"), APPEND_ERRORS)
def test_delete_groups_with_exception(append_error, expected):
    """GroupCoordinatorServiceTest.testDeleteGroupsWithException"""
    d = Driver(service_config(), complete_appends=False)
    d.commit({("foo", 0): 1}, group_id="group-id")
    d.complete(d.appends[0])
    delete = d.delete("group-id")
    assert not delete.done
    d.complete(d.appends[0], append_error)
    assert delete.response.results == (DeletableGroupResult("group-id", expected),)
    # The write failed: the group and its offsets are still there.
    assert str(d.group("group-id").state) == "Empty"
    assert (
        d.fetch({"foo": (0,)}, group_id="group-id")
        .response.topics[0]
        .partitions[0]
        .committed_offset
        == 1
    )


@pytest.mark.parametrize(("append_error", "expected"), APPEND_ERRORS)
def test_offset_commit_with_failed_append(append_error, expected):
    """OffsetCommit (service table): every partition gets the mapped error, and nothing is committed."""
    d = Driver(service_config(), complete_appends=False)
    commit = d.commit({("foo", 0): 1, ("bar", 0): 2}, group_id=GROUP_ID)
    assert not commit.done
    d.complete(d.appends[0], append_error)
    assert commit.response == OffsetCommitResponse(
        (
            CommitTopicResponse("foo", (CommitPartitionResponse(0, expected),)),
            CommitTopicResponse("bar", (CommitPartitionResponse(0, expected),)),
        )
    )
    assert d.fetch(None, group_id=GROUP_ID).response == OffsetFetchResponse(ErrorCode.NONE, ())


@pytest.mark.parametrize(("append_error", "expected"), APPEND_ERRORS)
def test_sync_group_leader_with_failed_append(append_error, expected):
    """The leader's SyncGroup waits on its assignment write; a failed write reaches it mapped."""
    d = Driver(service_config(), complete_appends=False)
    first = d.join(version=4, session_timeout_ms=5_000, rebalance_timeout_ms=10_000)
    d.complete(d.appends[0])  # the new group's empty metadata record
    join = d.join(
        first.response.member_id, version=4, session_timeout_ms=5_000, rebalance_timeout_ms=10_000
    )
    d.sleep(3_000)
    member_id = join.response.member_id
    sync = d.sync(member_id, 1)
    assert not sync.done and len(d.appends) == 1
    d.complete(d.appends[0], append_error)
    assert sync.response == SyncGroupResponse(expected)
    assert str(d.group().state) == "PreparingRebalance"


def test_a_coordinator_that_writes_itself_can_be_told_its_next_write_fails():
    """FailNextWrite: the same outcome as a driver failing the append (GM-23, GM-44), and the
    refused records are not among the effects, so a driver's log never holds them."""
    from coordspec.reference.group import FailNextWrite

    d = Driver()
    d._step(FailNextWrite(ErrorCode.NOT_ENOUGH_REPLICAS, d.now_ms))
    reply = d.commit({("foo", 0): 5})  # a simple group's first commit
    assert reply.response == OffsetCommitResponse(
        (
            CommitTopicResponse(
                "foo", (CommitPartitionResponse(0, ErrorCode.COORDINATOR_NOT_AVAILABLE),)
            ),
        )
    )
    assert reply.records == [] and GROUP_ID not in d.coordinator.groups  # GM-44: reverted
    assert d.commit({("foo", 0): 6}).response.topics[0].partitions[0].error_code == ErrorCode.NONE
    with pytest.raises(UsageError, match="answer AppendCompleted"):
        Driver(complete_appends=False)._step(FailNextWrite(ErrorCode.NOT_ENOUGH_REPLICAS, 0))
