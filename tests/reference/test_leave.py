"""Kafka's classic-group LeaveGroup, pending-member and unload tests (GroupMetadataManagerTest), ported
to the reference.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java.
Kafka's test helpers are in tests/reference/kafka_context.py; porting conventions: see the docstring of
test_sync.py. Where Kafka's classicGroupLeave *throws* UnknownMemberIdException (the group does
not exist), the service layer answers top-level NONE with every listed member UNKNOWN_MEMBER_ID;
that is the expected response here.
"""

from __future__ import annotations

from kafka_context import (
    LATEST_JOIN,
    STATIC_JOIN_V3_FLAGS,
    assert_no_or_empty_result,
    complete_appends,
    create_classic_group,
    join_and_complete_join,
    join_dynamic_and_complete_join,
    new_driver,
    new_group_metadata_record,
    setup_group_with_pending_member,
    static_members_join_and_rebalance,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.responses import (
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResponse,
    SyncGroupResponse,
)
from coordspec.reference.group.transitions import COMPLETING, DEAD, EMPTY, PREPARING

NONE = ErrorCode.NONE
UNKNOWN = ErrorCode.UNKNOWN_MEMBER_ID


def leave_response(*members: tuple[str, str | None, ErrorCode]) -> LeaveGroupResponse:
    """LeaveGroupResponseData with top-level NONE and these {memberId, groupInstanceId, errorCode}."""
    return LeaveGroupResponse(ErrorCode.NONE, tuple(LeaveMemberResponse(*m) for m in members))


def test_leave_group_invalid_group():
    """Kafka: GroupMetadataManagerTest.testLeaveGroupInvalidGroup"""
    d = new_driver()
    create_classic_group(d)

    leave = d.leave(group_id="invalid-group-id")
    assert leave.records == []
    assert leave.response == leave_response()


def test_leave_group_unknown_group():
    """Kafka: GroupMetadataManagerTest.testLeaveGroupUnknownGroup"""
    d = new_driver()

    leave = d.leave("member-id", group_id="unknown-group-id")
    assert leave.records == []
    assert leave.response == leave_response(("member-id", None, UNKNOWN))


def test_leave_group_unknown_member_id_existing_group():
    """Kafka: GroupMetadataManagerTest.testLeaveGroupUnknownMemberIdExistingGroup"""
    d = new_driver()
    create_classic_group(d)
    join_dynamic_and_complete_join(d)

    leave = d.leave("unknown-member-id")
    assert leave.response == leave_response(("unknown-member-id", None, UNKNOWN))
    assert leave.records == []


def test_leave_dead_group():
    """Kafka: GroupMetadataManagerTest.testLeaveDeadGroup"""
    d = new_driver()
    create_classic_group(d)
    # Kafka forces the group Dead (group.transitionTo(DEAD)); a coordinator reaches Dead when it
    # unloads the group's partition.
    d.unload()
    assert d.group().state == DEAD

    leave = d.leave("member-id")
    assert leave.response == LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, ())
    assert leave.records == []


def test_valid_leave_group():
    """Kafka: GroupMetadataManagerTest.testValidLeaveGroup"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()
    join = join_dynamic_and_complete_join(d).response

    # Dynamic member leaves. The group becomes empty.
    leave = d.leave(join.member_id)
    assert leave.records == [new_group_metadata_record(d.group())]
    complete_appends(d)

    assert leave.response == leave_response((join.member_id, None, NONE))
    assert group.state == EMPTY
    assert group.generation_id == 2


def test_leave_group_with_fenced_instance_id():
    """Kafka: GroupMetadataManagerTest.testLeaveGroupWithFencedInstanceId"""
    d = new_driver()
    create_classic_group(d)
    join_and_complete_join(d, version=LATEST_JOIN, group_instance_id="group-instance-id")

    leave = d.leave(("other-member-id", "group-instance-id"))
    assert leave.response == leave_response(
        ("other-member-id", "group-instance-id", ErrorCode.FENCED_INSTANCE_ID)
    )
    assert leave.records == []


def test_leave_group_static_member_with_unknown_member_id():
    """Kafka: GroupMetadataManagerTest.testLeaveGroupStaticMemberWithUnknownMemberId"""
    d = new_driver()
    create_classic_group(d)
    join_and_complete_join(d, version=LATEST_JOIN, group_instance_id="group-instance-id")

    # Having an unknown member id does not affect the request: the group instance id is valid.
    leave = d.leave(("", "group-instance-id"))
    assert leave.response == leave_response(("", "group-instance-id", NONE))


def test_static_members_valid_batch_leave_group():
    """Kafka: GroupMetadataManagerTest.testStaticMembersValidBatchLeaveGroup"""
    d = new_driver()
    static_members_join_and_rebalance(d, version=STATIC_JOIN_V3_FLAGS)

    leave = d.leave(("", "leader-instance-id"), ("", "follower-instance-id"))
    assert leave.response == leave_response(
        ("", "leader-instance-id", NONE), ("", "follower-instance-id", NONE)
    )


def test_static_members_leave_unknown_group():
    """Kafka: GroupMetadataManagerTest.testStaticMembersLeaveUnknownGroup"""
    d = new_driver()
    static_members_join_and_rebalance(d, version=STATIC_JOIN_V3_FLAGS)

    leave = d.leave(
        ("", "leader-instance-id"), ("", "follower-instance-id"), group_id="invalid-group-id"
    )
    assert leave.records == []
    assert leave.response == leave_response(
        ("", "leader-instance-id", UNKNOWN), ("", "follower-instance-id", UNKNOWN)
    )


def test_static_members_fenced_instance_batch_leave_group():
    """Kafka: GroupMetadataManagerTest.testStaticMembersFencedInstanceBatchLeaveGroup"""
    d = new_driver()
    static_members_join_and_rebalance(d, version=STATIC_JOIN_V3_FLAGS)

    leave = d.leave(("", "leader-instance-id"), ("invalid-member-id", "follower-instance-id"))
    assert leave.response == leave_response(
        ("", "leader-instance-id", NONE),
        ("invalid-member-id", "follower-instance-id", ErrorCode.FENCED_INSTANCE_ID),
    )


def test_static_members_unknown_instance_batch_leave_group():
    """Kafka: GroupMetadataManagerTest.testStaticMembersUnknownInstanceBatchLeaveGroup"""
    d = new_driver()
    static_members_join_and_rebalance(d, version=STATIC_JOIN_V3_FLAGS)

    leave = d.leave(("", "unknown-instance-id"), ("", "follower-instance-id"))
    assert leave.response == leave_response(
        ("", "unknown-instance-id", UNKNOWN), ("", "follower-instance-id", NONE)
    )
    assert leave.records == []


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member():
    """Kafka: GroupMetadataManagerTest.testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember"""
    d = new_driver()
    long_session_timeout_ms = 10_000
    rebalance_timeout_ms = 5_000
    result = static_members_join_and_rebalance(
        d,
        version=STATIC_JOIN_V3_FLAGS,
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_timeout_ms=long_session_timeout_ms,
    )
    group = d.group()

    # New member joins.
    join = d.join(
        "",
        version=3,
        protocol_names=("range", "roundrobin"),
        session_timeout_ms=long_session_timeout_ms,
    )

    # The new dynamic member has been elected as leader.
    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms))
    assert join.done
    assert join.error == ErrorCode.NONE
    new_member_id = join.response.member_id
    assert join.response.leader == new_member_id
    assert len(join.response.members) == 3
    assert join.response.generation_id == 2
    assert group.state == COMPLETING
    assert set(group.members) == {result.leader_id, result.follower_id, new_member_id}
    assert {m.member_id for m in group.members.values() if m.is_static} == {
        result.leader_id,
        result.follower_id,
    }
    assert {m.member_id for m in group.members.values() if not m.is_static} == {new_member_id}

    # A leave from the static follower moves the group towards PreparingRebalance.
    leave = d.leave((result.follower_id, "follower-instance-id"))
    assert leave.response == leave_response((result.follower_id, "follower-instance-id", NONE))
    assert group.state == PREPARING

    d.sleep(rebalance_timeout_ms)
    # Only the static leader is kept, and the group is stuck in PreparingRebalance.
    assert not [m for m in group.members.values() if not m.is_static]
    assert set(group.members) == {result.leader_id}
    assert group.generation_id == 2
    assert group.state == PREPARING


# -- pending members -----------------------------------------------------------------------------


def test_pending_members_leave_group():
    """Kafka: GroupMetadataManagerTest.testPendingMembersLeaveGroup"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()
    pending = setup_group_with_pending_member(d).pending_member_response

    leave = d.leave(pending.member_id)
    assert leave.response == leave_response((pending.member_id, None, NONE))
    assert leave.records == []

    assert group.state == COMPLETING
    assert len(group.members) == 2
    assert len([m for m in group.members.values() if not m.is_static]) == 2
    assert len(group.pending_members) == 0


def test_pending_member_batch_leave_group():
    """Kafka: GroupMetadataManagerTest.testPendingMemberBatchLeaveGroup"""
    d = new_driver()
    create_classic_group(d)
    pending = setup_group_with_pending_member(d).pending_member_response

    leave = d.leave(("", "unknown-instance-id"), pending.member_id)
    assert leave.response == leave_response(
        ("", "unknown-instance-id", UNKNOWN), (pending.member_id, None, NONE)
    )


def test_joined_member_pending_member_batch_leave_group():
    """Kafka: GroupMetadataManagerTest.testJoinedMemberPendingMemberBatchLeaveGroup"""
    d = new_driver()
    create_classic_group(d)
    result = setup_group_with_pending_member(d)
    leader_id, follower_id = result.leader_id, result.follower_id
    pending_id = result.pending_member_response.member_id

    leave = d.leave(leader_id, follower_id, pending_id)
    assert leave.response == leave_response(
        (leader_id, None, NONE), (follower_id, None, NONE), (pending_id, None, NONE)
    )


def test_joined_member_pending_member_batch_leave_group_with_unknown_member():
    """Kafka: GroupMetadataManagerTest.testJoinedMemberPendingMemberBatchLeaveGroupWithUnknownMember"""
    d = new_driver()
    create_classic_group(d)
    result = setup_group_with_pending_member(d)
    leader_id, follower_id = result.leader_id, result.follower_id
    pending_id = result.pending_member_response.member_id

    leave = d.leave(leader_id, follower_id, pending_id, "unknown-member-id")
    assert leave.response == leave_response(
        (leader_id, None, NONE),
        (follower_id, None, NONE),
        (pending_id, None, NONE),
        ("unknown-member-id", None, UNKNOWN),
    )


def test_join_group_completion_when_pending_member_joins():
    """Kafka: GroupMetadataManagerTest.testJoinGroupCompletionWhenPendingMemberJoins"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()
    pending = setup_group_with_pending_member(d).pending_member_response

    # Complete join group for the pending member.
    join = d.join(pending.member_id, version=3)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert group.state == COMPLETING
    assert len(group.members) == 3
    assert len(group.pending_members) == 0


def test_join_group_completion_when_pending_member_times_out():
    """Kafka: GroupMetadataManagerTest.testJoinGroupCompletionWhenPendingMemberTimesOut"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()
    setup_group_with_pending_member(d)

    # Advancing the clock by > 2500 (the pending member's session timeout) and < 5000 (the other
    # members') makes the coordinator attempt join completion on the pending member's expiration.
    assert_no_or_empty_result(d.sleep(3_000))
    assert group.state == COMPLETING
    assert len(group.members) == 2
    assert len(group.pending_members) == 0


# -- unload ----------------------------------------------------------------------------------------


def test_classic_group_on_unloaded_empty_and_preparing_rebalance():
    """Kafka: GroupMetadataManagerTest.testClassicGroupOnUnloadedEmptyAndPreparingRebalance"""
    d = new_driver()
    create_classic_group(d, "empty-group")
    empty_group = d.group("empty-group")
    assert empty_group.state == EMPTY

    create_classic_group(d, "preparing-group")
    preparing_group = d.group("preparing-group")
    # preparing-group should have 2 members.
    join1 = d.join("", version=3, group_id="preparing-group")
    join2 = d.join("", version=3, group_id="preparing-group")
    assert not join1.done
    assert not join2.done
    assert preparing_group.state == PREPARING
    assert len(preparing_group.members) == 2
    member_ids = list(preparing_group.members)

    d.unload()

    assert empty_group.state == DEAD
    assert preparing_group.state == DEAD
    assert join1.done
    assert join2.done
    # Kafka compares with the response's own member id; each is also one of the two members.
    assert {join1.response.member_id, join2.response.member_id} == set(member_ids)
    for join in (join1, join2):
        assert join.response == JoinGroupResponse(
            error_code=ErrorCode.NOT_COORDINATOR,
            generation_id=-1,
            protocol_type=None,
            protocol_name="",
            leader="",
            skip_assignment=False,
            member_id=join.response.member_id,
            members=(),
        )


def test_classic_group_on_unloaded_completing_rebalance():
    """Kafka: GroupMetadataManagerTest.testClassicGroupOnUnloadedCompletingRebalance"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()

    # A group with a leader, a follower and a pending member: the pending member joins, then the
    # pending member and the follower sync, so two members await sync while the leader is pending.
    result = setup_group_with_pending_member(d)
    pending_id = result.pending_member_response.member_id

    join = d.join(pending_id, version=3)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert len(group.members) == 3
    assert len(group.pending_members) == 0

    follower_sync = d.sync(result.follower_id, join.response.generation_id)
    pending_sync = d.sync(pending_id, join.response.generation_id)
    assert not follower_sync.done
    assert not pending_sync.done
    assert group.state == COMPLETING

    d.unload()

    assert group.state == DEAD
    assert follower_sync.done
    assert pending_sync.done
    assert follower_sync.response == SyncGroupResponse(ErrorCode.NOT_COORDINATOR, None, None, b"")
    assert pending_sync.response == SyncGroupResponse(ErrorCode.NOT_COORDINATOR, None, None, b"")
