"""Kafka's classic-group Heartbeat and session tests (GroupMetadataManagerTest), ported to the reference.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java.
Kafka's test helpers are in tests/reference/kafka_context.py; porting conventions: see the docstring of
test_sync.py. Kafka's heartbeat errors that the manager *throws* (UnknownMemberIdException,
IllegalGenerationException, ...) are the response's error code here, as the service layer
converts them.
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
    join_dynamic_and_complete_rebalance,
    new_driver,
    static_members_join_and_rebalance,
    verify_session_expiration,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.responses import HeartbeatResponse
from coordspec.reference.group.transitions import COMPLETING, DEAD, EMPTY, PREPARING, STABLE


def test_heartbeat_unknown_group():
    """Kafka: GroupMetadataManagerTest.testHeartbeatUnknownGroup"""
    d = new_driver()
    heartbeat = d.heartbeat("member-id", -1)
    assert heartbeat.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_dead_group():
    """Kafka: GroupMetadataManagerTest.testHeartbeatDeadGroup"""
    d = new_driver()
    create_classic_group(d)
    # Kafka forces the group Dead (group.transitionTo(DEAD)); a coordinator reaches Dead when it
    # unloads the group's partition.
    d.unload()
    assert d.group().state == DEAD

    heartbeat = d.heartbeat("member-id", -1)
    assert heartbeat.error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_empty_group():
    """Kafka: GroupMetadataManagerTest.testHeartbeatEmptyGroup"""
    d = new_driver()
    create_classic_group(d)
    # Kafka adds "member-id" to the Empty group directly (group.add), leaving the group Empty at
    # generation 0 with a member, which the Empty-state branch of classicGroupHeartbeat then answers
    # with UNKNOWN_MEMBER_ID. No request sequence leaves a member in an Empty group (a join moves
    # the group to PreparingRebalance at once), so the port heartbeats the pre-created Empty group
    # without adding the member; the broker's answer, UNKNOWN_MEMBER_ID, is the same.
    assert d.group().state == EMPTY and d.group().generation_id == 0

    heartbeat = d.heartbeat("member-id", 0)
    assert heartbeat.records == []
    assert heartbeat.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_unknown_member_existing_group():
    """Kafka: GroupMetadataManagerTest.testHeartbeatUnknownMemberExistingGroup"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    heartbeat = d.heartbeat("unknown-member-id", leader.generation_id)
    assert heartbeat.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_during_preparing_rebalance():
    """Kafka: GroupMetadataManagerTest.testHeartbeatDuringPreparingRebalance"""
    d = new_driver()
    create_classic_group(d)

    join = d.join("", version=4)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED
    member_id = join.response.member_id

    d.join(member_id, version=3)
    assert d.group().state == PREPARING

    heartbeat = d.heartbeat(member_id, 0)
    assert heartbeat.error == ErrorCode.REBALANCE_IN_PROGRESS


def test_heartbeat_during_completing_rebalance():
    """Kafka: GroupMetadataManagerTest.testHeartbeatDuringCompletingRebalance"""
    d = new_driver()
    create_classic_group(d)
    leader = join_dynamic_and_complete_join(d).response
    assert leader.generation_id == 1
    assert d.group().state == COMPLETING

    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.response == HeartbeatResponse(ErrorCode.NONE)


def test_heartbeat_illegal_generation():
    """Kafka: GroupMetadataManagerTest.testHeartbeatIllegalGeneration"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    heartbeat = d.heartbeat(leader.member_id, leader.generation_id + 1)
    assert heartbeat.error == ErrorCode.ILLEGAL_GENERATION


def test_valid_heartbeat():
    """Kafka: GroupMetadataManagerTest.testValidHeartbeat"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.NONE


def test_classic_group_member_session_timeout():
    """Kafka: GroupMetadataManagerTest.testClassicGroupMemberSessionTimeout"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    # Advance clock by session timeout to kick member out.
    verify_session_expiration(d, 5_000)

    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_classic_group_member_heartbeat_maintains_session():
    """Kafka: GroupMetadataManagerTest.testClassicGroupMemberHeartbeatMaintainsSession"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    # Advance clock by 1/2 of session timeout.
    assert_no_or_empty_result(d.sleep(2_500))
    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.NONE

    assert_no_or_empty_result(d.sleep(2_500))
    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.NONE


def test_classic_group_member_session_timeout_during_rebalance():
    """Kafka: GroupMetadataManagerTest.testClassicGroupMemberSessionTimeoutDuringRebalance"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response
    group = d.group()

    # Add a new member. This should trigger a rebalance. The new member has the new-member join
    # timeout as its session timeout, so it expires later than the existing member.
    other_join = d.join("", version=3, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
    assert other_join.records == []
    assert not other_join.done
    assert group.state == PREPARING

    # Advance clock by 1/2 of session timeout.
    assert_no_or_empty_result(d.sleep(2_500))
    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.REBALANCE_IN_PROGRESS

    # Advance clock by first member's session timeout.
    assert_no_or_empty_result(d.sleep(5_000))
    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.UNKNOWN_MEMBER_ID

    # Advance clock by remaining rebalance timeout to complete join phase.
    assert_no_or_empty_result(d.sleep(2_500))
    assert other_join.done
    assert other_join.error == ErrorCode.NONE
    assert len(group.members) == 1
    assert group.generation_id == 2
    assert group.state == COMPLETING


def test_rebalance_completes_before_member_joins():
    """Kafka: GroupMetadataManagerTest.testRebalanceCompletesBeforeMemberJoins"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()

    # Create a group with a single (static) member.
    leader = join_and_complete_join(
        d,
        version=LATEST_JOIN,
        group_instance_id="leader-instance-id",
        rebalance_timeout_ms=10_000,
        session_timeout_ms=5_000,
    ).response
    first_member_id = leader.member_id
    first_generation_id = leader.generation_id
    assert first_generation_id == 1
    assert group.state == COMPLETING

    sync = d.sync(first_member_id, first_generation_id)
    complete_appends(d)
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert group.state == STABLE

    # Add a new dynamic member. This should trigger a rebalance. The new member has the new-member
    # join timeout as its session timeout, so it expires later than the existing member.
    second_join = d.join("", version=3, rebalance_timeout_ms=10_000, session_timeout_ms=2_500)
    assert second_join.records == []
    assert not second_join.done
    assert group.state == PREPARING

    # Send a couple heartbeats to keep the first member alive while the rebalance finishes.
    for _ in range(2):
        assert_no_or_empty_result(d.sleep(2_500))
        heartbeat = d.heartbeat(first_member_id, first_generation_id)
        assert heartbeat.error == ErrorCode.REBALANCE_IN_PROGRESS

    # Advance clock by remaining rebalance timeout to complete join phase. The second member will
    # become the leader. However, as the first member is a static member it will not be kicked out.
    #
    # Kafka's mock timer: Kafka sleeps 8000 and runs the join timer (deadline: the second member's
    # join + 10000, i.e. 5000 into this sleep) at the end of the sleep, so the join completes, and
    # re-arms every member's session, 3000 ms after its deadline. The reference completes the join at
    # its deadline. Sleeping just the remaining rebalance timeout (5000) completes it at the end of
    # the sleep as in Kafka, so the sessions it re-arms start where Kafka's do: the new member's
    # 2500 ms session does not run out before it syncs (with the 8000 sleep it would, 500 ms before
    # the end of the sleep), and the first member's 5000 ms session runs out during the third 2000 ms
    # sleep below, as Kafka's test expects.
    assert_no_or_empty_result(d.sleep(5_000))
    assert second_join.done
    assert second_join.error == ErrorCode.NONE
    assert len(group.members) == 2
    assert group.generation_id == 2
    assert group.state == COMPLETING
    other_member_id = second_join.response.member_id

    sync = d.sync(other_member_id, 2)
    complete_appends(d)
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert group.state == STABLE

    # The unjoined (first) static member should remain in the group before its session times out.
    heartbeat = d.heartbeat(first_member_id, first_generation_id)
    assert heartbeat.error == ErrorCode.ILLEGAL_GENERATION

    # Now session timeout the unjoined (first) member. Still keeping the new member.
    for expected in (ErrorCode.NONE, ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
        assert_no_or_empty_result(d.sleep(2_000))
        heartbeat = d.heartbeat(other_member_id, 2)
        assert heartbeat.error == expected
    assert len(group.members) == 1
    assert group.state == PREPARING

    rejoin = d.join(
        other_member_id, version=3, rebalance_timeout_ms=10_000, session_timeout_ms=2_500
    )
    assert rejoin.records == []
    assert rejoin.done
    assert rejoin.error == ErrorCode.NONE
    assert rejoin.response.generation_id == 3
    assert group.state == COMPLETING

    resync = d.sync(other_member_id, 3)
    complete_appends(d)
    assert resync.done
    assert resync.error == ErrorCode.NONE
    assert group.state == STABLE

    # The joined member should get heartbeat responses with no error. Let the new member keep
    # heartbeating for a while to verify that no new rebalance is triggered unexpectedly.
    for _ in range(20):
        assert_no_or_empty_result(d.sleep(2_000))
        heartbeat = d.heartbeat(other_member_id, 3)
        assert heartbeat.error == ErrorCode.NONE


def test_heartbeat_during_rebalance_causes_rebalance_in_progress():
    """Kafka: GroupMetadataManagerTest.testHeartbeatDuringRebalanceCausesRebalanceInProgress"""
    d = new_driver()
    create_classic_group(d)

    # First start up a group (with a slightly larger timeout to give us time to heartbeat when the
    # rebalance starts).
    leader = join_dynamic_and_complete_join(
        d, rebalance_timeout_ms=10_000, session_timeout_ms=5_000
    ).response
    assert leader.generation_id == 1
    assert d.group().state == COMPLETING

    # Then join with a new consumer to trigger a rebalance.
    join = d.join("", version=3, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
    assert join.records == []
    assert not join.done

    # We should be in the middle of a rebalance, so the heartbeat should return rebalance in progress.
    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.REBALANCE_IN_PROGRESS


def test_static_member_heartbeat_leader_with_invalid_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberHeartbeatLeaderWithInvalidMemberId"""
    d = new_driver()
    result = static_members_join_and_rebalance(d, version=STATIC_JOIN_V3_FLAGS)

    sync = d.sync(result.leader_id, result.generation_id, group_instance_id="leader-instance-id")
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.NONE

    heartbeat = d.heartbeat(result.leader_id, result.generation_id)
    assert heartbeat.error == ErrorCode.NONE

    heartbeat = d.heartbeat(
        "invalid-member-id", result.generation_id, group_instance_id="leader-instance-id"
    )
    assert heartbeat.error == ErrorCode.FENCED_INSTANCE_ID


def test_second_member_partially_join_and_timeout():
    """Kafka: GroupMetadataManagerTest.testSecondMemberPartiallyJoinAndTimeout"""
    d = new_driver()
    create_classic_group(d)
    group = d.group()

    # Create a group with a single member.
    leader = join_and_complete_join(
        d,
        version=LATEST_JOIN,
        group_instance_id="leader-instance-id",
        rebalance_timeout_ms=10_000,
        session_timeout_ms=5_000,
    ).response
    first_member_id = leader.member_id
    first_generation_id = leader.generation_id
    assert first_generation_id == 1
    assert group.state == COMPLETING

    sync = d.sync(first_member_id, first_generation_id)
    complete_appends(d)
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert group.state == STABLE

    # Add a new dynamic pending member.
    join = d.join("", version=LATEST_JOIN, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED
    assert len(group.pending_members) == 1
    assert group.state == STABLE

    # Heartbeat from the leader to maintain session while timing out pending member.
    for _ in range(2):
        assert_no_or_empty_result(d.sleep(2_500))
        heartbeat = d.heartbeat(first_member_id, first_generation_id)
        assert heartbeat.error == ErrorCode.NONE

    # The second member should have been removed from the pending list (session timeout), and the
    # group should be Stable with only the first member in it.
    assert len(group.members) == 1
    assert first_member_id in group.members
    assert group.generation_id == 1
    assert group.state == STABLE
