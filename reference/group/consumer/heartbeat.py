"""ConsumerGroupHeartbeat (API 68, v0-v1): join, heartbeat, leave, and the timers that fence
a member (CG-1..CG-35). Follows Kafka 4.0 ``GroupCoordinatorService`` (the request checks)
and ``GroupMetadataManager.consumerGroupHeartbeat`` / ``consumerGroupLeave`` /
``consumerGroupFenceMember`` and their session and rebalance timers.
"""

from __future__ import annotations

from typing import Any

from coordspec.reference.assignors.server import ASSIGNORS
from coordspec.reference.errors import ErrorCode, append_error_to_response_error
from coordspec.reference.group.after_write import ConsumerGroupWritten
from coordspec.reference.group.consumer.assignor import (
    metadata_changed,
    subscribed_topics,
    take_subscription_metadata,
    target_assignment,
)
from coordspec.reference.group.consumer.reconcile import reconcile
from coordspec.reference.group.consumer.regex import (
    UpdateRegularExpressionStatus,
    resolution_records,
    tombstones_of_leaving,
    update_regular_expressions,
)
from coordspec.reference.group.consumer.replay import apply
from coordspec.reference.group.consumer.state import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    NO_PARTITIONS,
    STATIC_LEAVE_EPOCH,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    MemberAssignment,
    Partitions,
    from_topic_partitions,
    to_topic_partitions,
)
from coordspec.reference.group.context import Context
from coordspec.reference.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    Record,
)
from coordspec.reference.group.requests import ConsumerGroupHeartbeat, LeaveGroup
from coordspec.reference.group.responses import ConsumerGroupHeartbeatResponse, LeaveGroupResponse
from coordspec.reference.group.transitions import DEAD, EMPTY

# The timers carry the names of tla/ConsumerGroup.tla's actions that fire them.
SESSION_TIMER = "SessionTimeout"
REBALANCE_TIMER = "RebalanceTimeout"
# Kafka 4.0's ConsumerGroupHeartbeatRequest.CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION.
CLIENT_MEMBER_ID_VERSION = 1


class _Refused(Exception):
    def __init__(self, error: ErrorCode) -> None:
        self.error = error


def consumer_group_heartbeat(c: Context, req: ConsumerGroupHeartbeat) -> None:
    error = invalid(req)
    if error is not None:
        c.reply(req, ConsumerGroupHeartbeatResponse(error))
        return
    response = _unchanged(c, req)
    if response is not None:
        c.reply(req, response)
        return
    try:
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            records, response = _leave(c, req)
        else:
            records, response = _heartbeat(c, req)
    except _Refused as refused:
        c.reply(req, ConsumerGroupHeartbeatResponse(refused.error))
        return
    write(c, req.group_id, records, req, response)


def invalid(req: ConsumerGroupHeartbeat) -> ErrorCode | None:
    """CG-1: the checks Kafka makes before the group is looked at (GroupCoordinatorService)."""
    member_id_required = (
        req.api_version >= CLIENT_MEMBER_ID_VERSION
        or req.member_epoch > 0
        or req.member_epoch == LEAVE_EPOCH
    )
    if member_id_required and _blank(req.member_id):
        return ErrorCode.INVALID_REQUEST
    if _blank(req.group_id) or _blank(req.instance_id) or _blank(req.rack_id):
        return ErrorCode.INVALID_REQUEST
    if req.member_epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1 or req.topic_partitions != ():
            return ErrorCode.INVALID_REQUEST
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return ErrorCode.INVALID_REQUEST
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            return ErrorCode.INVALID_REQUEST
    elif req.member_epoch < STATIC_LEAVE_EPOCH:
        return ErrorCode.INVALID_REQUEST
    if req.server_assignor is not None and req.server_assignor not in ASSIGNORS:
        return ErrorCode.UNSUPPORTED_ASSIGNOR
    return None


def _unchanged(c: Context, req: ConsumerGroupHeartbeat) -> ConsumerGroupHeartbeatResponse | None:
    """The answer to a heartbeat that can change nothing, or None when it may: from a dynamic
    member at its current epoch, reconciled to a current target, sending no new subscription
    or metadata, while no new metadata image is unchecked. It only renews the session (CG-33):
    what ``_heartbeat`` does for it without building a member, a record or a write."""
    if req.member_epoch <= 0 or req.group_id in c.groups:
        return None
    group = c.consumer_groups.get(req.group_id)
    if (
        group is None
        or group.group_epoch != group.assignment_epoch
        or group.metadata_version != c.metadata_version
    ):
        return None
    member = group.members.get(req.member_id)
    if (
        member is None
        or member.member_epoch != req.member_epoch
        or not member.is_reconciled_to(group.assignment_epoch)
        or req.instance_id is not None
        or req.rack_id is not None
        or req.rebalance_timeout_ms != -1
        or req.server_assignor is not None
        or req.subscribed_topic_names is not None
        or req.subscribed_topic_regex is not None
        or req.client_id != member.client_id
        or req.client_host != member.client_host
    ):
        return None
    c.timers.schedule(
        (SESSION_TIMER, group.group_id, member.member_id),
        c.now_ms + c.config.consumer_session_timeout_ms,
    )
    return ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE,
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        heartbeat_interval_ms=c.config.consumer_heartbeat_interval_ms,
    )


def _blank(value: str | None) -> bool:
    """Kafka's throwIfEmptyString: a value given that is empty once trimmed."""
    return value is not None and value.strip() == ""


def _consumer_group(c: Context, group_id: str, create: bool) -> ConsumerGroup | None:
    """CG-3: the consumer group under ``group_id``; None when a join creates it. A classic
    group under the id refuses, unless a join finds it Empty, when it is deleted to make room
    (Kafka's maybeDeleteEmptyClassicGroup) and its offsets stay with the id."""
    classic = c.groups.get(group_id)
    if classic is not None and classic.state != DEAD:
        if not (create and classic.state == EMPTY):
            raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND)
        c.write(group_id, (Record(GroupMetadataKey(group_id), None),), None)
        c.drop_group(group_id)
        if classic.offsets or any(classic.pending_offsets.values()):
            # Kafka keeps offsets by group id, whichever kind of group holds it (CG-60): a
            # simple consumer's commits are the new group's.
            c.consumer_groups[group_id] = ConsumerGroup(group_id, offset_store=classic)
    group = c.consumer_groups.get(group_id)
    if group is None and not create:
        raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND)
    return group


def _check_epoch(member: ConsumerMember, epoch: int, owned: Partitions | None) -> None:
    """CG-5: an epoch ahead is fenced; one behind only if it is the previous epoch and the
    member owns no more than it is assigned (the answer that bumped it may have been lost)."""
    if epoch > member.member_epoch:
        raise _Refused(ErrorCode.FENCED_MEMBER_EPOCH)
    if epoch < member.member_epoch and (
        epoch != member.previous_member_epoch or owned is None or not owned <= member.assigned
    ):
        raise _Refused(ErrorCode.FENCED_MEMBER_EPOCH)


def _heartbeat(
    c: Context, req: ConsumerGroupHeartbeat
) -> tuple[list[Record], ConsumerGroupHeartbeatResponse]:
    create = req.member_epoch == JOIN_EPOCH
    found = _consumer_group(c, req.group_id, create)
    group = found if found is not None else ConsumerGroup(req.group_id)
    member_id = req.member_id
    if len(group.members) >= c.config.consumer_max_size and (
        not member_id or member_id not in group.members
    ):
        raise _Refused(ErrorCode.GROUP_MAX_SIZE_REACHED)  # CG-4
    if not member_id:
        member_id = c.choices.member_id(req.client_id)  # v0: the coordinator names it
    owned = None if req.topic_partitions is None else from_topic_partitions(req.topic_partitions)
    records: list[Record] = []
    member, replaced = _member(group, req, member_id, owned, records)

    # CG-10: a changed subscription (a new member's included) bumps the group epoch.
    changes = _changes(member, req)
    updated = member.changed(**changes) if changes else member
    bump = False
    if changes or (member_id not in group.members and not replaced):
        records.append(_subscription_record(group.group_id, updated))
        bump = updated.subscribed_topic_names != member.subscribed_topic_names
    status = update_regular_expressions(group, member, updated, records)  # CG-66, CG-67
    if status is None:
        raise _Refused(ErrorCode.INVALID_REGULAR_EXPRESSION)
    bump |= status == UpdateRegularExpressionStatus.REGEX_UPDATED_AND_RESOLVED
    bump |= group.group_epoch == 0  # CG-10: a new group moves away from epoch 0
    bump |= metadata_changed(c, group)  # CG-70
    group_epoch = group.group_epoch + 1 if bump else group.group_epoch
    if bump:
        records.append(epoch_record(group.group_id, group_epoch))

    if group_epoch > group.assignment_epoch:  # CG-11: a new target at the new epoch
        members = {m: x for m, x in group.members.items() if m != replaced}
        members[member_id] = updated
        current = {m: group.target_of(m, x.instance_id) for m, x in members.items()}
        metadata = subscribed_topics(group, members, c.topics, c.topic_ids)
        targets = target_assignment(group, members, metadata, current, c.topic_ids)
        for m, partitions in targets.items():
            if partitions != current[m]:
                records.append(_target_record(group.group_id, m, partitions))
        records.append(
            Record(
                ConsumerGroupTargetAssignmentMetadataKey(group.group_id),
                ConsumerGroupTargetAssignmentMetadataValue(group_epoch),
            )
        )
        target_epoch, target = group_epoch, targets[member_id]
    else:
        target_epoch = group.assignment_epoch
        target = group.target_of(member_id, updated.instance_id)

    assignment = reconciled = updated.assignment()
    if not updated.is_reconciled_to(target_epoch):  # CG-20
        reconciled = reconcile(updated, target_epoch, target, group.partition_epoch, owned)
        if reconciled != assignment:
            records.append(_current_record(group.group_id, member_id, reconciled))
            if reconciled.state == UNREVOKED_PARTITIONS:  # CG-34
                schedule_rebalance_timeout(
                    c, group, member_id, reconciled.member_epoch, updated.rebalance_timeout_ms
                )
            else:
                cancel_rebalance_timeout(c, group, member_id)
    c.timers.schedule(
        (SESSION_TIMER, group.group_id, member_id), c.now_ms + c.config.consumer_session_timeout_ms
    )  # CG-33
    full = create or (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and req.topic_partitions is not None
    )
    show = full or reconciled.assigned != member.assigned
    return records, ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE,
        member_id=member_id,
        member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=c.config.consumer_heartbeat_interval_ms,
        assignment=to_topic_partitions(reconciled.assigned) if show else None,
    )


def _member(
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeat,
    member_id: str,
    owned: Partitions | None,
    records: list[Record],
) -> tuple[ConsumerMember, str | None]:
    """The member the request is from, and the member id it replaces (CG-5, CG-31, CG-32,
    CG-35); the records of a replacement go to ``records``."""
    create = req.member_epoch == JOIN_EPOCH
    if req.instance_id is None:
        known = group.members.get(member_id)
        if known is None and not create:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        if known is not None:
            _check_epoch(known, req.member_epoch, owned)
        return known or ConsumerMember(member_id), None
    static = group.static_member(req.instance_id)
    if create and static is None:
        return group.members.get(member_id) or ConsumerMember(member_id), None
    if static is None:
        raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
    if not create:
        if static.member_id != member_id:
            raise _Refused(ErrorCode.FENCED_INSTANCE_ID)
        _check_epoch(static, req.member_epoch, owned)
        return static, None
    if static.member_epoch != STATIC_LEAVE_EPOCH:
        raise _Refused(ErrorCode.UNRELEASED_INSTANCE_ID)  # CG-31
    # CG-32: the new member id takes the place (and assignment) the instance kept.
    member = static.changed(member_id=member_id, member_epoch=0, previous_member_epoch=0)
    records += _member_tombstones(group.group_id, static.member_id)
    records.append(_subscription_record(group.group_id, member))
    records.append(
        _target_record(group.group_id, member_id, group.target_of(static.member_id, None))
    )
    records.append(_current_record(group.group_id, member_id, member.assignment()))
    return member, static.member_id


def _leave(
    c: Context, req: ConsumerGroupHeartbeat
) -> tuple[list[Record], ConsumerGroupHeartbeatResponse]:
    """CG-6, CG-7: -1 leaves (the member is fenced out); -2 keeps a static member's place."""
    group = c.consumer_groups.get(req.group_id)
    if group is None:
        raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND)
    left = ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch
    )
    if req.instance_id is None:
        member = group.members.get(req.member_id)
        if member is None:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        return fence(c, group, member), left
    static = group.static_member(req.instance_id)
    if static is None:
        raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
    if static.member_id != req.member_id:
        raise _Refused(ErrorCode.FENCED_INSTANCE_ID)
    if req.member_epoch == STATIC_LEAVE_EPOCH:
        away = static.assignment()._replace(
            member_epoch=STATIC_LEAVE_EPOCH, pending_revocation=NO_PARTITIONS
        )
        return [_current_record(group.group_id, static.member_id, away)], left
    return fence(c, group, static), left


def fence(c: Context, group: ConsumerGroup, member: ConsumerMember) -> list[Record]:
    """CG-8: the member's records go, and the group moves to a new epoch without it."""
    return [
        *remove(c, group, member),
        *tombstones_of_leaving(group, (member,)),  # CG-69
        epoch_record(group.group_id, group.group_epoch + 1),
    ]


def remove(c: Context, group: ConsumerGroup, member: ConsumerMember) -> list[Record]:
    c.timers.cancel((SESSION_TIMER, group.group_id, member.member_id))
    cancel_rebalance_timeout(c, group, member.member_id)
    return _member_tombstones(group.group_id, member.member_id)


def epoch_record(group_id: str, epoch: int) -> Record:
    return Record(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch))


def schedule_rebalance_timeout(
    c: Context, group: ConsumerGroup, member_id: str, member_epoch: int, timeout_ms: int
) -> None:
    group.revoking_epochs[member_id] = member_epoch
    c.timers.schedule((REBALANCE_TIMER, group.group_id, member_id), c.now_ms + timeout_ms)


def cancel_rebalance_timeout(c: Context, group: ConsumerGroup, member_id: str) -> None:
    group.revoking_epochs.pop(member_id, None)
    c.timers.cancel((REBALANCE_TIMER, group.group_id, member_id))


def on_session_timeout(c: Context, group_id: str, member_id: str) -> None:
    """CG-33: a member not heard from for group.consumer.session.timeout.ms is fenced."""
    group = c.consumer_groups.get(group_id)
    member = None if group is None else group.members.get(member_id)
    if group is not None and member is not None:
        write(c, group_id, fence(c, group, member), None, None)


def resolve_regular_expressions(c: Context, group_id: str) -> None:
    """CG-68: the group's regexes resolved against the coordinator's topics now (Kafka's
    asynchronous refresh and handleRegularExpressionsResult, as one step). The epoch moves
    when a regex's topics changed, or when the group's subscribed topics no longer match its
    subscription metadata: a member that left the last subscriber of a regex for a new one
    took the old regex's topics out of the subscription without moving the epoch. A move
    takes the new subscription metadata at once, as Kafka writes it with the epoch."""
    group = c.consumer_groups.get(group_id)
    if group is None:
        return
    records, changed = resolution_records(group, c.topics, c.metadata_version, c.now_ms)
    # Unchanged resolutions leave the subscribed topics as they are now.
    changed = changed or group.subscription_metadata != subscribed_topics(
        group, group.members, c.topics, c.topic_ids
    )
    if changed:
        records.append(epoch_record(group_id, group.group_epoch + 1))
    write(c, group_id, records, None, None)
    if changed:
        take_subscription_metadata(c, c.consumer_groups[group_id])


def on_rebalance_timeout(c: Context, group_id: str, member_id: str) -> None:
    """CG-34: a member still revoking at the epoch it was asked to is fenced."""
    group = c.consumer_groups.get(group_id)
    member = None if group is None else group.members.get(member_id)
    if group is None or member is None:
        return
    if group.revoking_epochs.pop(member_id, None) == member.member_epoch:
        write(c, group_id, fence(c, group, member), None, None)


def write(
    c: Context,
    group_id: str,
    records: list[Record],
    req: ConsumerGroupHeartbeat | LeaveGroup | None,
    response: ConsumerGroupHeartbeatResponse | LeaveGroupResponse | None,
) -> None:
    """CG-40: apply the records now, answer once they are written."""
    if not records:
        if req is not None and response is not None:
            c.reply(req, response)
        return
    before = c.consumer_groups.get(group_id)
    # Offsets are not the heartbeat's records: the snapshot shares them, a restore drops them.
    snapshot = None if before is None else before.copy(store=before.store)
    for record in records:
        apply(c.consumer_groups, record)
    if any(
        isinstance(r.key, ConsumerGroupTargetAssignmentMetadataKey) and r.value is not None
        for r in records
    ):
        group = c.consumer_groups[group_id]  # CG-70: the metadata of the new target
        take_subscription_metadata(c, group)
    c.write(group_id, tuple(records), ConsumerGroupWritten(group_id, req, response, snapshot))


def consumer_group_written(c: Context, after: ConsumerGroupWritten, error: ErrorCode) -> None:
    # A group unloaded, or given up to a classic group, since the write stays gone.
    if error != ErrorCode.NONE and after.group_id in c.consumer_groups:
        if after.before is None:
            del c.consumer_groups[after.group_id]
        else:
            # Offsets are not the heartbeat's records: those written meanwhile stay.
            current = c.consumer_groups[after.group_id].store
            c.consumer_groups[after.group_id] = after.before.copy(store=current)
    if after.request is None or after.response is None:
        return
    if error == ErrorCode.NONE:
        c.reply(after.request, after.response)
    elif isinstance(after.request, LeaveGroup):
        c.reply(after.request, LeaveGroupResponse(append_error_to_response_error(error)))
    else:
        c.reply(
            after.request, ConsumerGroupHeartbeatResponse(append_error_to_response_error(error))
        )


def _changes(member: ConsumerMember, req: ConsumerGroupHeartbeat) -> dict[str, Any]:
    """The member's fields the request changes (a field the request leaves None, or -1 for
    the rebalance timeout, is unchanged), as Kafka's ConsumerGroupMember.Builder.maybeUpdate*."""
    given: dict[str, Any] = {"client_id": req.client_id, "client_host": req.client_host}
    if req.instance_id is not None:
        given["instance_id"] = req.instance_id
    if req.rack_id is not None:
        given["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        given["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        given["server_assignor"] = req.server_assignor
    if req.subscribed_topic_names is not None:
        given["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
    if req.subscribed_topic_regex is not None:
        given["subscribed_topic_regex"] = req.subscribed_topic_regex
    return {k: v for k, v in given.items() if getattr(member, k) != v}


def _metadata(member: ConsumerMember) -> ConsumerGroupMemberMetadataValue:
    return ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        subscribed_topic_regex=member.subscribed_topic_regex,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor,
    )


def _subscription_record(group_id: str, member: ConsumerMember) -> Record:
    return Record(ConsumerGroupMemberMetadataKey(group_id, member.member_id), _metadata(member))


def _target_record(group_id: str, member_id: str, partitions: Partitions) -> Record:
    return Record(
        ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
        ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(partitions)),
    )


def _current_record(group_id: str, member_id: str, assignment: MemberAssignment) -> Record:
    return Record(
        ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=assignment.member_epoch,
            previous_member_epoch=assignment.previous_member_epoch,
            state=assignment.state,
            assigned_partitions=to_topic_partitions(assignment.assigned),
            partitions_pending_revocation=to_topic_partitions(assignment.pending_revocation),
        ),
    )


def _member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """In Kafka's order: the current assignment, the target, then the member."""
    return [
        Record(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        Record(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None),
        Record(ConsumerGroupMemberMetadataKey(group_id, member_id), None),
    ]
