"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: the membership requests.

Validation runs in Kafka 4.x's order (GroupCoordinatorService checks first, then
``GroupMetadataManager.classicGroupJoin`` / ``classicGroupSync`` / ``classicGroupHeartbeat``
/ ``classicGroupLeave``). Spec rules GM-1..GM-9 (joining), GM-20..GM-24 (sync), GM-30..GM-31.
"""

from __future__ import annotations

import dataclasses

from coordspec.reference.errors import ErrorCode, append_error_to_response_error
from coordspec.reference.group.after_write import (
    LeaderAssignmentWritten,
    NewGroupWritten,
    StaticReplacementWritten,
    same_group,
)
from coordspec.reference.group.context import Context
from coordspec.reference.group.rebalance import (
    answer_parked_join_unknown,
    group_metadata_record,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    move,
    prepare_rebalance,
    remove_pending_sync_member,
    reschedule_heartbeat,
    reset_and_propagate_assignment_with_error,
    schedule_session,
    session_key,
    set_and_propagate_assignment,
)
from coordspec.reference.group.records import GroupMetadataKey, GroupMetadataValue, Record
from coordspec.reference.group.requests import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from coordspec.reference.group.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResponse,
    SyncGroupResponse,
)
from coordspec.reference.group.state import Group, Member, Parked
from coordspec.reference.group.transitions import (
    COMPLETING,
    DEAD,
    EMPTY,
    OUTCOMES,
    PREPARING,
    STABLE,
    Outcome,
)

# -- JoinGroup ------------------------------------------------------------------------


def join_group(c: Context, req: JoinGroup) -> None:
    if not req.group_id:
        c.reply(req, JoinGroupResponse(ErrorCode.INVALID_GROUP_ID, member_id=req.member_id))
        return
    config = c.config
    if not config.min_session_timeout_ms <= req.session_timeout_ms <= config.max_session_timeout_ms:
        c.reply(req, JoinGroupResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
        return
    group = c.groups.get(req.group_id)
    created = False
    if group is None:
        if req.member_id:
            c.reply(req, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
            return
        group = c.create_group(req.group_id)
        created = True
    writes_before = c.appends_issued
    if not accept_joining_member(c, group, req.member_id):
        group.remove(req.member_id, c.choices)
        c.reply(req, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=""))
    elif not req.member_id:
        join_new_member(c, group, req)
    else:
        join_existing_member(c, group, req)
    if created and c.appends_issued == writes_before:
        # GM-2: Kafka 4.x commits a newly created group to the log as an empty group.
        written = NewGroupWritten(group.group_id, group.incarnation, req.request_id)
        c.write(group.group_id, (empty_group_record(group),), written)


def empty_group_record(group: Group) -> Record:
    timestamp = group.state_timestamp_ms if group.state_timestamp_ms is not None else -1
    return Record(
        GroupMetadataKey(group.group_id), GroupMetadataValue("", 0, None, None, timestamp, ())
    )


def new_group_written(c: Context, after: NewGroupWritten, error: ErrorCode) -> None:
    """If the new group cannot be written it is gone again (Kafka reverts its snapshot);
    a join still parked in it learns the error."""
    group = same_group(c.groups, after.group_id, after.incarnation)
    if error == ErrorCode.NONE or group is None:
        return
    for member in group.members.values():
        if member.awaiting_join is not None and member.awaiting_join.request_id == after.request_id:
            c.reply_parked(
                member.awaiting_join,
                "JoinGroup",
                JoinGroupResponse(append_error_to_response_error(error)),
            )
            member.awaiting_join = None
    c.drop_group(group.group_id)


def accept_joining_member(c: Context, group: Group, member_id: str) -> bool:
    """GM-5: group.max.size counts parked members while preparing, members otherwise."""
    max_size = c.config.max_size
    member = group.members.get(member_id)
    if group.state in (EMPTY, DEAD):
        return True
    if group.state == PREPARING:
        return (
            member is not None and member.awaiting_join is not None
        ) or group.num_awaiting_join() < max_size
    return member is not None or len(group.members) < max_size


def join_new_member(c: Context, group: Group, req: JoinGroup) -> None:
    if group.state == DEAD:
        c.reply(req, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=""))
        return
    if not group.supports_protocols(req.protocol_type, req.protocols):
        c.reply(req, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=""))
        return
    instance_id = req.group_instance_id
    member_id = c.choices.member_id(instance_id if instance_id is not None else req.client_id)
    if instance_id is not None:
        if instance_id in group.static_members:
            update_static_member_then_rebalance_or_complete_join(c, group, req, member_id)
        else:
            add_member_then_rebalance_or_complete_join(c, group, req, member_id)
    elif req.requires_known_member_id:
        # GM-3: the member must come back with this id; until then it is only pending.
        group.pending_members[member_id] = None
        schedule_session(c, group, member_id, req.session_timeout_ms)
        c.reply(req, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
    else:
        add_member_then_rebalance_or_complete_join(c, group, req, member_id)


def join_existing_member(c: Context, group: Group, req: JoinGroup) -> None:
    member_id = req.member_id
    if group.state == DEAD:
        c.reply(req, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
        return
    if not group.supports_protocols(req.protocol_type, req.protocols):
        c.reply(req, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        return
    if member_id in group.pending_members:
        if req.group_instance_id is not None:
            # Pending ids are only handed to dynamic members; Kafka fails this internally,
            # and the service answers with the error alone.
            c.reply(req, JoinGroupResponse(ErrorCode.UNKNOWN_SERVER_ERROR))
            return
        add_member_then_rebalance_or_complete_join(c, group, req, member_id)
        return
    error = group.validate_member(member_id, req.group_instance_id)
    if error is not None:
        c.reply(req, JoinGroupResponse(error, member_id=member_id))
        return
    member = group.members[member_id]
    if group.state == EMPTY:
        c.reply(req, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
        return
    unchanged = member.matches(req.protocols)
    leader_in_stable = group.state == STABLE and group.is_leader(member_id)
    if (
        OUTCOMES[("JoinGroup", group.state)] == Outcome.ANSWER
        and unchanged
        and not leader_in_stable
    ):
        # GM-12: nothing changed for this member; it gets the current generation back.
        c.reply(req, current_generation_response(group, member_id))
        return
    update_member_then_rebalance_or_complete_join(c, group, member, req)


def current_generation_response(group: Group, member_id: str) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=ErrorCode.NONE,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        member_id=member_id,
        members=group.leader_members() if group.is_leader(member_id) else (),
    )


def add_member_then_rebalance_or_complete_join(
    c: Context, group: Group, req: JoinGroup, member_id: str
) -> None:
    member = Member(
        member_id=member_id,
        group_instance_id=req.group_instance_id,
        client_id=req.client_id,
        client_host=req.client_host,
        rebalance_timeout_ms=req.effective_rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=req.protocols,
        awaiting_join=Parked(req.request_id, req.api_version),
        is_new=True,
    )
    if group.state == PREPARING and group.previous_state == EMPTY:
        group.new_member_added = True
    group.add(member)
    # GM-32: a new member's id is dropped if it is not part of a generation in time.
    schedule_session(c, group, member_id, c.config.new_member_join_timeout_ms)
    maybe_prepare_rebalance_or_complete_join(c, group, "JoinGroup")


def update_member_then_rebalance_or_complete_join(
    c: Context, group: Group, member: Member, req: JoinGroup
) -> None:
    update_member(c, member, req)
    maybe_prepare_rebalance_or_complete_join(c, group, "JoinGroup")


def update_static_member_then_rebalance_or_complete_join(
    c: Context, group: Group, req: JoinGroup, new_member_id: str
) -> None:
    """GM-6: a static member rejoining without its id takes over from its previous id."""
    instance_id = req.group_instance_id
    assert instance_id is not None
    old_member_id = group.static_members[instance_id]
    leader_before = group.leader_id
    new_member = replace_static_member(c, group, instance_id, old_member_id, new_member_id)
    reschedule_heartbeat(c, group, new_member)
    written = StaticReplacementWritten(
        group_id=group.group_id,
        incarnation=group.incarnation,
        member_id=new_member_id,
        old_member_id=old_member_id,
        instance_id=instance_id,
        leader_before=leader_before,
        generation_id=group.generation_id,
        api_version=req.api_version,
        old_protocols=new_member.protocols,
        old_rebalance_timeout_ms=new_member.rebalance_timeout_ms,
        old_session_timeout_ms=new_member.session_timeout_ms,
    )
    update_member(c, new_member, req)
    if group.state == STABLE:
        if group.protocol_name == group.select_protocol(c.choices):
            # Stable and the protocol holds: write the new id, then answer without a rebalance.
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            c.write(group.group_id, (group_metadata_record(group, assignment),), written)
        else:
            maybe_prepare_rebalance_or_complete_join(c, group, "JoinGroup")
    elif group.state == COMPLETING:
        # The leader may already be assigning to the old id: start over.
        prepare_rebalance(c, group, "JoinGroup")
    else:
        maybe_complete_join_phase(c, group)


def update_member(c: Context, member: Member, req: JoinGroup) -> None:
    if member.awaiting_join is not None:
        # A JoinGroup that replaces a parked one leaves the earlier request unanswered, as in Kafka.
        c.abandon(member.awaiting_join)
    member.protocols = req.protocols
    member.rebalance_timeout_ms = req.effective_rebalance_timeout_ms
    member.session_timeout_ms = req.session_timeout_ms
    member.awaiting_join = Parked(req.request_id, req.api_version)


def replace_static_member(
    c: Context, group: Group, instance_id: str, old_member_id: str, new_member_id: str
) -> Member:
    old = group.members.pop(old_member_id)
    if old.awaiting_join is not None:
        c.reply_parked(
            old.awaiting_join,
            "JoinGroup",
            JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id),
        )
    if old.awaiting_sync is not None:
        c.reply_parked(
            old.awaiting_sync, "SyncGroup", SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID)
        )
    # The new id inherits everything but the parked requests (which were just fenced).
    new = dataclasses.replace(
        old, member_id=new_member_id, awaiting_join=None, awaiting_sync=None, is_new=False
    )
    group.members[new_member_id] = new
    if group.leader_id == old_member_id:
        group.leader_id = new_member_id
    group.static_members[instance_id] = new_member_id
    return new


def static_replacement_written(
    c: Context, after: StaticReplacementWritten, error: ErrorCode
) -> None:
    group = same_group(c.groups, after.group_id, after.incarnation)
    new_member = group.members.get(after.member_id) if group is not None else None
    parked = new_member.awaiting_join if new_member is not None else None
    if group is None or new_member is None or parked is None:
        return
    if error != ErrorCode.NONE:
        new_member.protocols = after.old_protocols
        new_member.rebalance_timeout_ms = after.old_rebalance_timeout_ms
        new_member.session_timeout_ms = after.old_session_timeout_ms
        new_member.awaiting_join = None
        old_member = replace_static_member(
            c, group, after.instance_id, new_member.member_id, after.old_member_id
        )
        reschedule_heartbeat(c, group, old_member)
        response = JoinGroupResponse(
            error_code=append_error_to_response_error(error),
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=after.leader_before or "",
            member_id="",
        )
    elif after.api_version >= 9:
        is_leader = group.is_leader(new_member.member_id)
        response = JoinGroupResponse(
            error_code=ErrorCode.NONE,
            generation_id=after.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            skip_assignment=is_leader,
            member_id=new_member.member_id,
            members=group.leader_members() if is_leader else (),
        )
    else:
        # Below v9 the old leader id comes back, so a rejoining static leader does not reassign.
        response = JoinGroupResponse(
            error_code=ErrorCode.NONE,
            generation_id=after.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=after.leader_before or "",
            member_id=new_member.member_id,
        )
    new_member.awaiting_join = None
    c.reply_parked(parked, "JoinGroup", response)


# -- SyncGroup --------------------------------------------------------------------------


def sync_group(c: Context, req: SyncGroup) -> None:
    if not req.group_id:
        c.reply(req, SyncGroupResponse(ErrorCode.INVALID_GROUP_ID))
        return
    if req.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        c.reply(req, SyncGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        return
    group = c.groups.get(req.group_id)
    if group is None:
        c.reply(req, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        return
    error = validate_sync(group, req)
    if error is not None:
        c.reply(req, SyncGroupResponse(error))
        return
    outcome = OUTCOMES[("SyncGroup", group.state)]
    if isinstance(outcome, ErrorCode):
        c.reply(req, SyncGroupResponse(outcome))
    elif outcome == Outcome.PARK:
        member = group.members[req.member_id]
        if member.awaiting_sync is not None:
            c.abandon(member.awaiting_sync)
        member.awaiting_sync = Parked(req.request_id, req.api_version)
        remove_pending_sync_member(c, group, req.member_id)
        if group.is_leader(req.member_id):
            write_leader_assignment(c, group, req)
    else:
        remove_pending_sync_member(c, group, req.member_id)
        member = group.members[req.member_id]
        c.reply(
            req,
            SyncGroupResponse(
                ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
            ),
        )


def validate_sync(group: Group, req: SyncGroup) -> ErrorCode | None:
    if group.state == DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    error = group.validate_member(req.member_id, req.group_instance_id)
    if error is not None:
        return error
    if req.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if req.protocol_type is not None and req.protocol_type != group.protocol_type:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if req.protocol_name is not None and req.protocol_name != group.protocol_name:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None


def write_leader_assignment(c: Context, group: Group, req: SyncGroup) -> None:
    """GM-22/GM-23: the group becomes Stable only once the leader's assignment is written."""
    assignment = {a.member_id: a.assignment for a in req.assignments}
    for member_id in group.members:
        assignment.setdefault(member_id, b"")
    written = LeaderAssignmentWritten(
        group.group_id, group.incarnation, req.generation_id, tuple(assignment.items())
    )
    c.write(group.group_id, (group_metadata_record(group, assignment),), written)


def leader_assignment_written(c: Context, after: LeaderAssignmentWritten, error: ErrorCode) -> None:
    group = same_group(c.groups, after.group_id, after.incarnation)
    if group is None or group.state != COMPLETING or group.generation_id != after.generation_id:
        return
    if error != ErrorCode.NONE:
        reset_and_propagate_assignment_with_error(c, group, append_error_to_response_error(error))
        maybe_prepare_rebalance_or_complete_join(c, group, "AppendCompleted")
        return
    set_and_propagate_assignment(c, group, dict(after.assignment))
    move(c, group, STABLE, "AppendCompleted")


# -- Heartbeat ----------------------------------------------------------------------------


def heartbeat(c: Context, req: Heartbeat) -> None:
    if not req.group_id:
        c.reply(req, HeartbeatResponse(ErrorCode.INVALID_GROUP_ID))
        return
    group = c.groups.get(req.group_id)
    if group is None:
        c.reply(req, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        return
    if group.state == DEAD:
        c.reply(req, HeartbeatResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return
    error = group.validate_member(req.member_id, req.group_instance_id)
    if error is None and req.generation_id != group.generation_id:
        error = ErrorCode.ILLEGAL_GENERATION
    if error is None:
        outcome = OUTCOMES[("Heartbeat", group.state)]
        assert isinstance(outcome, ErrorCode)
        error = outcome
        if group.state != EMPTY:
            reschedule_heartbeat(c, group, group.members[req.member_id])
    c.reply(req, HeartbeatResponse(error))


# -- LeaveGroup ---------------------------------------------------------------------------


def leave_group(c: Context, req: LeaveGroup) -> None:
    if not req.group_id:
        c.reply(req, LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID))
        return
    group = c.groups.get(req.group_id)
    if group is None:
        unknown = tuple(
            LeaveMemberResponse(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
            for m in req.members
        )
        c.reply(req, LeaveGroupResponse(ErrorCode.NONE, unknown))
        return
    if group.state == DEAD:
        c.reply(req, LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return
    answers = []
    for identity in req.members:
        error = leave_one(c, group, identity.member_id, identity.group_instance_id)
        answers.append(LeaveMemberResponse(identity.member_id, identity.group_instance_id, error))
    if any(a.error_code == ErrorCode.NONE for a in answers):
        if group.state in (STABLE, COMPLETING):
            prepare_rebalance(c, group, "LeaveGroup")
        elif group.state == PREPARING:
            maybe_complete_join_phase(c, group)
    c.reply(req, LeaveGroupResponse(ErrorCode.NONE, tuple(answers)))


def leave_one(c: Context, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
    """GM-31: remove one listed identity; the caller rebalances once for the batch."""
    if not member_id:
        static_id = group.static_members.get(instance_id) if instance_id is not None else None
        if static_id is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        remove_current_member(c, group, static_id)
        return ErrorCode.NONE
    if member_id in group.pending_members:
        remove_pending_member_quietly(c, group, member_id)
        return ErrorCode.NONE
    error = group.validate_member(member_id, instance_id)
    if error is not None:
        return error
    remove_current_member(c, group, member_id)
    return ErrorCode.NONE


def remove_pending_member_quietly(c: Context, group: Group, member_id: str) -> None:
    group.remove(member_id, c.choices)
    c.timers.cancel(session_key(group.group_id, member_id))


def remove_current_member(c: Context, group: Group, member_id: str) -> None:
    c.timers.cancel(session_key(group.group_id, member_id))
    member = group.members[member_id]
    answer_parked_join_unknown(c, member)
    if member.awaiting_sync is not None:
        # Kafka answers a parked JoinGroup of a leaving member, but not a parked SyncGroup.
        c.abandon(member.awaiting_sync)
        member.awaiting_sync = None
    group.remove(member_id, c.choices)
