"""Kafka's classic-group JoinGroup tests (GroupMetadataManagerTest), ported to the reference.

Source: apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99,
group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java.

Porting conventions:

* Kafka's ``sendClassicGroupJoin(request)`` is JoinGroup v3, ``(request, true)`` v4 and
  ``(request, true, true)`` the latest version. Kafka's harness puts a group instance id in a
  "v3"/"v4" request object, which the wire only carries from v5 (the reference refuses it
  below v5). Such static joins are sent here at ``STATIC_V3`` = v7: for a member with an
  instance id, v4..v8 behave exactly as v3 (the v4 member-id round trip only concerns
  dynamic members, skip-assignment starts at v9), and v7 is the first version whose
  response carries the protocol type that Kafka's tests compare.
* ``createClassicGroup`` (an Empty group held in memory, no record written) is reached by
  loading an empty GroupMetadata record: the coordinator then holds an Empty group at
  generation 0, and the first JoinGroup writes no "new group" record, as in Kafka.
* Kafka's ``group.transitionTo(STABLE)`` is reached with the leader's SyncGroup; DEAD with
  an unload (the only way a coordinator's group becomes Dead).
* "throws X" in Kafka becomes the error X in the response (GroupCoordinatorService converts).
* Kafka's test helpers (createClassicGroup, joinClassicGroupAsDynamicMemberAndCompleteJoin,
  verifySessionExpiration, ...) are in tests/reference/kafka_context.py.
"""

from __future__ import annotations

from driver import GROUP_ID, LATEST, Driver, kafka_test_config, protocols
from kafka_context import (
    STATIC_V3,
    create_classic_group,
    due_timers,
    empty_group_record,
    force_stable,
    join_and_complete_join,
    join_deadline,
    join_dynamic_and_complete_join,
    metadata_of,
    verify_join_responses,
    verify_session_expiration,
)

from coordspec.reference.errors import ErrorCode, append_error_to_response_error
from coordspec.reference.group import GroupState
from coordspec.reference.group.rebalance import session_key
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    Record,
)
from coordspec.reference.group.responses import JoinGroupResponse

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's classicGroupNewMemberJoinTimeoutMs


def awaiting_join(group) -> int:
    return sum(1 for m in group.members.values() if m.awaiting_join is not None)


# -- max group size ----------------------------------------------------------------------------


def test_join_group_should_receive_error_if_group_over_max_size():
    """Kafka: GroupMetadataManagerTest.testJoinGroupShouldReceiveErrorIfGroupOverMaxSize"""
    d = Driver(kafka_test_config(max_size=10))
    create_classic_group(d)
    for _ in range(10):
        join = d.join("")
        assert not join.done
        assert join.records == []
    join = d.join("")
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_dynamic_members_join_group_with_max_size_and_required_known_member():
    """Kafka: GroupMetadataManagerTest.testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember"""
    d = Driver(kafka_test_config(max_size=10, initial_rebalance_delay_ms=50))
    group = create_classic_group(d)

    first_round = [d.join("", version=4) for _ in range(11)]
    member_ids = verify_join_responses(first_round, 0, ErrorCode.MEMBER_ID_REQUIRED)
    assert len(member_ids) == 11
    assert len(group.members) == 0
    assert group.state == GroupState.EMPTY
    assert len(group.pending_members) == 11

    second_round = [d.join(member_id, version=4) for member_id in member_ids]
    assert d.sleep(50) == []  # the initial delayed join is extended: members joined meanwhile
    assert d.sleep(50) == []  # no new member since: the join phase completes
    verify_join_responses(second_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert len(group.members) == 10
    assert len(group.pending_members) == 0
    assert group.state == GroupState.COMPLETING_REBALANCE

    third_round = [d.join(member_id, version=4) for member_id in member_ids]
    verify_join_responses(third_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)


def test_dynamic_members_join_group_with_max_size_and_not_required_known_member():
    """Kafka: GroupMetadataManagerTest.testDynamicMembersJoinGroupWithMaxSizeAndNotRequiredKnownMember"""
    d = Driver(kafka_test_config(max_size=10, initial_rebalance_delay_ms=50))
    group = create_classic_group(d)

    first_round = [d.join("") for _ in range(11)]
    assert len(group.members) == 10
    assert awaiting_join(group) == 10
    assert group.state == GroupState.PREPARING_REBALANCE

    assert d.sleep(50) == []
    assert d.sleep(50) == []
    member_ids = verify_join_responses(first_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)

    second_round = [d.join(member_id) for member_id in member_ids]
    verify_join_responses(second_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert len(group.members) == 10
    assert awaiting_join(group) == 0
    assert group.state == GroupState.COMPLETING_REBALANCE


def test_static_members_join_group_with_max_size():
    """Kafka: GroupMetadataManagerTest.testStaticMembersJoinGroupWithMaxSize"""
    d = Driver(kafka_test_config(max_size=10, initial_rebalance_delay_ms=50))
    group = create_classic_group(d)
    instance_ids = [f"instance-id-{i}" for i in range(11)]

    first_round = [d.join("", version=STATIC_V3, group_instance_id=i) for i in instance_ids]
    assert len(group.members) == 10
    assert awaiting_join(group) == 10
    assert group.state == GroupState.PREPARING_REBALANCE

    assert d.sleep(50) == []
    assert d.sleep(50) == []
    member_ids = verify_join_responses(first_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)

    second_round = [
        d.join(m, version=STATIC_V3, group_instance_id=i)
        for m, i in zip(member_ids, instance_ids, strict=True)
    ]
    verify_join_responses(second_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert len(group.members) == 10
    assert awaiting_join(group) == 0
    assert group.state == GroupState.COMPLETING_REBALANCE


def test_dynamic_members_can_rejoin_group_with_max_size_while_rebalancing():
    """Kafka: GroupMetadataManagerTest.testDynamicMembersCanRejoinGroupWithMaxSizeWhileRebalancing"""
    d = Driver(kafka_test_config(max_size=10, initial_rebalance_delay_ms=50))
    group = create_classic_group(d)

    first_round = [d.join("", version=4) for _ in range(11)]
    assert len(group.members) == 0
    assert len(group.pending_members) == 11
    assert group.state == GroupState.EMPTY
    member_ids = verify_join_responses(first_round, 0, ErrorCode.MEMBER_ID_REQUIRED)
    assert len(member_ids) == 11

    for member_id in member_ids:
        assert d.join(member_id, version=4).records == []
    assert len(group.members) == 10
    assert awaiting_join(group) == 10
    assert group.state == GroupState.PREPARING_REBALANCE

    third_round = [d.join(member_id, version=4) for member_id in member_ids]
    assert d.sleep(50) == []
    assert d.sleep(50) == []
    verify_join_responses(third_round, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert len(group.members) == 10
    assert awaiting_join(group) == 0
    assert group.state == GroupState.COMPLETING_REBALANCE


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size():
    """Kafka: GroupMetadataManagerTest.testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize"""
    d = Driver(kafka_test_config(max_size=10, initial_rebalance_delay_ms=50))
    # Kafka adds 12 members straight into the in-memory group (bypassing the size check) and calls
    # prepareRebalance. A coordinator holds a group over group.max.size when it loads one written
    # under a larger limit; loading such a group starts the rebalance (onLoaded), which is used here.
    # The join timer is then the rebalance timeout (10000) instead of the initial delay; Kafka's
    # test sleeps the whole 10000 either way.
    member_ids = [d.coordinator.choices.member_id("client-id") for _ in range(12)]
    range_metadata = metadata_of(protocols("range"), "range")
    members = tuple(
        MemberMetadata(m, None, "client-id", "client-host", 10_000, 5_000, range_metadata, b"")
        for m in member_ids
    )
    d.load(
        [
            Record(
                GroupMetadataKey(GROUP_ID),
                GroupMetadataValue("consumer", 1, "range", member_ids[0], 0, members),
            )
        ]
    )
    group = d.group()
    assert group.state == GroupState.PREPARING_REBALANCE
    assert len(group.members) == 12

    joins = [d.join(m, rebalance_timeout_ms=10_000) for m in member_ids]
    assert len(group.members) == 10
    assert awaiting_join(group) == 10
    assert group.state == GroupState.PREPARING_REBALANCE

    assert d.sleep(10_000) == []
    verify_join_responses(joins, 10, ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert len(group.members) == 10
    assert group.state == GroupState.COMPLETING_REBALANCE
    for m in member_ids[10:]:
        assert m not in group.members
    for m in member_ids[:10]:
        assert m in group.members


# -- basic validation / errors ------------------------------------------------------------------


def test_join_group_unknown_member_new_group():
    """Kafka: GroupMetadataManagerTest.testJoinGroupUnknownMemberNewGroup"""
    d = Driver()
    join = d.join("member-id", protocols=())
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID

    # Static member.
    join = d.join(
        "member-id", version=STATIC_V3, group_instance_id="group-instance-id", protocols=()
    )
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_classic_group_join_inconsistent_protocol_type():
    """Kafka: GroupMetadataManagerTest.testClassicGroupJoinInconsistentProtocolType"""
    d = Driver()
    create_classic_group(d)
    join_dynamic_and_complete_join(d)

    join = d.join("", protocol_type="connect", protocol_names=("range",))
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_with_empty_protocol_type():
    """Kafka: GroupMetadataManagerTest.testJoinGroupWithEmptyProtocolType"""
    d = Driver()
    create_classic_group(d)
    join = d.join("", protocol_type="", protocol_names=("range",))
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    # Send as static member join.
    join = d.join(
        "",
        version=LATEST["JoinGroup"],
        protocol_type="",
        protocol_names=("range",),
        group_instance_id="group-instance-id",
    )
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_with_empty_group_protocol():
    """Kafka: GroupMetadataManagerTest.testJoinGroupWithEmptyGroupProtocol"""
    d = Driver()
    create_classic_group(d)
    join = d.join("", protocol_type="consumer", protocols=())
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_inconsistent_group_protocol():
    """Kafka: GroupMetadataManagerTest.testJoinGroupInconsistentGroupProtocol"""
    d = Driver()
    create_classic_group(d)
    join = d.join("", protocol_names=("range",))
    assert join.records == []
    assert not join.done

    other = d.join("", protocol_names=("roundrobin",))
    assert other.records == []
    assert other.done

    assert d.sleep(3_000) == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert other.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_second_join_inconsistent_protocol():
    """Kafka: GroupMetadataManagerTest.testJoinGroupSecondJoinInconsistentProtocol"""
    d = Driver()
    create_classic_group(d)
    join = d.join("", version=4)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED
    member_id = join.response.member_id

    # Sending an inconsistent protocol should be refused.
    join = d.join(member_id, version=4, protocols=())
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    # Sending a consistent protocol should be accepted.
    join = d.join(member_id, version=4, protocol_names=("range",))
    assert join.records == []
    assert not join.done

    assert d.sleep(3_000) == []
    assert join.done
    assert join.error == ErrorCode.NONE


def test_join_group_unknown_consumer_existing_group():
    """Kafka: GroupMetadataManagerTest.testJoinGroupUnknownConsumerExistingGroup"""
    d = Driver()
    create_classic_group(d)
    response = join_dynamic_and_complete_join(
        d, session_timeout_ms=5_000, rebalance_timeout_ms=5_000
    )
    assert response.error == ErrorCode.NONE

    join = d.join("other-member-id", session_timeout_ms=5_000, rebalance_timeout_ms=5_000)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_join_group_unknown_consumer_new_dead_group():
    """Kafka: GroupMetadataManagerTest.testJoinGroupUnknownConsumerNewDeadGroup"""
    d = Driver()
    create_classic_group(d)
    # Kafka forces the group DEAD with transitionTo; a coordinator's group becomes Dead when the
    # coordinator unloads its partition.
    d.unload()
    assert d.group().state == GroupState.DEAD

    join = d.join("", protocol_names=("range",))
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_existing_member_join_dead_group():
    """Kafka: GroupMetadataManagerTest.testExistingMemberJoinDeadGroup"""
    d = Driver()
    group = create_classic_group(d)
    response = join_dynamic_and_complete_join(d)
    assert response.error == ErrorCode.NONE
    member_id = response.response.member_id
    assert member_id in group.members

    # Kafka forces DEAD with transitionTo; here the coordinator unloads the group's partition.
    d.unload()
    assert group.state == GroupState.DEAD

    # Kafka resends its original request object, whose member id is still "".
    join = d.join("")
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_join_group_protocol_type_is_not_provided_when_an_error_occurs():
    """Kafka: GroupMetadataManagerTest.testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs"""
    d = Driver()
    # Sent at the latest version: below v7 the response has no protocol type field at all, so
    # the absence would prove nothing.
    join = d.join("member-id", version=LATEST["JoinGroup"], protocol_names=("range",))
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert join.response.protocol_type is None


def test_join_group_returns_the_protocol_type():
    """Kafka: GroupMetadataManagerTest.testJoinGroupReturnsTheProtocolType"""
    d = Driver()
    create_classic_group(d)
    # The protocol type is in JoinGroup responses from v7 on, and v4+ hands a dynamic member its
    # id first (MEMBER_ID_REQUIRED); Kafka's v3 requests join in one step.
    version = 7

    def join_new_member():
        first = d.join("", version=version)
        assert first.records == []
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        return d.join(first.response.member_id, version=version)

    leader = join_new_member()
    assert leader.records == []
    assert not leader.done

    member = join_new_member()
    assert member.records == []
    assert not member.done

    assert d.sleep(3_000) == []
    assert leader.done
    assert member.done
    assert leader.error == ErrorCode.NONE
    assert leader.response.protocol_type == "consumer"
    assert member.error == ErrorCode.NONE
    assert member.response.protocol_type == "consumer"


def test_join_group_existing_pending_member_with_group_instance_id_throws_exception():
    """Kafka: GroupMetadataManagerTest.testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException"""
    d = Driver()
    group = create_classic_group(d)
    join = d.join("", version=4)
    assert join.records == []
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED
    assert join.done
    member_id = join.response.member_id

    # Kafka: classicGroupJoin throws IllegalStateException. GroupCoordinatorService turns a failed
    # classic-group-join operation into JoinGroupResponseData().setErrorCode(UNKNOWN_SERVER_ERROR):
    # the error alone, every other field at its default (member id "").
    join = d.join(member_id, version=STATIC_V3, group_instance_id="group-instance-id")
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_SERVER_ERROR
    assert join.response == JoinGroupResponse(ErrorCode.UNKNOWN_SERVER_ERROR).at_version(STATIC_V3)
    # The operation failed as a whole: the pending member is untouched.
    assert member_id in group.pending_members
    assert not group.members


def test_join_group_existing_member_in_empty_state():
    """Kafka: GroupMetadataManagerTest.testJoinGroupExistingMemberInEmptyState"""
    d = Driver()
    group = create_classic_group(d)
    response = join_dynamic_and_complete_join(d)
    assert response.error == ErrorCode.NONE
    member_id = response.response.member_id
    assert group.state == GroupState.COMPLETING_REBALANCE

    # Kafka forces PREPARING_REBALANCE then EMPTY with the member still in the group. No input
    # takes a coordinator's group to Empty with members (Empty follows only a join phase that
    # ends with none, or a load of a record without members), so the group is emptied the way a
    # broker's is: the member leaves and the join phase completes with nobody.
    leave = d.leave(member_id)
    assert leave.error == ErrorCode.NONE
    assert group.state == GroupState.EMPTY

    join = d.join(member_id)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert join.response.generation_id == -1


def test_join_group_append_error_conversion():
    """Kafka: GroupMetadataManagerTest.testJoinGroupAppendErrorConversion"""
    assert (
        append_error_to_response_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        == ErrorCode.COORDINATOR_NOT_AVAILABLE
    )
    assert (
        append_error_to_response_error(ErrorCode.NOT_ENOUGH_REPLICAS)
        == ErrorCode.COORDINATOR_NOT_AVAILABLE
    )
    assert (
        append_error_to_response_error(ErrorCode.REQUEST_TIMED_OUT)
        == ErrorCode.COORDINATOR_NOT_AVAILABLE
    )

    assert (
        append_error_to_response_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        == ErrorCode.NOT_COORDINATOR
    )
    assert (
        append_error_to_response_error(ErrorCode.KAFKA_STORAGE_ERROR) == ErrorCode.NOT_COORDINATOR
    )

    assert (
        append_error_to_response_error(ErrorCode.MESSAGE_TOO_LARGE)
        == ErrorCode.UNKNOWN_SERVER_ERROR
    )
    # RECORD_LIST_TOO_LARGE (18) and INVALID_FETCH_SIZE (4) -> UNKNOWN_SERVER_ERROR in Kafka too;
    # the reference's ErrorCode has no member for them (no group API returns them), so they
    # cannot be passed here.
    # Kafka's last line compares LEADER_NOT_AVAILABLE with itself: other errors pass through.
    assert append_error_to_response_error(ErrorCode.NOT_COORDINATOR) == ErrorCode.NOT_COORDINATOR


def test_generate_records_on_new_classic_group():
    """Kafka: GroupMetadataManagerTest.testGenerateRecordsOnNewClassicGroup"""
    d = Driver()
    join = d.join("", version=4, protocol_names=("range",))
    assert join.done
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED

    group = d.group()
    assert join.records == [
        empty_group_record(GROUP_ID, 0, group.state_timestamp_ms, protocol_type="")
    ]


def test_generate_records_on_new_classic_group_failure_transforms_error():
    """Kafka: GroupMetadataManagerTest.testGenerateRecordsOnNewClassicGroupFailureTransformsError"""
    d = Driver(complete_appends=False)
    join = d.join(
        "", version=STATIC_V3, group_instance_id="group-instance-id", protocol_names=("range",)
    )
    assert not join.done
    assert len(d.appends) == 1

    # Simulate a failed write to the log.
    d.complete(d.appends[0], ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert join.done
    assert join.error == ErrorCode.NOT_COORDINATOR


# -- initial rebalance delay --------------------------------------------------------------------


def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group():
    """Kafka: GroupMetadataManagerTest.testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup"""
    d = Driver()
    create_classic_group(d)
    join = d.join("")
    assert join.records == []
    assert not join.done

    assert d.sleep(1_500) == []
    assert not join.done

    assert d.sleep(1_501) == []
    assert join.done
    assert join.error == ErrorCode.NONE


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance():
    """Kafka: GroupMetadataManagerTest.testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance"""
    d = Driver()
    create_classic_group(d)
    first = d.join("", rebalance_timeout_ms=9_000)
    assert first.records == []
    assert not first.done

    assert d.sleep(2_999) == []
    second = d.join("", rebalance_timeout_ms=9_000)
    assert second.records == []
    assert not second.done
    # The first delayed join expires (at 3000 here, at 3001 under Kafka's mock timer) and is
    # extended by another 3000 because a member joined; both sleeps below straddle either end.
    assert d.sleep(2) == []

    # Past the initial delay, the futures are not completed.
    assert d.sleep(1_501) == []
    assert not first.done
    assert not second.done

    # Beyond the recomputed delay, they are.
    assert d.sleep(1_500) == []
    assert first.done
    assert second.done
    assert first.error == ErrorCode.NONE
    assert second.error == ErrorCode.NONE


def test_delay_rebalance_upto_rebalance_timeout():
    """Kafka: GroupMetadataManagerTest.testDelayRebalanceUptoRebalanceTimeout"""
    d = Driver()
    create_classic_group(d)
    first = d.join("", rebalance_timeout_ms=6_000)
    assert first.records == []
    assert not first.done
    second = d.join("", rebalance_timeout_ms=6_000)
    assert second.records == []
    assert not second.done

    assert d.sleep(3_001) == []
    third = d.join("", rebalance_timeout_ms=6_000)
    assert third.records == []
    assert not third.done

    # Kafka's mock timer ...: it runs the first delayed join with the clock at the end of sleep(3001), so
    # the extension it schedules (min(3000, remaining 3000)) ends at 6001 and Kafka checks 6000 / 6001.
    # The reference runs it at its deadline, 3000, so the extension ends at 6000: the same check
    # (not done just before the rebalance timeout, all done at it) is one millisecond earlier.
    assert d.sleep(2_998) == []
    assert not first.done
    assert not second.done
    assert not third.done

    assert d.sleep(1) == []
    assert first.done
    assert second.done
    assert third.done
    assert first.error == ErrorCode.NONE
    assert second.error == ErrorCode.NONE
    assert third.error == ErrorCode.NONE


# -- new member join timeout / expiry -------------------------------------------------------------


def test_new_member_join_expiration():
    """Kafka: GroupMetadataManagerTest.testNewMemberJoinExpiration"""
    d = Driver()
    group = create_classic_group(d)
    first = join_dynamic_and_complete_join(
        d,
        session_timeout_ms=5_000 + NEW_MEMBER_JOIN_TIMEOUT_MS,
        rebalance_timeout_ms=2 * NEW_MEMBER_JOIN_TIMEOUT_MS,
    )
    first_member_id = first.response.member_id
    assert first.response.leader == first_member_id
    assert first.error == ErrorCode.NONE
    assert sum(1 for m in group.members.values() if m.is_new) == 0

    # A second, dynamic member joins.
    second = d.join("", session_timeout_ms=5_000, rebalance_timeout_ms=5_000)
    assert second.records == []
    assert not second.done
    assert len(group.members) == 2
    new_members = [m for m in group.members.values() if m.is_new]
    assert len(new_members) == 1
    assert new_members[0].member_id != first_member_id

    # The new member join timeout expires the second member.
    assert d.sleep(NEW_MEMBER_JOIN_TIMEOUT_MS) == []
    assert second.done
    assert second.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(group.members) == 1
    assert sum(1 for m in group.members.values() if m.is_new) == 0
    assert next(iter(group.members)) == first_member_id


def test_new_member_timeout_completion():
    """Kafka: GroupMetadataManagerTest.testNewMemberTimeoutCompletion"""
    d = Driver(complete_appends=False)
    group = create_classic_group(d)
    join = d.join("", session_timeout_ms=NEW_MEMBER_JOIN_TIMEOUT_MS + 5_000)
    assert join.records == []
    assert not join.done

    # The initial rebalance delay completes the join phase.
    assert d.sleep(3_000) == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert group.generation_id == 1
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert sum(1 for m in group.members.values() if m.is_new) == 0

    member_id = join.response.member_id
    sync = d.sync(member_id, join.response.generation_id)
    d.complete(d.appends[0])  # a successful write
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert len(group.members) == 1

    # The new member timeout is no longer in effect: the member is not kicked.
    assert d.sleep(NEW_MEMBER_JOIN_TIMEOUT_MS) == []
    assert len(group.members) == 1

    # The member's session expires; the group is now empty.
    assert due_timers(d, 5_000) == {session_key(GROUP_ID, member_id)}
    records = d.sleep(5_000)
    assert records == [empty_group_record(GROUP_ID, 2, d.now_ms)]
    assert len(group.members) == 0
    assert group.state == GroupState.EMPTY


def test_new_member_failure_after_join_group_completion():
    """Kafka: GroupMetadataManagerTest.testNewMemberFailureAfterJoinGroupCompletion"""
    d = Driver(complete_appends=False)
    group = create_classic_group(d)
    join = join_and_complete_join(
        d, version=3, member_id="", session_timeout_ms=5_000, rebalance_timeout_ms=10_000
    )
    member_id = join.response.member_id
    assert join.response.leader == member_id
    assert join.response.generation_id == 1

    sync = d.sync(member_id, 1)
    d.complete(d.appends[0])  # a successful write
    assert sync.done
    assert sync.error == ErrorCode.NONE
    assert group.state == GroupState.STABLE
    assert group.generation_id == 1

    other = d.join("", session_timeout_ms=5_000, rebalance_timeout_ms=10_000)
    rejoin = d.join(member_id, session_timeout_ms=5_000, rebalance_timeout_ms=10_000)
    assert other.records == []
    assert rejoin.records == []
    assert rejoin.done
    assert other.done
    assert rejoin.error == ErrorCode.NONE
    assert other.error == ErrorCode.NONE

    verify_session_expiration(d, 5_000)


def test_heartbeat_expiration_should_remove_pending_member():
    """Kafka: GroupMetadataManagerTest.testHeartbeatExpirationShouldRemovePendingMember"""
    d = Driver()
    group = create_classic_group(d)
    join = d.join("", version=4, session_timeout_ms=1_000)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED
    assert len(group.members) == 0
    assert len(group.pending_members) == 1

    # The pending member's session expires.
    assert d.sleep(1_000) == []
    assert len(group.pending_members) == 0


def test_heartbeat_expiration_should_remove_member():
    """Kafka: GroupMetadataManagerTest.testHeartbeatExpirationShouldRemoveMember"""
    d = Driver(kafka_test_config(initial_rebalance_delay_ms=10 * 60 * 1000))
    group = create_classic_group(d)
    join = d.join("")
    assert join.records == []
    assert not join.done
    assert len(group.members) == 1
    member_id = group.leader_id

    # The new member join timeout expires the member; the group completes the join phase empty.
    assert due_timers(d, NEW_MEMBER_JOIN_TIMEOUT_MS) == {session_key(GROUP_ID, member_id)}
    records = d.sleep(NEW_MEMBER_JOIN_TIMEOUT_MS)
    # newGroupMetadataRecord(group, group.groupAssignment()) of the group after the expiry.
    assert group.state == GroupState.EMPTY
    assert group.generation_id == 1
    assert records == [empty_group_record(GROUP_ID, 1, group.state_timestamp_ms)]
    assert join.done
    assert join.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(group.members) == 0


# -- existing member rejoin / rebalance triggers ------------------------------------------------


def test_join_group_existing_member_updated_metadata_triggers_rebalance():
    """Kafka: GroupMetadataManagerTest.testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance"""
    d = Driver()
    group = create_classic_group(d)
    response = join_dynamic_and_complete_join(d, protocol_names=("range",))
    assert response.error == ErrorCode.NONE
    member_id = response.response.member_id
    member = group.members[member_id]
    assert member.protocols == protocols("range")
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 1

    # Updated member metadata triggers a rebalance and completes the join phase.
    join = d.join(member_id, protocol_names=("range", "roundrobin"))
    assert join.records == []
    assert join.done
    assert response.error == ErrorCode.NONE
    assert join.error == ErrorCode.NONE
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 2
    assert member.protocols == protocols("range", "roundrobin")


def test_join_group_as_existing_leader_triggers_rebalance_in_stable_state():
    """Kafka: GroupMetadataManagerTest.testJoinGroupAsExistingLeaderTriggersRebalanceInStableState"""
    d = Driver()
    group = create_classic_group(d)
    response = join_dynamic_and_complete_join(d)
    assert response.error == ErrorCode.NONE
    member_id = response.response.member_id
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.leader_id == member_id
    assert group.generation_id == 1

    force_stable(d, member_id, 1)
    # Joining as the leader triggers a rebalance.
    join = d.join(member_id)
    assert join.records == []
    assert join.done
    assert join.error == ErrorCode.NONE
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 2


def _leader_and_member_at_generation_two(d: Driver):
    group = create_classic_group(d)
    leader_response = join_dynamic_and_complete_join(d, protocol_names=("range",))
    assert leader_response.error == ErrorCode.NONE
    leader_id = leader_response.response.leader
    assert group.generation_id == 1

    # A member joins.
    member_join = d.join("", protocol_names=("range",))
    assert member_join.records == []
    assert not member_join.done

    # The leader rejoins as well, which completes the join phase.
    leader_join = d.join(leader_id, protocol_names=("range",))
    assert leader_join.records == []
    assert leader_join.done
    assert member_join.done
    assert leader_join.error == ErrorCode.NONE
    assert member_join.error == ErrorCode.NONE
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert len(group.members) == 2
    assert group.generation_id == 2
    return group, leader_id, member_join.response.member_id


def test_join_group_as_existing_member_with_updated_metadata_triggers_rebalance_in_stable_state():
    """Kafka: GroupMetadataManagerTest.testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState"""
    d = Driver()
    group, leader_id, member_id = _leader_and_member_at_generation_two(d)

    force_stable(d, leader_id, 2)

    # The member rejoins with updated metadata: a rebalance starts.
    member_join = d.join(member_id, protocol_names=("range", "roundrobin"))
    assert member_join.records == []
    assert not member_join.done

    # The leader rejoins, which completes the join phase.
    leader_join = d.join(leader_id, protocol_names=("range",))
    assert leader_join.records == []
    assert leader_join.done
    assert member_join.done
    assert member_join.error == ErrorCode.NONE
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 3
    assert len(group.members) == 2


def test_join_group_existing_member_does_not_trigger_rebalance_in_stable_state():
    """Kafka: GroupMetadataManagerTest.testJoinGroupExistingMemberDoesNotTriggerRebalanceInStableState"""
    d = Driver()
    group, leader_id, member_id = _leader_and_member_at_generation_two(d)

    force_stable(d, leader_id, 2)

    # The member rejoins with the same metadata: no rebalance.
    member_join = d.join(member_id, protocol_names=("range",))
    assert member_join.records == []
    assert member_join.done
    assert member_join.error == ErrorCode.NONE
    assert member_join.response.generation_id == 2
    assert group.state == GroupState.STABLE


# -- join-phase completion ----------------------------------------------------------------------


def test_complete_join_remove_not_yet_rejoined_dynamic_members():
    """Kafka: GroupMetadataManagerTest.testCompleteJoinRemoveNotYetRejoinedDynamicMembers"""
    d = Driver()
    group = create_classic_group(d)
    leader = join_dynamic_and_complete_join(d, session_timeout_ms=1_000, rebalance_timeout_ms=1_000)
    assert leader.error == ErrorCode.NONE
    assert group.generation_id == 1

    # A new member triggers a rebalance.
    member_join = d.join("", session_timeout_ms=1_000, rebalance_timeout_ms=1_000)
    assert member_join.records == []
    assert not member_join.done
    assert len(group.members) == 2
    assert group.state == GroupState.PREPARING_REBALANCE

    # After the rebalance timeout the leader, which has not rejoined, is gone.
    assert d.sleep(1_000) == []
    assert member_join.done
    assert member_join.error == ErrorCode.NONE
    assert len(group.members) == 1
    assert member_join.response.member_id in group.members
    assert group.generation_id == 2


def test_complete_join_phase_in_empty_state_skips_rebalance():
    """Kafka: GroupMetadataManagerTest.testCompleteJoinPhaseInEmptyStateSkipsRebalance"""
    d = Driver()
    group = create_classic_group(d)
    join = d.join("", session_timeout_ms=1_000, rebalance_timeout_ms=1_000)
    assert join.records == []
    assert not join.done
    assert group.generation_id == 0
    assert group.state == GroupState.PREPARING_REBALANCE

    # Kafka forces DEAD with transitionTo and lets the armed join timer fire into the Dead group.
    # A coordinator's group becomes Dead when its partition is unloaded, which also answers the
    # parked join (NOT_COORDINATOR) and drops the group's timers.
    d.unload()
    assert group.state == GroupState.DEAD
    assert join.done
    assert join.error == ErrorCode.NOT_COORDINATOR

    assert d.sleep(3_000) == []
    assert group.generation_id == 0


def test_complete_join_phase_no_members_rejoined_extends_join_phase():
    """Kafka: GroupMetadataManagerTest.testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase"""
    d = Driver()
    group = create_classic_group(d)
    kw = dict(session_timeout_ms=30_000, rebalance_timeout_ms=10_000)

    # The first member joins and completes the join phase.
    first = join_and_complete_join(
        d, version=LATEST["JoinGroup"], member_id="", group_instance_id="first-instance-id", **kw
    )
    first_member_id = first.response.member_id

    # The second member joins; the group rebalances.
    second = d.join("", version=STATIC_V3, group_instance_id="second-instance-id", **kw)
    assert second.records == []
    assert not second.done

    # The first static member rejoins, completing the join phase.
    first = d.join(first_member_id, version=STATIC_V3, group_instance_id="first-instance-id", **kw)
    assert first.records == []
    assert first.done
    assert second.done
    assert first.error == ErrorCode.NONE
    assert second.error == ErrorCode.NONE
    assert len(group.members) == 2
    assert group.generation_id == 2
    second_member_id = second.response.member_id

    # Kafka calls prepareRebalance(group, "trigger rebalance") directly. A rebalance that none of
    # the members joins is started here by a third, dynamic member that joins (the rebalance
    # timeout stays the static members' 10000) and leaves again before the join phase ends.
    third = d.join("")
    assert not third.done
    assert group.state == GroupState.PREPARING_REBALANCE
    (third_member_id,) = [m for m in group.members if m not in (first_member_id, second_member_id)]
    leave = d.leave(third_member_id)
    assert leave.error == ErrorCode.NONE
    assert leave.response.members[0].error_code == ErrorCode.NONE

    assert len(group.members) == 2
    assert group.state == GroupState.PREPARING_REBALANCE
    assert awaiting_join(group) == 0

    # While neither member has rejoined, each expiry of the rebalance timeout extends the phase.
    assert d.sleep(10_000) == []
    assert join_deadline(d) - d.now_ms == 10_000
    assert d.sleep(10_000) == []
    assert join_deadline(d) - d.now_ms == 10_000

    assert group.state == GroupState.PREPARING_REBALANCE
    assert len(group.members) == 2
    assert group.generation_id == 2

    # Both members rejoin, which completes the join phase.
    first = d.join(first_member_id, version=STATIC_V3, group_instance_id="first-instance-id", **kw)
    assert first.records == []
    assert not first.done
    assert group.state == GroupState.PREPARING_REBALANCE
    assert len(group.members) == 2
    assert group.generation_id == 2

    second = d.join(
        second_member_id, version=STATIC_V3, group_instance_id="second-instance-id", **kw
    )
    assert second.records == []
    assert first.done
    assert second.done
    assert first.error == ErrorCode.NONE
    assert second.error == ErrorCode.NONE
    assert group.state == GroupState.COMPLETING_REBALANCE
    assert len(group.members) == 2
    assert group.generation_id == 3
