"""Bad input: a client's invalid values get Kafka's error codes; a caller's misuse of the
reference raises UsageError naming the state and the input."""

from __future__ import annotations

import pytest
from driver import Driver
from kafka_context import join_dynamic_and_complete_join, join_dynamic_and_complete_rebalance

from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.group import (
    AppendCompleted,
    GroupConfig,
    GroupCoordinator,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    LoadGroups,
    MemberIdentity,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
    Tick,
)
from coordspec.reference.group.records import GroupMetadataKey, OffsetCommitValue, Record

# -- a client's invalid values: Kafka's answers ---------------------------------------


@pytest.mark.parametrize("session_timeout_ms", [-1, 0, 9, 600_001, 2**31 - 1])
def test_session_timeout_out_of_bounds_is_invalid(session_timeout_ms):
    d = Driver()
    join = d.join(session_timeout_ms=session_timeout_ms)
    assert join.error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert "group-id" not in d.coordinator.groups


@pytest.mark.parametrize("api", ["join", "sync", "heartbeat", "leave"])
def test_empty_group_id_is_invalid_for_membership_requests(api):
    d = Driver()
    pending = {
        "join": lambda: d.join(group_id=""),
        "sync": lambda: d.sync("m", 1, group_id=""),
        "heartbeat": lambda: d.heartbeat("m", 1, group_id=""),
        "leave": lambda: d.leave("m", group_id=""),
    }[api]()
    assert pending.error == ErrorCode.INVALID_GROUP_ID


def test_null_group_id_is_invalid_for_offsets():
    d = Driver()
    commit = d.commit({("t", 0): 1}, group_id=None)
    assert commit.response.topics[0].partitions[0].error_code == ErrorCode.INVALID_GROUP_ID
    assert d.fetch({"t": (0,)}, group_id=None).error == ErrorCode.INVALID_GROUP_ID


def test_negative_generation_and_unknown_members_are_answered_not_raised():
    d = Driver()
    join = join_dynamic_and_complete_join(d, check_records=False)
    member = join.response.member_id
    assert d.sync(member, -5).error == ErrorCode.ILLEGAL_GENERATION
    assert d.heartbeat("nobody", 1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert d.join("nobody").error == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_v5_without_protocol_type_or_name_is_inconsistent():
    d = Driver()
    join = join_dynamic_and_complete_join(d, check_records=False)
    sync = d.sync(join.response.member_id, 1, protocol_type=None)
    assert sync.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # Below v5 the fields do not exist, and the same sync is accepted.
    assert (
        d.sync(join.response.member_id, 1, version=4, protocol_type=None, protocol_name=None).error
        == ErrorCode.NONE
    )


# -- a caller's misuse: UsageError ----------------------------------------------------


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: JoinGroup(1, 10, 0, group_id="g"), "JoinGroup: version 10 is not modelled"),
        (lambda: SyncGroup(1, -1, 0, group_id="g"), "SyncGroup: version -1"),
        (
            lambda: OffsetCommit(1, 1, 0, group_id="g"),
            "OffsetCommit: version 1 is not modelled (the reference answers v2-v9)",
        ),
        (lambda: OffsetFetch(1, 0, 0, group_id="g"), "OffsetFetch: version 0"),
        (lambda: Heartbeat(1, 4, -3, group_id="g"), "Heartbeat: now_ms must be a non-negative int"),
        (lambda: Tick(-1), "Tick: now_ms"),
        (
            lambda: JoinGroup(1, 4, 0, group_id="g", group_instance_id="i"),
            "group_instance_id needs v5+",
        ),
        (
            lambda: LeaveGroup(
                1, 2, 0, group_id="g", members=(MemberIdentity("a"), MemberIdentity("b"))
            ),
            "exactly one member",
        ),
        (
            lambda: OffsetCommit(1, 5, 0, group_id="g", retention_time_ms=10),
            "retention_time_ms exists only in v2-v4",
        ),
        (lambda: OffsetFetch(1, 1, 0, group_id="g", topics=None), "needs v2+"),
        (lambda: GroupConfig(max_size=0), "max_size"),
        (lambda: GroupConfig(min_session_timeout_ms=10, max_session_timeout_ms=5), "exceeds"),
        (lambda: GroupConfig(initial_rebalance_delay_ms=-1), "initial_rebalance_delay_ms"),
    ],
)
def test_malformed_inputs_are_usage_errors(make, words):
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_time_cannot_go_backwards():
    c = GroupCoordinator(now_ms=1_000)
    with pytest.raises(UsageError, match="now_ms 999 is before the coordinator's time 1000"):
        c.handle(Tick(999))


def test_a_request_id_cannot_be_reused_while_its_request_waits():
    c = GroupCoordinator()
    c.handle(
        JoinGroup(7, 3, 0, group_id="g", protocols=(), protocol_type="consumer")
    )  # INCONSISTENT: answered
    from coordspec.reference.group import Protocol

    c.handle(JoinGroup(8, 3, 0, group_id="g", protocols=(Protocol("range"),)))  # parked
    with pytest.raises(UsageError, match="request_id 8 is still awaiting its reply"):
        c.handle(JoinGroup(8, 3, 0, group_id="g", protocols=(Protocol("range"),)))


def test_unknown_append_completion_is_a_usage_error():
    c = GroupCoordinator(complete_appends=False)
    with pytest.raises(UsageError, match="append 3 is not pending"):
        c.handle(AppendCompleted(3, 0))


def test_handle_rejects_what_is_not_an_event():
    with pytest.raises(UsageError, match="str is not a coordinator event"):
        GroupCoordinator().handle("JoinGroup")


def test_unknown_group_lookup_names_the_known_groups():
    d = Driver()
    join_dynamic_and_complete_join(d, check_records=False)
    with pytest.raises(UsageError, match=r"no group 'other' \(groups: \['group-id'\]\)"):
        d.group("other")


def test_loading_a_malformed_record_names_it():
    bad = Record(GroupMetadataKey("g"), OffsetCommitValue(1, -1, "", 0))
    with pytest.raises(
        UsageError, match="record 0: a group metadata key with a OffsetCommitValue value"
    ):
        GroupCoordinator().handle(LoadGroups((bad,), 0))


def test_loading_a_group_twice_is_a_usage_error():
    d = Driver()
    join_dynamic_and_complete_rebalance(d, create_group=False)
    with pytest.raises(UsageError, match="group 'group-id' is already loaded"):
        d.load(d.log)


def test_describe_and_list_below_v4_carry_no_instance_ids_or_states():
    d = Driver()
    d.join(version=5, group_instance_id="i", session_timeout_ms=10_000)
    old, new = d.describe("group-id", version=3), d.describe("group-id", version=4)
    assert old.response.groups[0].members[0].group_instance_id is None
    assert new.response.groups[0].members[0].group_instance_id == "i"
    assert d.list_groups(version=3).response.groups[0].group_state == ""
    assert d.list_groups(version=4).response.groups[0].group_state == "PreparingRebalance"
