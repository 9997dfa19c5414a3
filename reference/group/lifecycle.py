"""DescribeGroups, ListGroups, DeleteGroups, and the periodic retention sweep.

Follows Kafka 4.x ``GroupMetadataManager.describeGroups`` / ``listGroups`` /
``validateDeleteGroup`` and ``GroupCoordinatorShard.cleanupGroupMetadata``.
Spec rules GM-55 (expiry), GM-60..GM-62; for consumer groups CG-64 and CG-65.
"""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode, append_error_to_response_error
from coordspec.reference.group.after_write import (
    Deletion,
    GroupsDeleted,
    OffsetsExpired,
)
from coordspec.reference.group.consumer.offsets import empty_group_tombstones
from coordspec.reference.group.consumer.state import ConsumerGroup
from coordspec.reference.group.context import Context
from coordspec.reference.group.offsets import expired_offset_keys, offsets_of
from coordspec.reference.group.records import GroupMetadataKey, OffsetCommitKey, Record
from coordspec.reference.group.requests import DeleteGroups, DescribeGroups, ListGroups
from coordspec.reference.group.responses import (
    DeletableGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsResponse,
)
from coordspec.reference.group.state import CONSUMER_PROTOCOL_TYPE, Group
from coordspec.reference.group.transitions import DEAD, EMPTY, STABLE

RETENTION_TIMER = ("ExpireOffsets",)


def describe_groups(c: Context, req: DescribeGroups) -> None:
    described = tuple(
        describe(c.groups.get(group_id) if group_id is not None else None, group_id)
        for group_id in req.groups
    )
    c.reply(req, DescribeGroupsResponse(described))


def describe(group: Group | None, group_id: str | None) -> DescribedGroup:
    """GM-60: members' metadata is shown only while Stable; an unknown group is Dead, not an error."""
    if group_id is None:
        return DescribedGroup(ErrorCode.INVALID_GROUP_ID, group_id, "")
    if group is None or group.state == DEAD or not group.in_log:
        return DescribedGroup(ErrorCode.NONE, group_id, str(DEAD))
    stable = group.state == STABLE
    members = tuple(
        DescribedMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name)
            if stable and group.protocol_name
            else b"",
            member_assignment=m.assignment,
        )
        for m in group.members.values()
    )
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=str(group.state),
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
    )


def list_groups(c: Context, req: ListGroups) -> None:
    """GM-61: every group this coordinator holds, optionally filtered by state (v4+) and, CG-30,
    by type (v5+, case-insensitive; a name that is no type matches nothing); consumer groups
    are listed with the protocol type "consumer" and their own states."""
    states = {s.strip().lower() for s in req.states_filter} if req.api_version >= 4 else set()
    types = {t.lower() for t in req.types_filter}
    classic = tuple(
        ListedGroup(g.group_id, g.protocol_type or "", str(g.state))
        for g in c.groups.values()
        if g.in_log and g.state != DEAD
    )
    consumer = tuple(
        ListedGroup(g.group_id, CONSUMER_PROTOCOL_TYPE, g.state, "consumer")
        for g in c.consumer_groups.values()
    )
    listed = tuple(
        g
        for g in classic + consumer
        if (not states or g.group_state.lower() in states) and (not types or g.group_type in types)
    )
    c.reply(req, ListGroupsResponse(ErrorCode.NONE, listed))


def offset_tombstones(group: Group) -> tuple[Record, ...]:
    """The group's offsets, then the partitions only a transaction holds (GM-59): Kafka's
    ``deleteAllOffsets``."""
    partitions = dict.fromkeys(group.offsets)
    for pending in group.pending_offsets.values():
        partitions.update(dict.fromkeys(pending))
    return tuple(Record(OffsetCommitKey(group.group_id, t, p), None) for (t, p) in partitions)


def _group_tombstones(group: Group | ConsumerGroup) -> tuple[Record, ...]:
    """The records of an empty group, not its offsets (GM-62, CG-64)."""
    if isinstance(group, ConsumerGroup):
        return empty_group_tombstones(group.group_id)
    return (Record(GroupMetadataKey(group.group_id), None),)


def delete_groups(c: Context, req: DeleteGroups) -> None:
    """GM-62: only an Empty group can be deleted; its offsets go with it."""
    results: dict[str | None, ErrorCode] = {}
    waiting: set[str] = set()
    deletable: list[Group | ConsumerGroup] = []
    for group_id in req.groups_names:
        group: Group | ConsumerGroup | None = None
        if group_id is not None:
            consumer = c.consumer_groups.get(group_id)
            group = consumer if consumer is not None else c.groups.get(group_id)
        if group_id is None:
            results[group_id] = ErrorCode.INVALID_GROUP_ID
        elif group is None or group.state == DEAD:
            results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
        elif group.state != EMPTY:  # CG-64: for a consumer group too, by its own state
            results[group_id] = ErrorCode.NON_EMPTY_GROUP
        else:
            results[group_id] = ErrorCode.NONE
            if group_id not in waiting:
                waiting.add(group_id)
                deletable.append(group)
    deletion = Deletion(req, results, waiting)
    if waiting:
        c.deletions[req.request_id] = deletion
    for group in deletable:
        c.write(
            group.group_id,
            (*offset_tombstones(_offsets(group)), *_group_tombstones(group)),
            GroupsDeleted(group.group_id, req.request_id),
        )
    if not waiting:
        answer_deletion(c, deletion)


def groups_deleted(c: Context, after: GroupsDeleted, error: ErrorCode) -> None:
    deletion = c.deletions[after.request_id]
    if error == ErrorCode.NONE:
        _drop(c, after.group_id)
    else:
        deletion.results[after.group_id] = append_error_to_response_error(error)
    deletion.waiting.discard(after.group_id)
    if not deletion.waiting:
        del c.deletions[after.request_id]
        answer_deletion(c, deletion)


def answer_deletion(c: Context, deletion: Deletion) -> None:
    results = tuple(DeletableGroupResult(g, e) for g, e in deletion.results.items())
    c.reply(deletion.request, DeleteGroupsResponse(results))


def sweep_expired_offsets(c: Context) -> None:
    """GM-55: runs every offsets.retention.check.interval.ms."""
    groups: list[Group | ConsumerGroup] = [*c.groups.values(), *c.consumer_groups.values()]
    for group in groups:
        if isinstance(group, ConsumerGroup):
            # CG-65: the members' subscriptions keep their topics' offsets.
            store = group.store
            store.subscribed_topics = {
                t for m in group.members.values() for t in m.subscribed_topic_names
            }
            empty = not group.members
        else:
            store, empty = group, group.state == EMPTY
        expired, all_expired = expired_offset_keys(c, store)
        delete_group = all_expired and empty
        if not expired and not delete_group:
            continue
        records = tuple(Record(OffsetCommitKey(group.group_id, t, p), None) for (t, p) in expired)
        if delete_group:
            records = (*records, *_group_tombstones(group))
        written = OffsetsExpired(group.group_id, store.incarnation, tuple(expired), delete_group)
        c.write(group.group_id, records, written)
    c.timers.schedule(RETENTION_TIMER, c.now_ms + c.config.offsets_retention_check_interval_ms)


def offsets_expired(c: Context, after: OffsetsExpired, error: ErrorCode) -> None:
    group = offsets_of(c, after.group_id)
    if error != ErrorCode.NONE or group is None or group.incarnation != after.incarnation:
        return
    for key in after.expired:
        group.offsets.pop(key, None)
    consumer = c.consumer_groups.get(after.group_id)
    empty = group.state == EMPTY if consumer is None else not consumer.members
    if after.delete_group and empty and not group.offsets:
        _drop(c, after.group_id)


def _offsets(group: Group | ConsumerGroup) -> Group:
    return group.store if isinstance(group, ConsumerGroup) else group


def _drop(c: Context, group_id: str) -> None:
    if c.consumer_groups.pop(group_id, None) is None:
        c.drop_group(group_id)
