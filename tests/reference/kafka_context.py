"""Kafka's coordinator test helpers (GroupMetadataManagerTestContext and the private helpers of
GroupMetadataManagerTest), ported once for every test file that follows a Kafka test step by step.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/.

tests/reference/driver.py holds the Driver (requests with Kafka's test defaults), Pending, ``protocols`` and
``kafka_test_config``; this module holds what Kafka's tests build on top of their context:

* ``createClassicGroup`` (an Empty group at generation 0 held in memory, no record written) is
  reached by loading the empty GroupMetadata record Kafka writes when it creates a group: a real
  coordinator event, after which the first JoinGroup writes no "new group" record, as in Kafka.
* ``appendFuture.complete(null)`` / ``completeExceptionally(e)`` is ``complete_appends(d[, error])``.
  It answers the appends of the last step when the driver leaves them to the test
  (``Driver(complete_appends=False)``, ``new_driver()``) and does nothing when the driver
  completes them itself, so helpers that write work with either driver.
* Kafka's JoinGroup helpers pick a request version for its flags only: ``sendClassicGroupJoin``
  = v3, ``(request, true)`` = v4, ``(request, true, true)`` = latest. The wire carries a group
  instance id from v5 only, so a static member sent with Kafka's v3 flags goes at a version that
  behaves as v3 for it (requireKnownMemberId does not apply to static members, skip-assignment
  starts at v9). Two choices are in use: ``STATIC_V3`` = v7, the first version whose response
  carries the protocol type Kafka's expected responses contain (test_join.py,
  test_static_membership.py), and ``STATIC_JOIN_V3_FLAGS`` = v5, the lowest version that carries
  an instance id (test_sync.py, test_heartbeat.py, test_leave.py).
* Kafka's mock timer moves the clock to the end of a sleep and then runs every due timer at that
  time; the reference runs each timer at its own deadline. Where a helper's timings depend on it,
  a comment says how the port keeps Kafka's.
"""

from __future__ import annotations

from dataclasses import dataclass

from driver import GROUP_ID, LATEST, Driver, Pending, kafka_test_config

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.rebalance import join_key, session_key, sync_key
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    Record,
)
from coordspec.reference.group.responses import JoinGroupMember, JoinGroupResponse
from coordspec.reference.group.transitions import COMPLETING, EMPTY, PREPARING, STABLE, GroupState

INITIAL_DELAY_MS = 3_000  # GroupMetadataManagerTestContext's classicGroupInitialRebalanceDelayMs
LATEST_JOIN = LATEST["JoinGroup"]
STATIC_V3 = (
    7  # a static member's "v3" JoinGroup, for tests that compare whole responses (module docstring)
)
STATIC_JOIN_V3_FLAGS = (
    5  # a static member's "v3" JoinGroup, the first version with an instance id (docstring)
)
LEADER_INSTANCE_ID = "leader-instance-id"
FOLLOWER_INSTANCE_ID = "follower-instance-id"


@dataclass
class RebalanceResult:
    """Kafka's RebalanceResult, as staticMembersJoinAndRebalance returns it."""

    generation_id: int
    leader_id: str
    leader_assignment: bytes
    follower_id: str
    follower_assignment: bytes


@dataclass
class PendingMemberGroupResult:
    """Kafka's PendingMemberGroupResult, as setupGroupWithPendingMember returns it."""

    leader_id: str
    follower_id: str
    pending_member_response: JoinGroupResponse


# -- the context --------------------------------------------------------------------------------


def new_driver(**config) -> Driver:
    """new GroupMetadataManagerTestContext.Builder().build(): appends complete only by hand."""
    return Driver(kafka_test_config(**config), complete_appends=False)


def complete_appends(d: Driver, error: ErrorCode = ErrorCode.NONE) -> int:
    """appendFuture.complete(null) / completeExceptionally(error) for every append of the last step."""
    if d.coordinator.complete_appends:  # the driver has completed them already
        return 0
    appends = list(d.appends)
    for append in appends:
        d.complete(append, error)
    return len(appends)


def create_classic_group(d: Driver, group_id: str = GROUP_ID):
    """GroupMetadataManagerTestContext.createClassicGroup(groupId): an Empty group at generation 0."""
    d.load(
        [Record(GroupMetadataKey(group_id), GroupMetadataValue("", 0, None, None, d.now_ms, ()))]
    )
    group = d.group(group_id)
    assert group.state == EMPTY and not group.members and group.generation_id == 0
    return group


def assert_no_or_empty_result(records: list[Record]) -> None:
    """Kafka's assertNoOrEmptyResult(context.sleep(...)): the expired timeouts wrote nothing."""
    assert records == []


# -- timers ---------------------------------------------------------------------------------------


def session_deadline(d: Driver, member_id: str, group_id: str = GROUP_ID) -> int | None:
    """When Kafka's classicGroupHeartbeatKey(groupId, memberId) timer fires (None: not scheduled)."""
    return d.coordinator.timers.deadline(session_key(group_id, member_id))


def sync_deadline(d: Driver, group_id: str = GROUP_ID) -> int | None:
    """When Kafka's classicGroupSyncKey(groupId) timer fires (None: not scheduled)."""
    return d.coordinator.timers.deadline(sync_key(group_id))


def join_deadline(d: Driver, group_id: str = GROUP_ID) -> int | None:
    """When Kafka's classicGroupJoinKey(groupId) timer fires (None: not scheduled)."""
    return d.coordinator.timers.deadline(join_key(group_id))


def due_timers(d: Driver, ms: int) -> set:
    """The keys of the ExpiredTimeouts GroupMetadataManagerTestContext.sleep(ms) would return (group timers only)."""
    deadline = d.now_ms + ms
    live = d.coordinator.timers._live
    return {key for key, (at, *_) in live.items() if at <= deadline and key[0] != "ExpireOffsets"}


# -- records and responses ------------------------------------------------------------------------


def metadata_of(protos, name: str) -> bytes:
    """ClassicGroupMember.metadata(protocolName): the metadata of the named protocol."""
    return next(p.metadata for p in protos if p.name == name)


def new_group_metadata_record(group, assignment: dict[str, bytes] | None = None) -> Record:
    """GroupCoordinatorRecordHelpers.newGroupMetadataRecord(group, assignment), default group.groupAssignment()."""
    members = tuple(
        MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=metadata_of(m.protocols, group.protocol_name),
            assignment=m.assignment if assignment is None else assignment[m.member_id],
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.state_timestamp_ms
        if group.state_timestamp_ms is not None
        else -1,
        members=members,
    )
    return Record(GroupMetadataKey(group.group_id), value)


def empty_group_record(
    group_id: str, generation: int, timestamp: int, protocol_type: str = "consumer"
) -> Record:
    """GroupCoordinatorRecordHelpers.newGroupMetadataRecord of a group without members (protocol and leader null)."""
    value = GroupMetadataValue(protocol_type, generation, None, None, timestamp, ())
    return Record(GroupMetadataKey(group_id), value)


def offset_tombstone(group: str, topic: str, partition: int) -> Record:
    """GroupCoordinatorRecordHelpers.newOffsetCommitTombstoneRecord(groupId, topic, partition)."""
    return Record(OffsetCommitKey(group, topic, partition), None)


def group_tombstone(group: str) -> Record:
    """GroupCoordinatorRecordHelpers.newGroupMetadataTombstoneRecord(groupId)."""
    return Record(GroupMetadataKey(group), None)


def join_response_members(group) -> tuple[JoinGroupMember, ...]:
    """Kafka's toJoinResponseMembers(group): every member with its selected protocol's metadata."""
    return tuple(
        JoinGroupMember(
            m.member_id, m.group_instance_id, metadata_of(m.protocols, group.protocol_name)
        )
        for m in group.members.values()
    )


def check_join_response(
    expected: JoinGroupResponse, join: Pending, group, state: GroupState, instance_ids: set[str]
) -> None:
    """Kafka's checkJoinGroupResponse: full equality, the group's state, the instance ids listed."""
    assert join.done
    assert join.response == expected.at_version(join.request.api_version)
    assert group.state == state
    assert {m.group_instance_id for m in join.response.members} == instance_ids


def verify_join_responses(
    joins: list[Pending], expected_success: int, expected_failure: ErrorCode
) -> list[str]:
    """Kafka's verifyClassicGroupJoinResponses: every join answered; the failures all carry one error."""
    assert all(j.done for j in joins)
    assert sum(1 for j in joins if j.error == ErrorCode.NONE) == expected_success
    assert all(j.error in (ErrorCode.NONE, expected_failure) for j in joins)
    return [j.response.member_id for j in joins]


# -- joining and rebalancing ----------------------------------------------------------------------


def join_and_complete_join(
    d: Driver, *, version: int, advance_ms: int = INITIAL_DELAY_MS, **fields
) -> Pending:
    """GroupMetadataManagerTestContext.joinClassicGroupAndCompleteJoin: one join, then sleep ``advance_ms``."""
    join = d.join(version=version, **fields)
    d.sleep(advance_ms)
    assert join.done and join.error == ErrorCode.NONE
    return join


def join_dynamic_and_complete_join(
    d: Driver,
    *,
    group_id: str = GROUP_ID,
    session_timeout_ms: int = 500,
    rebalance_timeout_ms: int = 500,
    protocol_names=("range",),
    check_records: bool = True,
) -> Pending:
    """GroupMetadataManagerTestContext.joinClassicGroupAsDynamicMemberAndCompleteJoin: two v4 joins, initial delay."""
    # ``check_records=False`` for a group that does not exist yet: the first join writes its creation record.
    kw = dict(
        version=4,
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        protocol_names=protocol_names,
    )
    first = d.join("", **kw)
    if check_records:
        assert first.records == []
    assert first.done and first.error == ErrorCode.MEMBER_ID_REQUIRED
    second = d.join(first.response.member_id, **kw)
    if check_records:
        assert second.records == []
    assert not second.done
    d.sleep(d.coordinator.config.initial_rebalance_delay_ms)
    assert second.done and second.error == ErrorCode.NONE
    return second


def join_dynamic_and_complete_rebalance(
    d: Driver, group_id: str = GROUP_ID, *, create_group: bool = True
) -> Pending:
    """GroupMetadataManagerTestContext.joinClassicGroupAsDynamicMemberAndCompleteRebalance: one member, Stable."""
    # Kafka's helper creates the group first; ``create_group=False`` lets the first join create it
    # (and write its creation record), for tests that reach every group through requests.
    if create_group:
        create_classic_group(d, group_id)
    join = join_dynamic_and_complete_join(
        d,
        group_id=group_id,
        session_timeout_ms=5_000,
        rebalance_timeout_ms=10_000,
        check_records=create_group,
    )
    assert join.response.generation_id == 1
    assert d.group(group_id).state == COMPLETING
    sync = d.sync(join.response.member_id, 1, group_id=group_id)
    assert sync.records == [new_group_metadata_record(d.group(group_id))]
    complete_appends(d)
    assert sync.done and sync.error == ErrorCode.NONE
    assert d.group(group_id).state == STABLE
    return join


def force_stable(
    d: Driver, leader_id: str, generation: int, group_instance_id: str | None = None
) -> None:
    """ClassicGroup.transitionTo(STABLE): reached here with the leader's SyncGroup (no assignment)."""
    sync = d.sync(leader_id, generation, group_instance_id=group_instance_id)
    complete_appends(d)
    assert sync.error == ErrorCode.NONE
    assert d.group().state == STABLE


def static_members_join_and_rebalance(
    d: Driver,
    *,
    version: int = STATIC_V3,
    group_id: str = GROUP_ID,
    leader_instance: str = LEADER_INSTANCE_ID,
    follower_instance: str = FOLLOWER_INSTANCE_ID,
    rebalance_timeout_ms: int = 10_000,
    session_timeout_ms: int = 5_000,
) -> RebalanceResult:
    """GroupMetadataManagerTestContext.staticMembersJoinAndRebalance: two static members, Stable at generation 1."""
    group = create_classic_group(d, group_id)
    kw = dict(
        version=version,
        group_id=group_id,
        protocol_names=("range", "roundrobin"),
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_timeout_ms=session_timeout_ms,
    )
    leader_join = d.join("", group_instance_id=leader_instance, **kw)
    follower_join = d.join("", group_instance_id=follower_instance, **kw)
    assert leader_join.records == [] and follower_join.records == []
    assert not leader_join.done and not follower_join.done
    # The first delayed join is extended (a member joined meanwhile), the second completes it.
    delay_ms = d.coordinator.config.initial_rebalance_delay_ms
    assert_no_or_empty_result(d.sleep(delay_ms))
    # Kafka's mock timer runs the extended initial delay at the end of the second 3 s sleep; the
    # reference runs it at its deadline, which is earlier when the rebalance timeout leaves less than
    # a whole delay to extend by (rebalance 5000: deadline 5000, Kafka completes at 6000). Stopping the
    # clock at that deadline keeps the join's completion at the end of the sleep, as in Kafka, so the
    # session and sync timers it arms are where Kafka's test expects them.
    deadline = join_deadline(d, group_id)
    assert deadline is not None and deadline - d.now_ms <= delay_ms
    assert_no_or_empty_result(d.sleep(deadline - d.now_ms))
    assert leader_join.done and follower_join.done
    assert leader_join.error == ErrorCode.NONE and follower_join.error == ErrorCode.NONE
    assert leader_join.response.generation_id == 1 and follower_join.response.generation_id == 1
    assert len(group.members) == 2 and group.generation_id == 1 and group.state == COMPLETING

    leader_id, follower_id = leader_join.response.member_id, follower_join.response.member_id
    assignment = {leader_id: b"\x01", follower_id: b"\x02"}
    leader_sync = d.sync(
        leader_id, 1, group_id=group_id, group_instance_id=leader_instance, assignments=assignment
    )
    assert leader_sync.records == [new_group_metadata_record(group, assignment)]
    complete_appends(d)
    # The group holds the new assignment (the record above carried it).
    assert [m.assignment for m in group.members.values()] == [assignment[m] for m in group.members]
    assert leader_sync.done and leader_sync.error == ErrorCode.NONE
    assert group.state == STABLE
    follower_sync = d.sync(follower_id, 1, group_id=group_id, group_instance_id=follower_instance)
    assert follower_sync.records == []
    assert follower_sync.done and follower_sync.error == ErrorCode.NONE
    assert group.state == STABLE
    assert len(group.members) == 2 and group.generation_id == 1
    return RebalanceResult(
        1,
        leader_id,
        leader_sync.response.assignment,
        follower_id,
        follower_sync.response.assignment,
    )


def setup_group_with_pending_member(
    d: Driver, group_id: str = GROUP_ID
) -> PendingMemberGroupResult:
    """GroupMetadataManagerTestContext.setupGroupWithPendingMember: two members in PreparingRebalance, one pending."""
    # The leader and follower have rejoined and are parked; the pending member (MEMBER_ID_REQUIRED,
    # session 2500) has not come back.
    kw = dict(group_id=group_id, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)
    leader = join_dynamic_and_complete_join(
        d, group_id=group_id, session_timeout_ms=5_000, rebalance_timeout_ms=10_000
    ).response
    leader_id = leader.member_id
    sync = d.sync(leader_id, leader.generation_id, group_id=group_id, assignments={leader_id: b""})
    assert sync.records == [new_group_metadata_record(d.group(group_id))]
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
    assert sync.records == [new_group_metadata_record(group)]
    complete_appends(d)
    assert sync.done and sync.error == ErrorCode.NONE
    assert group.state == STABLE

    leader_join = d.join(leader_id, version=3, **kw)
    assert leader_join.records == [] and not leader_join.done
    assert group.state == PREPARING

    pending_join = d.join(
        "", version=4, group_id=group_id, rebalance_timeout_ms=10_000, session_timeout_ms=2_500
    )
    assert pending_join.records == []
    assert pending_join.done and pending_join.error == ErrorCode.MEMBER_ID_REQUIRED
    assert len(group.pending_members) == 1

    follower_join = d.join(follower_id, version=3, **kw)
    assert follower_join.records == [] and not follower_join.done
    assert group.state == PREPARING
    assert len(group.members) == 2 and len(group.pending_members) == 1
    return PendingMemberGroupResult(leader_id, follower_id, pending_join.response)


def join_with_n_members(
    d: Driver, n: int, rebalance_timeout_ms: int, session_timeout_ms: int, group_id: str = GROUP_ID
) -> list[JoinGroupResponse]:
    """GroupMetadataManagerTestContext.joinWithNMembers: n dynamic members (v4) join a new group; their responses."""
    create_classic_group(d, group_id)
    kw = dict(
        version=4,
        group_id=group_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_timeout_ms=session_timeout_ms,
    )
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


# -- verifications --------------------------------------------------------------------------------


def verify_session_expiration(d: Driver, timeout_ms: int, group_id: str = GROUP_ID) -> None:
    """GroupMetadataManagerTestContext.verifySessionExpiration: every member's session expires; the group is Empty."""
    # Only the members' heartbeat timers expire in the sleep, and the last expiry writes the
    # empty-group record.
    group = d.group(group_id)
    end = d.now_ms + timeout_ms
    members = list(group.members)
    assert members
    assert due_timers(d, timeout_ms) == {session_key(group_id, member_id) for member_id in members}
    for member_id in members:
        deadline = session_deadline(d, member_id, group_id)
        assert deadline is not None and deadline <= end
    for other in (join_deadline(d, group_id), sync_deadline(d, group_id)):
        assert other is None or other > end
    records = d.sleep(timeout_ms)
    assert all(session_deadline(d, member_id, group_id) is None for member_id in members)
    assert records == [empty_group_record(group_id, group.generation_id, d.now_ms)]
    assert group.state == EMPTY
    assert not group.members


def verify_heartbeat(
    d: Driver, join_response: JoinGroupResponse, expected: ErrorCode, group_id: str = GROUP_ID
) -> None:
    """GroupMetadataManagerTestContext.verifyHeartbeat: a heartbeat as the join's member gets ``expected``."""
    # Kafka's thrown UnknownMemberIdException is the response code UNKNOWN_MEMBER_ID here.
    heartbeat = d.heartbeat(join_response.member_id, join_response.generation_id, group_id=group_id)
    assert heartbeat.records == []
    assert heartbeat.error == expected
