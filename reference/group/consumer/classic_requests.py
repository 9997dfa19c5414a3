"""Classic membership requests that name a consumer group's id (CG-36..CG-38), answered as Kafka
4.0 answers them with ``group.consumer.migration.policy=disabled``: the online migration of
a classic member into a consumer group is not modelled yet (spec/consumer-group.md)."""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import membership
from coordspec.reference.group.consumer.heartbeat import epoch_record, remove, write
from coordspec.reference.group.consumer.offsets import empty_group_tombstones
from coordspec.reference.group.consumer.regex import tombstones_of_leaving
from coordspec.reference.group.consumer.state import ConsumerGroup, ConsumerMember
from coordspec.reference.group.context import Context
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import (
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    Request,
    SyncGroup,
)
from coordspec.reference.group.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResponse,
    SyncGroupResponse,
)


def answer(c: Context, req: Request, group: ConsumerGroup) -> None:
    match req:
        case JoinGroup():
            _join(c, req, group)
        case SyncGroup():
            error = _member_error(group, req.member_id, req.group_instance_id)
            c.reply(req, SyncGroupResponse(error))
        case Heartbeat():
            error = _member_error(group, req.member_id, req.group_instance_id)
            c.reply(req, HeartbeatResponse(error))
        case LeaveGroup():
            _leave(c, req, group)


def _join(c: Context, req: JoinGroup, group: ConsumerGroup) -> None:
    """CG-36: an Empty consumer group gives way to the classic group the join creates."""
    if group.members:
        c.reply(req, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        return
    c.write(group.group_id, empty_group_tombstones(group.group_id), None)
    del c.consumer_groups[group.group_id]
    if group.store.offsets or group.store.pending_offsets:
        # Kafka keeps offsets by group id, whichever kind of group holds it (CG-60).
        classic = c.create_group(group.group_id)
        classic.offsets = group.store.offsets
        classic.offset_positions = group.store.offset_positions
        classic.pending_offsets = group.store.pending_offsets
    membership.join_group(c, req)


def _member_error(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ErrorCode:
    """CG-37: no classic member belongs to a consumer group here."""
    if instance_id is not None:
        static = group.static_member(instance_id)
        if static is not None and static.member_id != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    return ErrorCode.UNKNOWN_MEMBER_ID


def _leave(c: Context, req: LeaveGroup, group: ConsumerGroup) -> None:
    """CG-38: LeaveGroup removes consumer members as their leave would (an admin's
    removeMembersFromConsumerGroup); unknown ones are answered UNKNOWN_MEMBER_ID."""
    answers = []
    records: list[Record] = []
    leaving: list[ConsumerMember] = []
    for identity in req.members:
        if identity.group_instance_id is None:
            member = group.members.get(identity.member_id)
            error = ErrorCode.UNKNOWN_MEMBER_ID if member is None else ErrorCode.NONE
        else:
            member = group.static_member(identity.group_instance_id)
            if member is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif identity.member_id and identity.member_id != member.member_id:
                error, member = ErrorCode.FENCED_INSTANCE_ID, None
            else:
                error = ErrorCode.NONE
        if member is not None:
            records += remove(c, group, member)
            leaving.append(member)
        answers.append(LeaveMemberResponse(identity.member_id, identity.group_instance_id, error))
    if records:
        records += tombstones_of_leaving(group, leaving)  # CG-69
        records.append(epoch_record(group.group_id, group.group_epoch + 1))
    write(c, req.group_id, records, req, LeaveGroupResponse(ErrorCode.NONE, tuple(answers)))
