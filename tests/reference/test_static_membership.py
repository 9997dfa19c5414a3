"""Kafka's classic-group static membership tests (GroupMetadataManagerTest), ported to the reference.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java.

Porting conventions (as in test_join.py):

* Kafka's ``sendClassicGroupJoin(request)`` is JoinGroup v3, ``(request, true)`` v4 and
  ``(request, true, true)`` the latest version. Kafka's harness puts the group instance id
  in "v3"/"v4" request objects, which the wire only carries from v5 (the reference refuses
  it below v5). Those joins are sent at ``STATIC_V3`` = v7: for a member with an instance
  id (or a known member id) v4..v8 behave as v3 (the v4 member-id round trip only concerns
  new dynamic members, skip-assignment starts at v9), and v7 is the first version whose
  response carries the protocol type that Kafka's expected responses contain.
* Expected JoinGroup responses are Kafka's JoinGroupResponseData values, passed through
  ``at_version`` of the request's version (a no-op from v7 on).
* ``createClassicGroup`` is reached by loading an empty GroupMetadata record; Kafka's
  ``group.transitionTo(STABLE)`` by the leader's SyncGroup; DEAD by unloading the partition.
* Kafka's test helpers (``staticMembersJoinAndRebalance``, ``joinClassicGroupAndCompleteJoin``,
  ``checkJoinGroupResponse``, ...) are in tests/reference/kafka_context.py;
  ``static_members_join_and_rebalance`` sends its JoinGroups at ``STATIC_V3`` by default.
"""

from __future__ import annotations

import pytest
from driver import Driver, protocols
from kafka_context import (
    FOLLOWER_INSTANCE_ID as FOLLOWER,
)
from kafka_context import (
    LATEST_JOIN,
    STATIC_V3,
    check_join_response,
    complete_appends,
    create_classic_group,
    force_stable,
    join_and_complete_join,
    join_response_members,
    metadata_of,
    new_group_metadata_record,
    static_members_join_and_rebalance,
)
from kafka_context import (
    LEADER_INSTANCE_ID as LEADER,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import GroupState
from coordspec.reference.group.responses import JoinGroupMember, JoinGroupResponse

# -- tests -------------------------------------------------------------------------------------


def test_static_member_join_as_first_member():
    """Kafka: GroupMetadataManagerTest.testStaticMemberJoinAsFirstMember"""
    d = Driver()
    create_classic_group(d)
    join_and_complete_join(
        d, version=STATIC_V3, member_id="", group_instance_id="group-instance-id"
    )


def test_static_member_rejoin_with_explicit_unknown_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithExplicitUnknownMemberId"""
    d = Driver()
    create_classic_group(d)
    kw = dict(
        group_instance_id="group-instance-id", session_timeout_ms=5_000, rebalance_timeout_ms=5_000
    )
    join_and_complete_join(d, version=STATIC_V3, member_id="", **kw)

    join = d.join("unknown-member-id", version=STATIC_V3, **kw)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.FENCED_INSTANCE_ID


def test_join_group_replace_static_member():
    """Kafka: GroupMetadataManagerTest.testJoinGroupReplaceStaticMember"""
    d = Driver()
    group = create_classic_group(d)
    kw = dict(version=STATIC_V3, group_instance_id="group-instance-id", session_timeout_ms=5_000)

    old = d.join("", **kw)
    assert old.records == []
    assert not old.done
    assert sum(1 for m in group.members.values() if m.awaiting_join) == 1
    assert len(group.members) == 1

    # The same instance joins with an unknown member id: the old member id is fenced.
    new = d.join("", **kw)
    assert new.records == []
    assert not new.done
    assert old.done
    assert old.error == ErrorCode.FENCED_INSTANCE_ID
    assert sum(1 for m in group.members.values() if m.awaiting_join) == 1
    assert len(group.members) == 1

    assert d.sleep(3_000) == []
    assert new.done
    assert new.error == ErrorCode.NONE
    assert sum(1 for m in group.members.values() if m.awaiting_join) == 0
    assert len(group.members) == 1


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_replace_static_member_in_stable_state_no_error(support_skipping_assignment):
    """Kafka: GroupMetadataManagerTest.testReplaceStaticMemberInStableStateNoError"""
    d = Driver(complete_appends=False)
    group = create_classic_group(d)
    version = LATEST_JOIN if support_skipping_assignment else STATIC_V3
    response = join_and_complete_join(
        d,
        version=version,
        member_id="",
        group_instance_id="group-instance-id",
        protocol_names=("range",),
    )
    old_member_id = response.response.member_id
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.COMPLETING_REBALANCE

    force_stable(d, old_member_id, 1, "group-instance-id")

    # The static member rejoins with an unknown member id: the new id is written to the log.
    new_protocols = protocols("range", "roundrobin")
    join = d.join(
        "",
        version=version,
        group_instance_id="group-instance-id",
        protocols=new_protocols,
        rebalance_timeout_ms=7_000,
        session_timeout_ms=4_500,
    )
    assert join.records == [new_group_metadata_record(group)]
    assert not join.done

    complete_appends(d)  # the write succeeds
    assert join.done

    new_member_id = group.static_members["group-instance-id"]
    if support_skipping_assignment:
        expected = JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader=new_member_id,
            skip_assignment=True,
            member_id=new_member_id,
            members=(
                JoinGroupMember(
                    new_member_id, "group-instance-id", metadata_of(new_protocols, "range")
                ),
            ),
        )
    else:
        expected = JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader=old_member_id,
            skip_assignment=False,
            member_id=new_member_id,
            members=(),
        )
    assert join.response == expected.at_version(version)

    updated = group.members[new_member_id]
    assert updated.member_id == new_member_id
    assert updated.group_instance_id == "group-instance-id"
    assert updated.rebalance_timeout_ms == 7_000
    assert updated.session_timeout_ms == 4_500
    assert updated.protocols == new_protocols
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.STABLE


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance():
    """Kafka: GroupMetadataManagerTest.testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance"""
    d = Driver()
    group = create_classic_group(d)
    response = join_and_complete_join(
        d,
        version=LATEST_JOIN,
        member_id="",
        group_instance_id="group-instance-id",
        protocol_names=("range", "roundrobin"),
    )
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.COMPLETING_REBALANCE

    force_stable(d, response.response.member_id, 1, "group-instance-id")

    # The selected protocol changes: a rebalance, which the sole member completes at once.
    join = d.join(
        "", version=STATIC_V3, group_instance_id="group-instance-id", protocol_names=("roundrobin",)
    )
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert len(group.members) == 1
    assert group.generation_id == 2
    assert group.state == GroupState.COMPLETING_REBALANCE


def test_replace_static_member_in_stable_state_errors():
    """Kafka: GroupMetadataManagerTest.testReplaceStaticMemberInStableStateErrors"""
    d = Driver(complete_appends=False)
    group = create_classic_group(d)
    response = join_and_complete_join(
        d,
        version=STATIC_V3,
        member_id="",
        group_instance_id="group-instance-id",
        protocol_names=("range",),
        rebalance_timeout_ms=4_000,
        session_timeout_ms=3_000,
    )
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.COMPLETING_REBALANCE
    old_member_id = response.response.member_id

    force_stable(d, old_member_id, 1, "group-instance-id")

    # The static member rejoins with an unknown member id but the append fails.
    join = d.join(
        "",
        version=STATIC_V3,
        group_instance_id="group-instance-id",
        protocols=protocols("range", "roundrobin"),  # roundrobin subscribes to "bar", as in Kafka
        rebalance_timeout_ms=7_000,
        session_timeout_ms=6_000,
    )
    assert join.records == [new_group_metadata_record(group)]
    assert not join.done

    complete_appends(d, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)  # a failed write
    assert join.done
    expected = JoinGroupResponse(
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=old_member_id,
        skip_assignment=False,
        member_id="",
        members=(),
    )
    assert join.response == expected.at_version(STATIC_V3)

    reverted = group.members[group.static_members["group-instance-id"]]
    assert reverted.member_id == old_member_id
    assert reverted.group_instance_id == "group-instance-id"
    assert reverted.rebalance_timeout_ms == 4_000
    assert reverted.session_timeout_ms == 3_000
    # Kafka compares with the very collection object it extended (an aliasing artifact of its test);
    # the member's protocols before the failed rejoin were [range].
    assert reverted.protocols == protocols("range")
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.STABLE


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_replace_static_member_in_stable_state_succeeds(support_skipping_assignment):
    """Kafka: GroupMetadataManagerTest.testReplaceStaticMemberInStableStateSucceeds"""
    d = Driver(complete_appends=False)
    group = create_classic_group(d)
    version = LATEST_JOIN if support_skipping_assignment else STATIC_V3
    response = join_and_complete_join(
        d,
        version=version,
        member_id="",
        group_instance_id="group-instance-id",
        protocol_names=("range",),
    )
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.COMPLETING_REBALANCE
    old_member_id = response.response.member_id

    force_stable(d, old_member_id, 1, "group-instance-id")

    join = d.join(
        "",
        version=version,
        group_instance_id="group-instance-id",
        protocol_names=("range", "roundrobin"),
        rebalance_timeout_ms=7_000,
        session_timeout_ms=6_000,
    )
    assert join.records == [new_group_metadata_record(group)]
    assert not join.done

    complete_appends(d)  # the write succeeds
    assert join.done
    new_member_id = join.response.member_id
    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=new_member_id if support_skipping_assignment else old_member_id,
        skip_assignment=support_skipping_assignment,
        member_id=new_member_id,
        members=join_response_members(group) if support_skipping_assignment else (),
    )
    assert join.response == expected.at_version(version)

    new_member = group.members[group.static_members["group-instance-id"]]
    assert new_member.member_id != old_member_id
    assert new_member.group_instance_id == "group-instance-id"
    assert new_member.rebalance_timeout_ms == 7_000
    assert new_member.session_timeout_ms == 6_000
    assert new_member.protocols == protocols("range", "roundrobin")
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.STABLE


def test_replace_static_member_in_completing_rebalance_state_triggers_rebalance():
    """Kafka: GroupMetadataManagerTest.testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance"""
    d = Driver()
    group = create_classic_group(d)
    join_and_complete_join(
        d, version=LATEST_JOIN, member_id="", group_instance_id="group-instance-id"
    )
    assert len(group.members) == 1
    assert group.generation_id == 1
    assert group.state == GroupState.COMPLETING_REBALANCE

    # The static member rejoins with an unknown member id and triggers a rebalance.
    join = d.join("", version=STATIC_V3, group_instance_id="group-instance-id")
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert len(group.members) == 1
    assert group.generation_id == 2
    assert group.state == GroupState.COMPLETING_REBALANCE


def test_static_member_fence_duplicate_rejoined_follower():
    """Kafka: GroupMetadataManagerTest.testStaticMemberFenceDuplicateRejoinedFollower"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    # A third member joins: a rebalance.
    d.join("", protocol_names=("range",))
    assert group.state == GroupState.PREPARING_REBALANCE

    # The old follower rejoins, matching the current member id.
    old_follower = d.join(
        rr.follower_id, version=STATIC_V3, group_instance_id=FOLLOWER, protocol_names=("range",)
    )
    assert old_follower.records == []
    assert not old_follower.done

    # A duplicate follower joins with an unknown member id: the member id is replaced.
    d.join("", version=STATIC_V3, group_instance_id=FOLLOWER, protocol_names=("range",))

    # The old member is fenced at once.
    assert old_follower.done
    expected = JoinGroupResponse(
        ErrorCode.FENCED_INSTANCE_ID,
        generation_id=-1,
        protocol_type=None,
        protocol_name=None,
        leader="",
        member_id=rr.follower_id,
    )
    check_join_response(expected, old_follower, group, GroupState.PREPARING_REBALANCE, set())


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed():
    """Kafka: GroupMetadataManagerTest.testStaticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()
    # Kafka's request builder: session timeout 500 unless set.
    kw = dict(
        version=STATIC_V3, protocol_names=("range", "roundrobin"), rebalance_timeout_ms=10_000
    )

    # The known leader rejoins: a rebalance.
    leader = d.join(rr.leader_id, group_instance_id=LEADER, **kw)
    assert leader.records == []
    assert not leader.done
    assert group.state == GroupState.PREPARING_REBALANCE

    # The old follower rejoins with its current member id.
    old_follower = d.join(rr.follower_id, group_instance_id=FOLLOWER, **kw)
    assert old_follower.records == []
    assert old_follower.done
    assert leader.done

    expected_leader = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        member_id=rr.leader_id,
        members=join_response_members(group),
    )
    check_join_response(
        expected_leader, leader, group, GroupState.COMPLETING_REBALANCE, {LEADER, FOLLOWER}
    )
    assert leader.response.member_id == rr.leader_id
    assert leader.response.leader == rr.leader_id

    expected_follower = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        member_id=old_follower.response.member_id,
    )
    check_join_response(
        expected_follower, old_follower, group, GroupState.COMPLETING_REBALANCE, set()
    )
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert old_follower.response.member_id == rr.follower_id
    assert old_follower.response.leader == rr.leader_id

    # The old follower syncs and waits for the leader's assignment.
    old_follower_sync = d.sync(
        old_follower.response.member_id,
        old_follower.response.generation_id,
        group_instance_id=FOLLOWER,
    )
    assert old_follower_sync.records == []
    assert not old_follower_sync.done

    # A duplicate follower joins with an unknown member id: the member id is replaced and, in
    # CompletingRebalance, a rebalance starts; the old follower's SyncGroup is fenced.
    duplicate = d.join("", group_instance_id=FOLLOWER, **kw)
    assert duplicate.records == []
    assert group.state == GroupState.PREPARING_REBALANCE
    assert not duplicate.done
    assert old_follower_sync.done
    assert old_follower_sync.error == ErrorCode.FENCED_INSTANCE_ID

    # Kafka's mock timer ...: Kafka sleeps the rebalance timeout (10000) and then runs every due
    # timer with the clock at the end: the leader's session (500 ms, from its rejoin) expires, the
    # leader is removed and the join phase completes with the duplicate follower, whose session
    # is re-armed from the end of the sleep, after it. Here timers fire at their deadlines: the
    # leader's session expires 500 ms on and completes the join phase, and the duplicate
    # follower's re-armed 500 ms session would expire inside a 10000 ms sleep (it has not synced).
    # Sleep to the leader's session expiry, where Kafka's test checks the outcome.
    assert d.sleep(500) == []  # timeouts without records (Kafka: EMPTY_RESULT)

    assert duplicate.done
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 3
    assert len(group.members) == 1
    assert duplicate.response.member_id in group.members
    assert duplicate.response.member_id == duplicate.response.leader


def test_static_member_fence_duplicate_rejoining_follower_after_member_id_changed():
    """Kafka: GroupMetadataManagerTest.testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()
    kw = dict(version=STATIC_V3, protocol_names=("range",), rebalance_timeout_ms=10_000)

    # The known leader rejoins: a rebalance.
    leader = d.join(rr.leader_id, group_instance_id=LEADER, **kw)
    assert leader.records == []
    assert not leader.done
    assert group.state == GroupState.PREPARING_REBALANCE

    # A duplicate follower joins: the member id is replaced.
    duplicate = d.join("", group_instance_id=FOLLOWER, **kw)
    assert duplicate.records == []
    assert duplicate.done

    # The old follower rejoins and fails: its member id was replaced.
    old_follower = d.join(rr.follower_id, group_instance_id=FOLLOWER, **kw)
    assert old_follower.records == []
    assert old_follower.done
    assert leader.done

    expected_leader = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        member_id=rr.leader_id,
        members=join_response_members(group),
    )
    check_join_response(
        expected_leader, leader, group, GroupState.COMPLETING_REBALANCE, {LEADER, FOLLOWER}
    )

    expected_duplicate = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        member_id=duplicate.response.member_id,
        members=(),
    )
    check_join_response(
        expected_duplicate, duplicate, group, GroupState.COMPLETING_REBALANCE, set()
    )

    expected_old_follower = JoinGroupResponse(
        ErrorCode.FENCED_INSTANCE_ID,
        generation_id=-1,
        protocol_type=None,
        protocol_name=None,
        leader="",
        member_id=rr.follower_id,
        members=(),
    )
    check_join_response(
        expected_old_follower, old_follower, group, GroupState.COMPLETING_REBALANCE, set()
    )


def test_static_member_rejoin_with_known_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithKnownMemberId"""
    d = Driver(complete_appends=False)
    group = create_classic_group(d)
    join = join_and_complete_join(
        d, version=STATIC_V3, member_id="", group_instance_id="group-instance-id"
    )
    member_id = join.response.member_id

    # Same metadata in CompletingRebalance: the join returns at once.
    rejoin = d.join(member_id, version=STATIC_V3, group_instance_id="group-instance-id")
    assert rejoin.records == []
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert rejoin.done
    assert rejoin.error == ErrorCode.NONE

    sync = d.sync(member_id, join.response.generation_id, group_instance_id="group-instance-id")
    complete_appends(d)  # a successful write
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert group.state == GroupState.STABLE


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_static_member_rejoin_with_leader_id_and_unknown_member_id(support_skipping_assignment):
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndUnknownMemberId"""
    d = Driver(complete_appends=False)
    rr = static_members_join_and_rebalance(d)
    group = d.group()
    version = LATEST_JOIN if support_skipping_assignment else STATIC_V3

    # A static leader rejoining with an unknown id does not rebalance; the new id is written.
    join = d.join(
        "", version=version, group_instance_id=LEADER, protocol_names=("range", "roundrobin")
    )
    assert join.records == [new_group_metadata_record(group)]
    complete_appends(d)  # a successful write
    assert join.done

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id,
        protocol_type="consumer",
        protocol_name="range",
        leader=join.response.member_id if support_skipping_assignment else rr.leader_id,
        skip_assignment=support_skipping_assignment,
        member_id=join.response.member_id,
        members=join_response_members(group) if support_skipping_assignment else (),
    )
    check_join_response(
        expected,
        join,
        group,
        GroupState.STABLE,
        {LEADER, FOLLOWER} if support_skipping_assignment else set(),
    )

    old_leader = d.join(
        rr.leader_id,
        version=version,
        group_instance_id=LEADER,
        protocol_names=("range", "roundrobin"),
    )
    assert old_leader.records == []
    assert old_leader.done
    assert old_leader.error == ErrorCode.FENCED_INSTANCE_ID

    # The old leader is fenced.
    old_leader_sync = d.sync(rr.leader_id, rr.generation_id, group_instance_id=LEADER)
    assert old_leader_sync.records == []
    assert old_leader_sync.done
    assert old_leader_sync.error == ErrorCode.FENCED_INSTANCE_ID

    # Without the instance id, the replaced leader id is unknown.
    sync = d.sync(rr.leader_id, rr.generation_id, group_instance_id=None)
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_leader_id_and_known_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndKnownMemberId"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    # Kafka's mock timer ...: Kafka's joinClassicGroupAndCompleteJoin(request, true, true, 10000)
    # sleeps 10000 and runs the timers due with the clock at the end: both sessions (5000) expire,
    # the follower is removed, the join phase completes, and the leader's session is re-armed
    # (500 ms, its rejoin's session timeout) from the end of the sleep. Here timers fire at their
    # deadlines, so that re-armed session would expire the leader within the 10000 ms. Sleep to
    # the session expiry (5000), which is what completes the join phase in Kafka's test too.
    join = d.join(
        rr.leader_id,
        version=LATEST_JOIN,
        group_instance_id=LEADER,
        protocol_names=("range",),
        rebalance_timeout_ms=10_000,
    )
    d.sleep(5_000)
    assert join.done
    assert join.error == ErrorCode.NONE

    # The follower's session expired while the leader rejoined.
    assert rr.follower_id not in group.members

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        member_id=rr.leader_id,
        members=join_response_members(group),
    )
    check_join_response(expected, join, group, GroupState.COMPLETING_REBALANCE, {LEADER})


def test_static_member_rejoin_with_leader_id_and_unexpected_dead_group():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndUnexpectedDeadGroup"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    # Kafka forces DEAD with transitionTo; a coordinator's group becomes Dead when it unloads the partition.
    d.unload()
    assert d.group().state == GroupState.DEAD

    join = d.join(rr.leader_id, version=LATEST_JOIN, group_instance_id=LEADER)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_static_member_rejoin_with_leader_id_and_unexpected_empty_group():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndUnexpectedEmptyGroup"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    # Kafka forces PREPARING_REBALANCE then EMPTY with both static members still in the group. No
    # input takes a coordinator's group to Empty with members (Empty follows only a join phase
    # that ends with none, or a load of a record without members), so the group is emptied the
    # way a broker's is: both static members leave and the join phase completes with nobody.
    leave = d.leave(("", LEADER), ("", FOLLOWER))
    assert [m.error_code for m in leave.response.members] == [ErrorCode.NONE, ErrorCode.NONE]
    assert group.state == GroupState.EMPTY

    join = d.join(rr.leader_id, version=LATEST_JOIN, group_instance_id=LEADER)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_follower_id_and_change_of_protocol():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol"""
    d = Driver()
    rr = static_members_join_and_rebalance(
        d, rebalance_timeout_ms=10_000, session_timeout_ms=15_000
    )
    group = d.group()

    # A static follower rejoining with a changed protocol triggers a rebalance.
    join = d.join(
        rr.follower_id,
        version=STATIC_V3,
        group_instance_id=FOLLOWER,
        protocol_names=("roundrobin",),
        rebalance_timeout_ms=10_000,
        session_timeout_ms=15_000,
    )
    assert join.records == []
    assert not join.done

    # The old leader does not rejoin in time: a new leader is elected.
    assert d.sleep(10_000) == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert LEADER in group.static_members
    assert group.leader_id == rr.follower_id

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="roundrobin",
        leader=rr.follower_id,
        member_id=rr.follower_id,
        members=join_response_members(group),
    )
    check_join_response(expected, join, group, GroupState.COMPLETING_REBALANCE, {LEADER, FOLLOWER})


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_with_selected_protocol_changed():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged"""
    d = Driver()
    rr = static_members_join_and_rebalance(
        d, rebalance_timeout_ms=10_000, session_timeout_ms=15_000
    )
    group = d.group()
    assert group.select_protocol(d.coordinator.choices) != "roundrobin"

    # A static follower rejoining with a changed protocol triggers a rebalance.
    join = d.join(
        "",
        version=STATIC_V3,
        group_instance_id=FOLLOWER,
        protocol_names=("roundrobin",),
        rebalance_timeout_ms=10_000,
        session_timeout_ms=15_000,
    )
    assert join.records == []
    assert not join.done
    assert group.select_protocol(d.coordinator.choices) == "roundrobin"

    # The old leader does not rejoin in time: a new leader is elected.
    assert d.sleep(10_000) == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert LEADER in group.static_members
    assert group.leader_id == join.response.member_id
    assert join.response.member_id != rr.follower_id

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="roundrobin",
        leader=join.response.member_id,
        member_id=join.response.member_id,
        members=join_response_members(group),
    )
    check_join_response(expected, join, group, GroupState.COMPLETING_REBALANCE, {LEADER, FOLLOWER})


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_while_select_protocol_unchanged_persistence_failure():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchangedPersistenceFailure"""
    d = Driver(complete_appends=False)
    rr = static_members_join_and_rebalance(d)
    group = d.group()
    selected = group.select_protocol(d.coordinator.choices)
    assert selected == "range"

    follower = d.join(
        "", version=LATEST_JOIN, group_instance_id=FOLLOWER, protocol_names=(selected,)
    )
    assert follower.records == [new_group_metadata_record(group)]
    complete_appends(d, ErrorCode.MESSAGE_TOO_LARGE)  # a failed write
    assert follower.done

    expected = JoinGroupResponse(
        ErrorCode.UNKNOWN_SERVER_ERROR,
        generation_id=rr.generation_id,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=follower.response.member_id,
        members=(),
    )
    check_join_response(expected, follower, group, GroupState.STABLE, set())

    # The member id was not replaced (the write failed), so the old id still joins.
    assert follower.response.member_id != rr.follower_id
    follower = d.join(
        rr.follower_id, version=STATIC_V3, group_instance_id=FOLLOWER, protocol_names=(selected,)
    )
    assert follower.records == []

    # The leader joins and completes the join phase.
    leader = d.join(
        rr.leader_id, version=STATIC_V3, group_instance_id=LEADER, protocol_names=(selected,)
    )
    assert leader.records == []
    assert leader.done
    assert follower.done
    assert leader.error == ErrorCode.NONE
    assert follower.error == ErrorCode.NONE

    # The leader syncs; the group takes the new (empty) assignment.
    leader_sync = d.sync(rr.leader_id, rr.generation_id + 1, group_instance_id=LEADER)
    leader_sync_records = leader_sync.records
    complete_appends(d)  # a successful write
    assert leader_sync_records == [new_group_metadata_record(group)]
    assert leader_sync.done
    assert group.state == GroupState.STABLE
    assert leader_sync.error == ErrorCode.NONE

    # The old member id syncs too: it was never replaced.
    old_member_sync = d.sync(rr.follower_id, rr.generation_id + 1, group_instance_id=FOLLOWER)
    assert old_member_sync.records == []
    assert old_member_sync.done
    assert group.state == GroupState.STABLE
    assert old_member_sync.error == ErrorCode.NONE


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_while_select_protocol_unchanged():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged"""
    d = Driver(complete_appends=False)
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    # A follower rejoining with a subset of the leader's protocols does not rebalance while the
    # group's selected protocol stays the same.
    selected = group.select_protocol(d.coordinator.choices)
    follower = d.join(
        "", version=LATEST_JOIN, group_instance_id=FOLLOWER, protocol_names=(selected,)
    )
    assert follower.records == [new_group_metadata_record(group)]
    complete_appends(d)  # a successful write
    assert follower.done

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=follower.response.member_id,
        members=(),
    )
    check_join_response(expected, follower, group, GroupState.STABLE, set())

    # The old member id is fenced: the member id was replaced.
    new_follower_id = follower.response.member_id
    assert new_follower_id != rr.follower_id
    old = d.join(
        rr.follower_id, version=STATIC_V3, group_instance_id=FOLLOWER, protocol_names=(selected,)
    )
    assert old.records == []
    assert old.error == ErrorCode.FENCED_INSTANCE_ID

    # SyncGroup with the old member id is fenced as well.
    sync = d.sync(rr.follower_id, rr.generation_id, group_instance_id=FOLLOWER, assignments={})
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.FENCED_INSTANCE_ID

    # SyncGroup with the new member id gets the assignment carried over.
    sync = d.sync(new_follower_id, rr.generation_id, group_instance_id=FOLLOWER, assignments={})
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert sync.response.assignment == rr.follower_assignment


def test_static_member_rejoin_with_known_leader_id_to_trigger_rebalance_and_follower_with_changeof_protocol():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()
    kw = dict(version=LATEST_JOIN, rebalance_timeout_ms=10_000, session_timeout_ms=5_000)

    # A static leader rejoining with its known member id triggers a rebalance.
    leader = d.join(
        rr.leader_id, group_instance_id=LEADER, protocol_names=("range", "roundrobin"), **kw
    )
    assert leader.records == []
    assert not leader.done

    # The follower rejoins; the rebalance completes at once.
    follower = d.join(
        rr.follower_id, group_instance_id=FOLLOWER, protocol_names=("range", "roundrobin"), **kw
    )
    assert follower.records == []
    assert leader.done
    assert follower.done
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 2

    expected_leader = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=leader.response.member_id,
        members=join_response_members(group),
    )
    check_join_response(
        expected_leader, leader, group, GroupState.COMPLETING_REBALANCE, {LEADER, FOLLOWER}
    )

    expected_follower = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=follower.response.member_id,
        members=(),
    )
    check_join_response(expected_follower, follower, group, GroupState.COMPLETING_REBALANCE, set())

    # The follower's protocols change from the superset to [range].
    follower = d.join(rr.follower_id, group_instance_id=FOLLOWER, protocol_names=("range",), **kw)
    assert follower.records == []
    assert not follower.done
    assert group.state == GroupState.PREPARING_REBALANCE

    # The sessions expire: the leader is removed, the follower (awaiting its join) is not; the
    # join phase completes.
    d.sleep(5_000)
    assert follower.done

    new_follower_id = follower.response.member_id
    expected_follower = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 2,
        protocol_type="consumer",
        protocol_name="range",
        leader=new_follower_id,
        skip_assignment=False,
        member_id=new_follower_id,
        members=join_response_members(group),
    )
    check_join_response(
        expected_follower, follower, group, GroupState.COMPLETING_REBALANCE, {FOLLOWER}
    )


def test_static_member_rejoin_as_follower_with_unknown_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinAsFollowerWithUnknownMemberId"""
    d = Driver(complete_appends=False)
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    # A static follower rejoining without a protocol change does not rebalance.
    follower = d.join(
        "", version=LATEST_JOIN, group_instance_id=FOLLOWER, protocol_names=("range", "roundrobin")
    )
    assert follower.records == [new_group_metadata_record(group)]
    complete_appends(d)  # a successful write
    assert follower.done

    # The old leader is not timed out.
    assert LEADER in group.static_members

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=follower.response.member_id,
        members=(),
    )
    check_join_response(expected, follower, group, GroupState.STABLE, set())
    assert follower.response.member_id != rr.follower_id

    sync = d.sync(follower.response.member_id, rr.generation_id, group_instance_id=FOLLOWER)
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert sync.response.assignment == rr.follower_assignment


def test_static_member_rejoin_as_follower_with_known_member_id_and_no_protocol_change():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    # A static follower rejoining without a protocol change does not rebalance.
    follower = d.join(
        rr.follower_id,
        version=LATEST_JOIN,
        group_instance_id=FOLLOWER,
        protocol_names=("range", "roundrobin"),
    )
    # Nothing changed: no records.
    assert follower.records == []
    assert follower.done

    # The old leader is not timed out.
    assert LEADER in group.static_members

    expected = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=rr.follower_id,
        members=(),
    )
    check_join_response(expected, follower, group, GroupState.STABLE, set())


def test_static_member_rejoin_as_follower_with_mismatched_instance_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinAsFollowerWithMismatchedInstanceId"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    join = d.join(
        rr.follower_id,
        version=LATEST_JOIN,
        group_instance_id=LEADER,
        protocol_names=("range", "roundrobin"),
    )
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_rejoin_as_leader_with_mismatched_instance_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberRejoinAsLeaderWithMismatchedInstanceId"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    join = d.join(
        rr.leader_id,
        version=LATEST_JOIN,
        group_instance_id=FOLLOWER,
        protocol_names=("range", "roundrobin"),
    )
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_sync_as_leader_with_invalid_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberSyncAsLeaderWithInvalidMemberId"""
    d = Driver()
    static_members_join_and_rebalance(d)
    # Kafka's SyncGroup builder: generation 0 unless set.
    sync = d.sync("invalid-member-id", 0, group_instance_id=FOLLOWER)
    assert sync.records == []
    assert sync.done
    assert sync.error == ErrorCode.FENCED_INSTANCE_ID


def test_get_different_static_member_id_after_each_rejoin():
    """Kafka: GroupMetadataManagerTest.testGetDifferentStaticMemberIdAfterEachRejoin"""
    d = Driver(complete_appends=False)
    rr = static_members_join_and_rebalance(d)
    group = d.group()

    last_member_id = rr.leader_id
    for _ in range(5):
        leader = d.join(
            "",
            version=LATEST_JOIN,
            group_instance_id=LEADER,
            protocol_names=("range", "roundrobin"),
        )
        assert leader.records == [new_group_metadata_record(group)]
        complete_appends(d)  # a successful write
        assert leader.done
        assert leader.response.member_id == group.static_members[LEADER]
        assert leader.error == ErrorCode.NONE
        assert leader.response.member_id != last_member_id
        last_member_id = leader.response.member_id


def test_static_member_join_with_unknown_instance_id_and_known_member_id():
    """Kafka: GroupMetadataManagerTest.testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId"""
    d = Driver()
    rr = static_members_join_and_rebalance(d)
    join = d.join(
        rr.leader_id,
        version=LATEST_JOIN,
        group_instance_id="unknown-instance-id",
        protocol_names=("range", "roundrobin"),
    )
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_follower_fail_to_rejoin_before_rebalance_timeout():
    """Kafka: GroupMetadataManagerTest.testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout"""
    d = Driver()
    # A longer session timeout keeps the follower from being evicted at the rebalance timeout.
    rr = static_members_join_and_rebalance(
        d, rebalance_timeout_ms=10_000, session_timeout_ms=15_000
    )
    group = d.group()
    new_instance = "new-member-instance-id"

    new_member = d.join(
        "",
        version=LATEST_JOIN,
        group_instance_id=new_instance,
        protocol_names=("range", "roundrobin"),
    )
    assert new_member.records == []
    assert not new_member.done
    assert group.state == GroupState.PREPARING_REBALANCE

    leader = d.join(
        rr.leader_id,
        version=LATEST_JOIN,
        group_instance_id=LEADER,
        protocol_names=("range", "roundrobin"),
    )
    assert leader.records == []
    assert not leader.done

    # The rebalance timeout completes the join phase.
    assert d.sleep(10_000) == []
    assert leader.done
    assert new_member.done

    expected_leader = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=rr.leader_id,
        members=join_response_members(group),
    )
    check_join_response(
        expected_leader,
        leader,
        group,
        GroupState.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER, new_instance},
    )

    expected_new = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=rr.leader_id,
        skip_assignment=False,
        member_id=new_member.response.member_id,
        members=(),
    )
    check_join_response(expected_new, new_member, group, GroupState.COMPLETING_REBALANCE, set())


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout():
    """Kafka: GroupMetadataManagerTest.testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout"""
    d = Driver()
    # A longer session timeout keeps the leader from being evicted at the rebalance timeout.
    rr = static_members_join_and_rebalance(
        d, rebalance_timeout_ms=10_000, session_timeout_ms=15_000
    )
    group = d.group()
    new_instance = "new-member-instance-id"

    new_member = d.join(
        "",
        version=LATEST_JOIN,
        group_instance_id=new_instance,
        protocol_names=("range", "roundrobin"),
    )
    assert new_member.records == []
    assert not new_member.done
    assert group.state == GroupState.PREPARING_REBALANCE

    old_follower = d.join(
        rr.follower_id,
        version=LATEST_JOIN,
        group_instance_id=FOLLOWER,
        protocol_names=("range", "roundrobin"),
    )
    assert old_follower.records == []
    assert not old_follower.done

    # The rebalance timeout completes the join phase.
    assert d.sleep(10_000) == []
    assert old_follower.done
    assert new_member.done

    if old_follower.response.leader == old_follower.response.member_id:
        new_leader, new_follower = old_follower, new_member
    else:
        new_leader, new_follower = new_member, old_follower

    leader_id = new_leader.response.member_id
    expected_leader = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=leader_id,
        skip_assignment=False,
        member_id=leader_id,
        members=join_response_members(group),
    )
    check_join_response(
        expected_leader,
        new_leader,
        group,
        GroupState.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER, new_instance},
    )

    expected_follower = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=rr.generation_id + 1,
        protocol_type="consumer",
        protocol_name="range",
        leader=leader_id,
        skip_assignment=False,
        member_id=new_follower.response.member_id,
        members=(),
    )
    check_join_response(
        expected_follower, new_follower, group, GroupState.COMPLETING_REBALANCE, set()
    )
