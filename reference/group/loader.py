"""Rebuilding groups and offsets from ``__consumer_offsets`` records (GM-41, GM-42).

The last record per key wins and tombstones delete (a group's, the group but not its
offsets, CG-3). A group whose last metadata record lists members comes back Stable,
otherwise Empty; groups known only through offsets come back as Empty simple groups. An in-flight rebalance is not in the log, so a loaded group
resumes its last written generation. A transaction's offsets stay pending until its marker
is read (GM-57, GM-58). Follows Kafka 4.x ``GroupMetadataManager.replay``,
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker`` and ``onLoaded``.
"""

from __future__ import annotations

from collections.abc import Iterable

from coordspec.reference.errors import UsageError
from coordspec.reference.group.context import Context
from coordspec.reference.group.rebalance import prepare_rebalance, reschedule_heartbeat
from coordspec.reference.group.records import (
    CONSUMER_GROUP_KEYS,
    EndTransactionMarker,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from coordspec.reference.group.requests import Protocol
from coordspec.reference.group.state import Group, Member
from coordspec.reference.group.transitions import EMPTY, STABLE


def replay(records: Iterable[Record]) -> dict[str, Group]:
    """The groups that ``records``, read from the start of a partition, describe. A record's
    index is its position in the log."""
    groups: dict[str, Group] = {}
    for index, record in enumerate(records):
        key, value = record.key, record.value
        if isinstance(key, CONSUMER_GROUP_KEYS):
            continue  # consumer groups are rebuilt by consumer.replay (CG-41)
        if isinstance(key, GroupMetadataKey):
            if value is None:
                _delete(groups, key.group)
            elif isinstance(value, GroupMetadataValue):
                groups[key.group] = group_from_value(key.group, value, groups.get(key.group))
            else:
                raise UsageError(
                    f"record {index}: a group metadata key with a {type(value).__name__} value"
                )
        elif isinstance(key, OffsetCommitKey):
            if not (value is None or isinstance(value, OffsetCommitValue)):
                raise UsageError(
                    f"record {index}: an offset commit key with a {type(value).__name__} value"
                )
            group = groups.get(key.group)
            if group is None and value is not None:
                group = groups[key.group] = Group(key.group, in_log=True)
            if group is not None:
                group.replay_offset(key, value, record.producer_id, index)
        elif isinstance(key, EndTransactionMarker):
            for group in groups.values():
                group.end_transaction(record.producer_id, key.result)
        else:
            raise UsageError(f"record {index}: unknown key {key!r}")
    return groups


def _delete(groups: dict[str, Group], group_id: str) -> None:
    """A group's tombstone deletes the group, not its offsets: Kafka keeps them by group id
    (a consumer group that took the id of an Empty classic group has them, CG-3)."""
    group = groups.pop(group_id, None)
    if group is not None and (group.offsets or any(group.pending_offsets.values())):
        groups[group_id] = _with_offsets(Group(group_id, in_log=True), group)


def _with_offsets(group: Group, previous: Group) -> Group:
    group.offsets = previous.offsets
    group.offset_positions = previous.offset_positions
    group.pending_offsets = previous.pending_offsets
    return group


def group_from_value(group_id: str, value: GroupMetadataValue, previous: Group | None) -> Group:
    """The group a metadata record describes, keeping the offsets read before it."""
    group = Group(
        group_id,
        state=STABLE if value.members else EMPTY,
        state_timestamp_ms=value.current_state_timestamp
        if value.current_state_timestamp >= 0
        else None,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        generation_id=value.generation,
        leader_id=value.leader,
        in_log=True,
    )
    if previous is not None:
        _with_offsets(group, previous)
    for m in value.members:
        member = Member(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout
            if m.rebalance_timeout != -1
            else m.session_timeout,
            session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type,
            protocols=(Protocol(value.protocol or "", m.subscription),),
            assignment=m.assignment,
        )
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    if value.members:
        group.assignment_generation = value.generation
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def on_loaded(c: Context, group: Group) -> None:
    """Sessions restart from the load; a group over group.max.size rebalances at once."""
    for member in group.members.values():
        reschedule_heartbeat(c, group, member)
    if len(group.members) > c.config.max_size:
        prepare_rebalance(c, group, "LoadGroups")
