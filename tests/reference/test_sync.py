"""Kafka's classic-group SyncGroup tests (GroupMetadataManagerTest), ported to the reference.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java.

Kafka's test helpers (GroupMetadataManagerTestContext and GroupMetadataManagerTest's own) are in
tests/reference/kafka_context.py; this file and test_heartbeat.py and test_leave.py import them from there.

Porting conventions used throughout (here, in test_heartbeat.py and in test_leave.py):

* Every driver is built with ``complete_appends=False``: where Kafka's test (or helper) calls
  ``appendFuture.complete(null)`` the port calls ``complete_appends(d)``.
* ``context.createClassicGroup(id)`` puts an Empty group at generation 0 in memory without a
  request. The port reaches the same state by loading the empty GroupMetadata record Kafka
  writes when it creates a group (a real coordinator event), so the joins that follow write no
  creation record, as in Kafka's tests.
* Kafka's JoinGroup helpers pick a request version for its flags only: ``sendClassicGroupJoin``
  = v3 flags, ``(request, true)`` = v4, ``(request, true, true)`` = latest. The reference
  validates versions, so a static member (group instance id, v5+) sent with Kafka's v3 flags
  is sent at v5 (``STATIC_JOIN_V3_FLAGS``), the lowest version that carries an instance id
  (requireKnownMemberId does not apply to static members, and skip-assignment only exists from
  v9); ``static_members_join_and_rebalance`` is called with ``version=STATIC_JOIN_V3_FLAGS``.
* "throws X" in Kafka becomes error code X in the response (the service layer converts).
* ``assertNoOrEmptyResult(context.sleep(ms))`` becomes "the sleep wrote no records".
"""

from __future__ import annotations

from driver import Driver, Pending
from kafka_context import (
    INITIAL_DELAY_MS,
    LATEST_JOIN,
    STATIC_JOIN_V3_FLAGS,
    assert_no_or_empty_result,
    complete_appends,
    create_classic_group,
    join_and_complete_join,
    join_dynamic_and_complete_rebalance,
    join_with_n_members,
    new_driver,
    new_group_metadata_record,
    session_deadline,
    sync_deadline,
    verify_heartbeat,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.responses import JoinGroupResponse
from coordspec.reference.group.transitions import COMPLETING, EMPTY, PREPARING, STABLE

# -- testSyncGroupProtocolTypeAndNameWith -----------------------------------------------------


def sync_group_protocol_type_and_name_with(
    protocol_type,
    protocol_name,
    expected_error,
    expected_type,
    expected_name,
    *,
    sync_version: int | None = None,
) -> None:
    """Kafka's shared scenario testSyncGroupProtocolTypeAndNameWith."""
    d = new_driver()
    create_classic_group(d)
    kw = dict(version=STATIC_JOIN_V3_FLAGS, protocol_names=("range", "roundrobin"))
    leader_join = d.join("", group_instance_id="leader-instance-id", **kw)
    assert leader_join.records == [] and not leader_join.done
    follower_join = d.join("", group_instance_id="follower-instance-id", **kw)
    assert follower_join.records == [] and not follower_join.done

    # Kafka's mock timer: Kafka sleeps 10000 and runs the initial-delay timer (deadline 3000) at the
    # end of the sleep, so the join completes at t=10000 and the members' 500 ms session and sync
    # timers start there. The reference completes the join at the timer's deadline, t=3000; sleeping
    # past t=3500 would let those 500 ms timers expire before anyone syncs, which Kafka's test never
    # exercises. Sleep to the join's completion instead.
    assert_no_or_empty_result(d.sleep(INITIAL_DELAY_MS))
    assert leader_join.done and follower_join.done
    assert leader_join.error == ErrorCode.NONE and follower_join.error == ErrorCode.NONE
    leader_id = leader_join.response.member_id
    follower_id = follower_join.response.member_id
    generation_id = leader_join.response.generation_id

    sync_kw = dict(version=sync_version, protocol_type=protocol_type, protocol_name=protocol_name)
    leader_sync = d.sync(leader_id, generation_id, assignments={leader_id: b""}, **sync_kw)
    complete_appends(d)
    assert leader_sync.done
    assert leader_sync.error == expected_error
    assert leader_sync.response.protocol_type == expected_type
    assert leader_sync.response.protocol_name == expected_name

    follower_sync = d.sync(follower_id, generation_id, assignments={leader_id: b""}, **sync_kw)
    assert follower_sync.records == []
    assert follower_sync.done
    assert follower_sync.error == expected_error
    assert follower_sync.response.protocol_type == expected_type
    assert follower_sync.response.protocol_name == expected_name


def test_sync_group_returns_an_error_when_protocol_type_is_inconsistent():
    """Kafka: GroupMetadataManagerTest.testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent"""
    # Sent at v5 as in Kafka. (On a broker KafkaApis already rejects the absent protocol name of a
    # v5 request with the same INCONSISTENT_GROUP_PROTOCOL.)
    sync_group_protocol_type_and_name_with(
        "protocolType", None, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None, None
    )


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent():
    """Kafka: GroupMetadataManagerTest.testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent"""
    sync_group_protocol_type_and_name_with(
        None, "protocolName", ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None, None
    )


def test_sync_group_succeed_when_protocol_type_and_name_are_not_provided():
    """Kafka: GroupMetadataManagerTest.testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided"""
    # Kafka's manager test sends a latest-version SyncGroup with null protocol type and name; on a
    # broker KafkaApis rejects that (areMandatoryProtocolTypeAndNamePresent: v5+ must carry both)
    # before the coordinator sees it. A SyncGroup "without protocol type and name" exists on the
    # wire only below v5, so the port sends v4. A v4 response has no protocol type/name fields,
    # so they read as absent (None) where Kafka's in-memory response holds "consumer"/"range".
    sync_group_protocol_type_and_name_with(None, None, ErrorCode.NONE, None, None, sync_version=4)


def test_sync_group_succeed_when_protocol_type_and_name_are_consistent():
    """Kafka: GroupMetadataManagerTest.testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent"""
    sync_group_protocol_type_and_name_with("consumer", "range", ErrorCode.NONE, "consumer", "range")


# -- validation --------------------------------------------------------------------------------


def test_sync_group_from_unknown_group():
    """Kafka: GroupMetadataManagerTest.testSyncGroupFromUnknownGroup"""
    d = new_driver()
    sync = d.sync("member-id", 1)
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_group_from_unknown_member():
    """Kafka: GroupMetadataManagerTest.testSyncGroupFromUnknownMember"""
    d = new_driver()
    create_classic_group(d)
    join = join_and_complete_join(
        d, version=LATEST_JOIN, group_instance_id="leader-instance-id"
    ).response
    member_id, generation_id = join.member_id, join.generation_id

    sync = d.sync(member_id, generation_id, assignments={member_id: b""})
    complete_appends(d)
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert sync.response.assignment == b""

    sync = d.sync("unknown-member-id", generation_id, assignments={member_id: b""})
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert sync.response.assignment == b""


def test_sync_group_from_illegal_generation():
    """Kafka: GroupMetadataManagerTest.testSyncGroupFromIllegalGeneration"""
    d = new_driver()
    create_classic_group(d)
    join = join_and_complete_join(
        d, version=LATEST_JOIN, group_instance_id="leader-instance-id"
    ).response

    sync = d.sync(join.member_id, join.generation_id + 1)
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.ILLEGAL_GENERATION


def test_sync_group_as_leader_append_failure_transforms_error():
    """Kafka: GroupMetadataManagerTest.testSyncGroupAsLeaderAppendFailureTransformsError"""
    d = new_driver()
    create_classic_group(d)
    join = join_and_complete_join(
        d, version=LATEST_JOIN, group_instance_id="leader-instance-id"
    ).response

    sync = d.sync(join.member_id, 1)
    assert not sync.done
    assert len(d.appends) == 1
    d.complete(d.appends[0], ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert sync.done
    assert sync.error == ErrorCode.NOT_COORDINATOR


# -- joins around a sync -----------------------------------------------------------------------


def rejoin_with_new_follower(
    d: Driver, leader: JoinGroupResponse, **timeouts
) -> tuple[Pending, Pending]:
    """The shared opening of several Kafka tests: a new follower joins (v3), the leader rejoins, and the
    join phase completes at once with the leader unchanged."""
    follower_join = d.join("", version=3, **timeouts)
    assert follower_join.records == []
    assert not follower_join.done
    leader_join = d.join(leader.member_id, version=3, **timeouts)
    assert leader_join.records == []
    assert leader_join.done and follower_join.done
    assert leader_join.error == ErrorCode.NONE and follower_join.error == ErrorCode.NONE
    assert leader_join.response.generation_id == follower_join.response.generation_id
    assert leader_join.response.leader == leader.member_id
    assert follower_join.response.leader == leader.member_id
    return leader_join, follower_join


def test_join_group_from_unchanged_follower_does_not_rebalance():
    """Kafka: GroupMetadataManagerTest.testJoinGroupFromUnchangedFollowerDoesNotRebalance"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response
    leader_join, follower_join = rejoin_with_new_follower(d, leader)
    next_generation = leader_join.response.generation_id
    follower_id = follower_join.response.member_id

    # This shouldn't cause a rebalance since protocol information hasn't changed.
    follower_join = d.join(follower_id, version=3)
    assert follower_join.records == []
    assert follower_join.done
    assert follower_join.error == ErrorCode.NONE
    assert follower_join.response.generation_id == next_generation


def test_leader_failure_in_sync_group():
    """Kafka: GroupMetadataManagerTest.testLeaderFailureInSyncGroup"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response
    group = d.group()
    leader_join, follower_join = rejoin_with_new_follower(
        d, leader, rebalance_timeout_ms=10_000, session_timeout_ms=5_000
    )
    assert group.state == COMPLETING
    next_generation = leader_join.response.generation_id
    follower_id = follower_join.response.member_id

    # With no leader SyncGroup, the follower's sync request should fail with an error indicating
    # that it should rejoin.
    follower_sync = d.sync(follower_id, next_generation)
    assert follower_sync.records == []
    assert not follower_sync.done

    # Kafka's mock timer: Kafka sleeps 10000 (twice the session timeout) and runs every due timer at
    # the end of the sleep, so the follower's session, re-armed when the leader's expiry answers its
    # sync, lands at end-of-sleep + 5000 and the follower survives. The reference fires the leader's
    # expiry at its deadline (join completion + 5000), re-arming the follower's session to that
    # deadline + 5000 = the end of a 10000 sleep, where it would expire too (correctly: the follower
    # sent nothing for a whole session). Sleep just the session timeout, which expires the leader and
    # checks the same thing: the parked follower is answered and kept, the leader removed.
    assert_no_or_empty_result(d.sleep(5_000))

    assert follower_sync.done
    assert follower_sync.error == ErrorCode.REBALANCE_IN_PROGRESS
    assert len(group.members) == 1
    assert follower_id in group.members
    assert group.state == PREPARING


def test_sync_group_follower_after_leader():
    """Kafka: GroupMetadataManagerTest.testSyncGroupFollowerAfterLeader"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response
    group = d.group()
    leader_join, follower_join = rejoin_with_new_follower(
        d, leader, rebalance_timeout_ms=10_000, session_timeout_ms=5_000
    )
    assert group.state == COMPLETING
    next_generation = leader_join.response.generation_id
    follower_id = follower_join.response.member_id
    leader_assignment, follower_assignment = b"\x00", b"\x01"
    assignment = {leader.member_id: leader_assignment, follower_id: follower_assignment}

    sync = d.sync(leader.member_id, next_generation, assignments=assignment)
    complete_appends(d)
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert sync.response.assignment == leader_assignment

    follower_sync = d.sync(follower_id, next_generation, assignments=assignment)
    assert follower_sync.records == []
    assert follower_sync.done
    assert follower_sync.error == ErrorCode.NONE
    assert follower_sync.response.assignment == follower_assignment
    assert group.state == STABLE


def test_sync_group_leader_after_follower():
    """Kafka: GroupMetadataManagerTest.testSyncGroupLeaderAfterFollower"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response
    group = d.group()
    leader_join, follower_join = rejoin_with_new_follower(
        d, leader, rebalance_timeout_ms=10_000, session_timeout_ms=5_000
    )
    assert group.state == COMPLETING
    next_generation = leader_join.response.generation_id
    follower_id = follower_join.response.member_id
    leader_assignment, follower_assignment = b"\x00", b"\x01"

    follower_sync = d.sync(follower_id, next_generation)
    assert follower_sync.records == []
    assert not follower_sync.done

    assignment = {leader.member_id: leader_assignment, follower_id: follower_assignment}
    sync = d.sync(leader.member_id, next_generation, assignments=assignment)
    complete_appends(d)
    assert sync.records == [new_group_metadata_record(d.group(), assignment)]

    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert sync.response.assignment == leader_assignment
    assert follower_sync.done
    assert follower_sync.error == ErrorCode.NONE
    assert follower_sync.response.assignment == follower_assignment
    assert group.state == STABLE


def test_join_group_from_unchanged_leader_should_rebalance():
    """Kafka: GroupMetadataManagerTest.testJoinGroupFromUnchangedLeaderShouldRebalance"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    # Join group from the leader should force the group to rebalance, which allows the leader to
    # push new assignment when local metadata changes.
    rejoin = d.join(leader.member_id, version=3)
    assert rejoin.records == []
    assert rejoin.done
    assert rejoin.error == ErrorCode.NONE
    assert rejoin.response.generation_id == leader.generation_id + 1


def test_generation_id_increments_on_rebalance():
    """Kafka: GroupMetadataManagerTest.testGenerationIdIncrementsOnRebalance"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    join = d.join(leader.member_id, version=3)
    assert join.records == []
    assert join.done
    assert join.response.generation_id == 2
    assert join.error == ErrorCode.NONE


def test_sync_group_empty_assignment():
    """Kafka: GroupMetadataManagerTest.testSyncGroupEmptyAssignment"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d).response

    heartbeat = d.heartbeat(leader.member_id, leader.generation_id)
    assert heartbeat.error == ErrorCode.NONE


# -- the pending-sync timer ----------------------------------------------------------------------


def test_rebalance_times_out_when_sync_request_is_not_received():
    """Kafka: GroupMetadataManagerTest.testRebalanceTimesOutWhenSyncRequestIsNotReceived"""
    d = new_driver()
    rebalance_timeout_ms = session_timeout_ms = 5_000
    join_responses = join_with_n_members(d, 3, rebalance_timeout_ms, session_timeout_ms)
    group = d.group()

    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms // 2))
    # Heartbeats to ensure that heartbeating does not interfere with the delayed sync operation.
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.NONE)

    # Advance by the other half: the pending sync (and only it) expires; members are removed and
    # the group becomes empty, writing an empty group metadata record.
    assert sync_deadline(d) == d.now_ms + rebalance_timeout_ms // 2
    assert all(
        session_deadline(d, r.member_id) > d.now_ms + rebalance_timeout_ms // 2
        for r in join_responses
    )
    records = d.sleep(rebalance_timeout_ms // 2)
    assert sync_deadline(d) is None
    assert records == [new_group_metadata_record(d.group())]
    assert complete_appends(d) == 1

    # Heartbeats fail because none of the members have sent the sync request.
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.UNKNOWN_MEMBER_ID)
    assert group.state == EMPTY


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers():
    """Kafka: GroupMetadataManagerTest.testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers"""
    d = new_driver()
    rebalance_timeout_ms = session_timeout_ms = 5_000
    join_responses = join_with_n_members(d, 3, rebalance_timeout_ms, session_timeout_ms)
    group = d.group()

    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms // 2))
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.NONE)

    # Leader sends a sync group request.
    sync = d.sync(join_responses[0].member_id, 1)
    complete_appends(d)
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert group.state == STABLE
    verify_heartbeat(d, join_responses[0], ErrorCode.NONE)

    # Advance by the other half to expire the pending sync (the only timeout). Followers are removed.
    assert sync_deadline(d) == d.now_ms + rebalance_timeout_ms // 2
    assert all(
        session_deadline(d, r.member_id) > d.now_ms + rebalance_timeout_ms // 2
        for r in join_responses
    )
    records = d.sleep(rebalance_timeout_ms // 2)
    assert sync_deadline(d) is None
    assert records == []

    # The leader heartbeats into the new rebalance; the followers are gone.
    verify_heartbeat(d, join_responses[0], ErrorCode.REBALANCE_IN_PROGRESS)
    for response in join_responses[1:]:
        verify_heartbeat(d, response, ErrorCode.UNKNOWN_MEMBER_ID)
    assert group.state == PREPARING


def test_rebalance_times_out_when_sync_request_is_not_received_from_leaders():
    """Kafka: GroupMetadataManagerTest.testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders"""
    d = new_driver()
    rebalance_timeout_ms = session_timeout_ms = 5_000
    join_responses = join_with_n_members(d, 3, rebalance_timeout_ms, session_timeout_ms)
    group = d.group()

    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms // 2))
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.NONE)

    # Followers send sync group requests.
    follower_syncs = []
    for response in join_responses[1:]:
        sync = d.sync(response.member_id, 1)
        assert sync.records == []
        assert not sync.done
        follower_syncs.append(sync)

    # Advance by the other half to expire the pending sync (the only timeout). The leader is kicked out.
    assert sync_deadline(d) == d.now_ms + rebalance_timeout_ms // 2
    assert all(
        session_deadline(d, r.member_id) > d.now_ms + rebalance_timeout_ms // 2
        for r in join_responses
    )
    records = d.sleep(rebalance_timeout_ms // 2)
    assert sync_deadline(d) is None
    assert records == []

    for sync in follower_syncs:
        assert sync.done
        assert sync.error == ErrorCode.REBALANCE_IN_PROGRESS
    verify_heartbeat(d, join_responses[0], ErrorCode.UNKNOWN_MEMBER_ID)
    for response in join_responses[1:]:
        verify_heartbeat(d, response, ErrorCode.REBALANCE_IN_PROGRESS)
    assert group.state == PREPARING


def test_rebalance_does_not_time_out_when_all_sync_are_received():
    """Kafka: GroupMetadataManagerTest.testRebalanceDoesNotTimeOutWhenAllSyncAreReceived"""
    d = new_driver()
    rebalance_timeout_ms = session_timeout_ms = 5_000
    join_responses = join_with_n_members(d, 3, rebalance_timeout_ms, session_timeout_ms)
    group = d.group()
    leader_id = join_responses[0].member_id

    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms // 2))
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.NONE)

    # All members send sync group requests.
    syncs = []
    for response in join_responses:
        sync = d.sync(response.member_id, 1)
        if response.member_id == leader_id:
            assert sync.records == [new_group_metadata_record(d.group())]
            complete_appends(d)
        else:
            assert sync.records == []
        assert sync.done
        syncs.append(sync)
    for sync in syncs:
        assert sync.error == ErrorCode.NONE

    # Pending sync should already have been cancelled.
    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms // 2))
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.NONE)

    assert_no_or_empty_result(d.sleep(rebalance_timeout_ms // 2))
    for response in join_responses:
        verify_heartbeat(d, response, ErrorCode.NONE)
    assert group.state == STABLE
