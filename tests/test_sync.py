"""Kafka's classic-group SyncGroup tests (GroupMetadataManagerTest), ported to the reference.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java.

The top of this file also holds the Kafka test helpers (GroupMetadataManagerTestContext) that
tests/driver.py lacks or that must complete appends by hand; test_heartbeat.py and
test_leave.py import them from here.

Porting conventions used throughout:

* Every driver is built with ``complete_appends=False``: where Kafka's test (or helper) calls
  ``appendFuture.complete(null)`` the port calls ``complete_appends(d)``.
* ``context.createClassicGroup(id)`` puts an Empty group at generation 0 in memory without a
  request. The port reaches the same state by loading the empty GroupMetadata record Kafka
  writes when it creates a group (a real coordinator event), so the joins that follow write no
  creation record, as in Kafka's tests.
* Kafka's JoinGroup helpers pick a request version for its flags only: ``sendClassicGroupJoin``
  = v3 flags, ``(request, true)`` = v4, ``(request, true, true)`` = latest. The reference
  validates versions, so a static member (group instance id, v5+) sent with Kafka's v3 flags
  is sent at v5, the lowest version that carries an instance id (requireKnownMemberId does not
  apply to static members, and skip-assignment only exists from v9).
* "throws X" in Kafka becomes error code X in the response (the service layer converts).
* ``assertNoOrEmptyResult(context.sleep(ms))`` becomes "the sleep wrote no records".
"""

from __future__ import annotations

from driver import GROUP_ID, Driver, Pending, kafka_test_config

from reference.errors import ErrorCode
from reference.group.rebalance import join_key, session_key, sync_key
from reference.group.records import GroupMetadataKey, GroupMetadataValue, MemberMetadata, Record
from reference.group.responses import JoinGroupResponse
from reference.group.transitions import COMPLETING, EMPTY, PREPARING, STABLE

INITIAL_DELAY_MS = 3_000  # GroupMetadataManagerTestContext's classicGroupInitialRebalanceDelayMs
LATEST_JOIN = 9
STATIC_JOIN_V3_FLAGS = 5  # see the module docstring

# -- Kafka's test helpers -------------------------------------------------------------------


def new_driver(**config) -> Driver:
    """new GroupMetadataManagerTestContext.Builder().build(): appends complete only by hand."""
    return Driver(kafka_test_config(**config), complete_appends=False)


def complete_appends(d: Driver, error: ErrorCode = ErrorCode.NONE) -> int:
    """appendFuture.complete(null) / completeExceptionally(...) for every append the last step issued."""
    appends = list(d.appends)
    for append in appends:
        d.complete(append, error)
    return len(appends)


def create_classic_group(d: Driver, group_id: str = GROUP_ID) -> None:
    """context.createClassicGroup(groupId): an Empty group at generation 0 (see the module docstring)."""
    d.load([Record(GroupMetadataKey(group_id), GroupMetadataValue("", 0, None, None, d.now_ms, ()))])
    group = d.group(group_id)
    assert group.state == EMPTY and group.generation_id == 0 and not group.members


def expected_group_record(d: Driver, assignment: dict[str, bytes] | None = None, group_id: str = GROUP_ID) -> Record:
    """GroupCoordinatorRecordHelpers.newGroupMetadataRecord(group, assignment), from the group as it is now;
    without ``assignment`` it is group.groupAssignment() (each member's current assignment)."""
    group = d.group(group_id)
    members = []
    for m in group.members.values():
        subscription = next(p.metadata for p in m.protocols if p.name == group.protocol_name)
        members.append(MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=subscription,
            assignment=m.assignment if assignment is None else assignment[m.member_id],
        ))
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.state_timestamp_ms if group.state_timestamp_ms is not None else -1,
        members=tuple(members),
    )
    return Record(GroupMetadataKey(group_id), value)


def empty_group_record(d: Driver, generation: int, group_id: str = GROUP_ID) -> Record:
    """The record verifySessionExpiration expects once the last member is gone."""
    value = GroupMetadataValue(protocol_type="consumer", generation=generation, protocol=None, leader=None,
                               current_state_timestamp=d.now_ms, members=())
    return Record(GroupMetadataKey(group_id), value)


def session_deadline(d: Driver, member_id: str, group_id: str = GROUP_ID) -> int | None:
    """When classicGroupHeartbeatKey(group, member) fires (None: not scheduled)."""
    return d.coordinator.timers.deadline(session_key(group_id, member_id))


def sync_deadline(d: Driver, group_id: str = GROUP_ID) -> int | None:
    """When classicGroupSyncKey(group) fires (None: not scheduled)."""
    return d.coordinator.timers.deadline(sync_key(group_id))


def join_deadline(d: Driver, group_id: str = GROUP_ID) -> int | None:
    """When classicGroupJoinKey(group) fires (None: not scheduled)."""
    return d.coordinator.timers.deadline(join_key(group_id))


def assert_no_or_empty_result(records: list[Record]) -> None:
    """assertNoOrEmptyResult(context.sleep(...)): no expired timeout wrote anything."""
    assert records == []


def join_dynamic_and_complete_join(d: Driver, *, group_id: str = GROUP_ID, session_timeout_ms: int = 500,
                                   rebalance_timeout_ms: int = 500, protocol_names=("range",)) -> JoinGroupResponse:
    """joinClassicGroupAsDynamicMemberAndCompleteJoin: v4 MEMBER_ID_REQUIRED round, second join, initial delay."""
    kw = dict(version=4, group_id=group_id, session_timeout_ms=session_timeout_ms,
              rebalance_timeout_ms=rebalance_timeout_ms, protocol_names=protocol_names)
    first = d.join("", **kw)
    assert first.records == []
    assert first.done and first.error == ErrorCode.MEMBER_ID_REQUIRED
    second = d.join(first.response.member_id, **kw)
    assert second.records == []
    d.sleep(INITIAL_DELAY_MS)
    assert second.done and second.error == ErrorCode.NONE
    return second.response


def join_dynamic_and_complete_rebalance(d: Driver, group_id: str = GROUP_ID) -> JoinGroupResponse:
    """joinClassicGroupAsDynamicMemberAndCompleteRebalance: one dynamic member, Stable at generation 1."""
    create_classic_group(d, group_id)
    leader = join_dynamic_and_complete_join(d, group_id=group_id, session_timeout_ms=5_000, rebalance_timeout_ms=10_000)
    assert leader.generation_id == 1
    assert d.group(group_id).state == COMPLETING
    sync = d.sync(leader.member_id, leader.generation_id, group_id=group_id)
    assert sync.records == [expected_group_record(d, group_id=group_id)]
    complete_appends(d)
    assert sync.done and sync.error == ErrorCode.NONE
    assert d.group(group_id).state == STABLE
    return leader


def join_static_and_complete_join(d: Driver, instance_id: str, *, group_id: str = GROUP_ID, session_timeout_ms: int = 500,
                                  rebalance_timeout_ms: int = 500, advance_clock_ms: int = INITIAL_DELAY_MS) -> JoinGroupResponse:
    """joinClassicGroupAndCompleteJoin(request with an instance id, true, true): one latest-version join, then a sleep."""
    join = d.join("", version=LATEST_JOIN, group_id=group_id, group_instance_id=instance_id,
                  session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms)
    d.sleep(advance_clock_ms)
    assert join.done and join.error == ErrorCode.NONE
    return join.response


def static_members_join_and_rebalance(d: Driver, *, group_id: str = GROUP_ID, leader_instance: str = "leader-instance-id",
                                      follower_instance: str = "follower-instance-id", rebalance_timeout_ms: int = 10_000,
                                      session_timeout_ms: int = 5_000) -> dict:
    """staticMembersJoinAndRebalance: two static members, Stable at generation 1, assignments [1] and [2].

    (tests/driver.py has a version of this helper, but it sends the instance id at v3, which the
    reference rejects as malformed; and it cannot complete appends by hand.)"""
    create_classic_group(d, group_id)
    kw = dict(version=STATIC_JOIN_V3_FLAGS, group_id=group_id, protocol_names=("range", "roundrobin"),
              rebalance_timeout_ms=rebalance_timeout_ms, session_timeout_ms=session_timeout_ms)
    leader_join = d.join("", group_instance_id=leader_instance, **kw)
    follower_join = d.join("", group_instance_id=follower_instance, **kw)
    assert leader_join.records == [] and follower_join.records == []
    assert not leader_join.done and not follower_join.done
    assert_no_or_empty_result(d.sleep(INITIAL_DELAY_MS))
    # Kafka's mock timer runs the extended initial delay at the end of the second 3 s sleep; the
    # reference runs it at its deadline, which is earlier when the rebalance timeout leaves less than
    # a whole delay to extend by (rebalance 5000: deadline 5000, Kafka completes at 6000). Stopping the
    # clock at that deadline keeps the join's completion at the end of the sleep, as in Kafka, so the
    # session and sync timers it arms are where Kafka's test expects them.
    deadline = join_deadline(d, group_id)
    assert deadline is not None and deadline - d.now_ms <= INITIAL_DELAY_MS
    assert_no_or_empty_result(d.sleep(deadline - d.now_ms))
    assert leader_join.done and follower_join.done
    assert leader_join.error == ErrorCode.NONE and follower_join.error == ErrorCode.NONE
    assert leader_join.response.generation_id == 1 and follower_join.response.generation_id == 1
    group = d.group(group_id)
    assert len(group.members) == 2 and group.generation_id == 1 and group.state == COMPLETING

    leader_id, follower_id = leader_join.response.member_id, follower_join.response.member_id
    assignment = {leader_id: b"\x01", follower_id: b"\x02"}
    leader_sync = d.sync(leader_id, 1, group_id=group_id, group_instance_id=leader_instance, assignments=assignment)
    assert leader_sync.records == [expected_group_record(d, assignment, group_id)]
    complete_appends(d)
    assert leader_sync.done and leader_sync.error == ErrorCode.NONE
    assert group.state == STABLE
    follower_sync = d.sync(follower_id, 1, group_id=group_id, group_instance_id=follower_instance)
    assert follower_sync.records == []
    assert follower_sync.done and follower_sync.error == ErrorCode.NONE
    assert group.state == STABLE
    assert len(group.members) == 2 and group.generation_id == 1
    return {"generation_id": 1, "leader_id": leader_id, "leader_assignment": leader_sync.response.assignment,
            "follower_id": follower_id, "follower_assignment": follower_sync.response.assignment}


def setup_group_with_pending_member(d: Driver, group_id: str = GROUP_ID) -> dict:
    """setupGroupWithPendingMember: leader and follower rejoined and parked in PreparingRebalance,
    plus one pending member (MEMBER_ID_REQUIRED, session 2500) that has not come back."""
    kw = dict(group_id=group_id, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
    leader = join_dynamic_and_complete_join(d, group_id=group_id, session_timeout_ms=5_000, rebalance_timeout_ms=10_000)
    leader_id = leader.member_id
    sync = d.sync(leader_id, leader.generation_id, group_id=group_id, assignments={leader_id: b""})
    assert sync.records == [expected_group_record(d, group_id=group_id)]
    complete_appends(d)
    assert sync.done and sync.error == ErrorCode.NONE

    follower_join = d.join("", version=3, **kw)
    assert follower_join.records == [] and not follower_join.done
    leader_join = d.join(leader_id, version=3, **kw)
    group = d.group(group_id)
    assert leader_join.records == []
    assert group.state == COMPLETING
    assert leader_join.done and follower_join.done
    assert leader_join.error == ErrorCode.NONE and follower_join.error == ErrorCode.NONE
    assert leader_join.response.generation_id == follower_join.response.generation_id
    assert leader_join.response.leader == leader_id and follower_join.response.leader == leader_id
    next_generation = leader_join.response.generation_id
    follower_id = follower_join.response.member_id

    sync = d.sync(leader_id, next_generation, group_id=group_id, assignments={leader_id: b""})
    assert sync.records == [expected_group_record(d, group_id=group_id)]
    complete_appends(d)
    assert sync.done and sync.error == ErrorCode.NONE
    assert group.state == STABLE

    leader_join = d.join(leader_id, version=3, **kw)
    assert leader_join.records == [] and not leader_join.done
    assert group.state == PREPARING

    pending_join = d.join("", version=4, group_id=group_id, rebalance_timeout_ms=10_000, session_timeout_ms=2_500)
    assert pending_join.records == []
    assert pending_join.done and pending_join.error == ErrorCode.MEMBER_ID_REQUIRED
    assert len(group.pending_members) == 1

    follower_join = d.join(follower_id, version=3, **kw)
    assert follower_join.records == [] and not follower_join.done
    assert group.state == PREPARING
    assert len(group.members) == 2 and len(group.pending_members) == 1
    return {"leader_id": leader_id, "follower_id": follower_id, "pending_member_response": pending_join.response}


def join_with_n_members(d: Driver, n: int, rebalance_timeout_ms: int, session_timeout_ms: int,
                        group_id: str = GROUP_ID) -> list[JoinGroupResponse]:
    """joinWithNMembers: n dynamic members (v4) join a new group; returns their join responses in order."""
    create_classic_group(d, group_id)
    kw = dict(version=4, group_id=group_id, rebalance_timeout_ms=rebalance_timeout_ms, session_timeout_ms=session_timeout_ms)
    member_ids = []
    for _ in range(n):
        first = d.join("", **kw)
        assert first.records == [] and first.done
        member_ids.append(first.response.member_id)
    second_joins = []
    for member_id in member_ids:
        join = d.join(member_id, **kw)
        assert join.records == [] and not join.done
        second_joins.append(join)
    assert_no_or_empty_result(d.sleep(INITIAL_DELAY_MS))
    assert not any(join.done for join in second_joins)
    # Kafka's mock timer runs the extended initial delay at the end of the rebalance-timeout sleep, so
    # the join completes at 3000 + rebalance (8000 for the callers' 5000) and the sync and session
    # timers start there. The reference runs it at its deadline (3000 + min(3000, 5000 - 3000) = 5000);
    # sleeping just to that deadline completes the join at the end of the sleep, as in Kafka, so the
    # callers' timings (half a rebalance timeout, then the other half) measure from the join's
    # completion as Kafka's do. (Sleeping the full 5000 would leave the clock at 8000 with the
    # pending-sync timer due at 10000, which the callers' first 2500 ms sleep would already pass.)
    deadline = join_deadline(d, group_id)
    assert deadline is not None and deadline - d.now_ms <= rebalance_timeout_ms
    assert_no_or_empty_result(d.sleep(deadline - d.now_ms))
    responses = []
    for join in second_joins:
        assert join.done and join.error == ErrorCode.NONE
        responses.append(join.response)
    group = d.group(group_id)
    assert len(group.members) == n
    assert group.state == COMPLETING
    return responses


def verify_session_expiration(d: Driver, timeout_ms: int, group_id: str = GROUP_ID) -> None:
    """verifySessionExpiration: after the sleep every member's heartbeat timer (and nothing else) has
    expired, the last expiry wrote the empty-group record, and the group is Empty."""
    group = d.group(group_id)
    end = d.now_ms + timeout_ms
    members = list(group.members)
    assert members
    for member_id in members:
        deadline = session_deadline(d, member_id, group_id)
        assert deadline is not None and deadline <= end
    for other in (join_deadline(d, group_id), sync_deadline(d, group_id)):
        assert other is None or other > end
    records = d.sleep(timeout_ms)
    assert all(session_deadline(d, member_id, group_id) is None for member_id in members)
    assert records == [empty_group_record(d, group.generation_id, group_id)]
    assert group.state == EMPTY
    assert len(group.members) == 0


def verify_heartbeat(d: Driver, join_response: JoinGroupResponse, expected: ErrorCode, group_id: str = GROUP_ID) -> None:
    """verifyHeartbeat: a heartbeat with the join response's member id and generation gets ``expected``
    (Kafka's thrown UnknownMemberIdException is the response code UNKNOWN_MEMBER_ID)."""
    heartbeat = d.heartbeat(join_response.member_id, join_response.generation_id, group_id=group_id)
    assert heartbeat.records == []
    assert heartbeat.error == expected


# -- testSyncGroupProtocolTypeAndNameWith -----------------------------------------------------


def sync_group_protocol_type_and_name_with(protocol_type, protocol_name, expected_error, expected_type, expected_name,
                                           *, sync_version: int | None = None) -> None:
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
    sync_group_protocol_type_and_name_with("protocolType", None, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None, None)


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent():
    """Kafka: GroupMetadataManagerTest.testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent"""
    sync_group_protocol_type_and_name_with(None, "protocolName", ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None, None)


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
    join = join_static_and_complete_join(d, "leader-instance-id")
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
    join = join_static_and_complete_join(d, "leader-instance-id")

    sync = d.sync(join.member_id, join.generation_id + 1)
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.ILLEGAL_GENERATION


def test_sync_group_as_leader_append_failure_transforms_error():
    """Kafka: GroupMetadataManagerTest.testSyncGroupAsLeaderAppendFailureTransformsError"""
    d = new_driver()
    create_classic_group(d)
    join = join_static_and_complete_join(d, "leader-instance-id")

    sync = d.sync(join.member_id, 1)
    assert not sync.done
    assert len(d.appends) == 1
    d.complete(d.appends[0], ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert sync.done
    assert sync.error == ErrorCode.NOT_COORDINATOR


# -- joins around a sync -----------------------------------------------------------------------


def rejoin_with_new_follower(d: Driver, leader: JoinGroupResponse, **timeouts) -> tuple[Pending, Pending]:
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
    leader = join_dynamic_and_complete_rebalance(d)
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
    leader = join_dynamic_and_complete_rebalance(d)
    group = d.group()
    leader_join, follower_join = rejoin_with_new_follower(d, leader, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
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
    leader = join_dynamic_and_complete_rebalance(d)
    group = d.group()
    leader_join, follower_join = rejoin_with_new_follower(d, leader, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
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
    leader = join_dynamic_and_complete_rebalance(d)
    group = d.group()
    leader_join, follower_join = rejoin_with_new_follower(d, leader, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
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
    assert sync.records == [expected_group_record(d, assignment)]

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
    leader = join_dynamic_and_complete_rebalance(d)

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
    leader = join_dynamic_and_complete_rebalance(d)

    join = d.join(leader.member_id, version=3)
    assert join.records == []
    assert join.done
    assert join.response.generation_id == 2
    assert join.error == ErrorCode.NONE


def test_sync_group_empty_assignment():
    """Kafka: GroupMetadataManagerTest.testSyncGroupEmptyAssignment"""
    d = new_driver()
    leader = join_dynamic_and_complete_rebalance(d)

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
    assert all(session_deadline(d, r.member_id) > d.now_ms + rebalance_timeout_ms // 2 for r in join_responses)
    records = d.sleep(rebalance_timeout_ms // 2)
    assert sync_deadline(d) is None
    assert records == [expected_group_record(d)]
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
    assert all(session_deadline(d, r.member_id) > d.now_ms + rebalance_timeout_ms // 2 for r in join_responses)
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
    assert all(session_deadline(d, r.member_id) > d.now_ms + rebalance_timeout_ms // 2 for r in join_responses)
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
            assert sync.records == [expected_group_record(d)]
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
