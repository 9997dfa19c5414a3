"""What each consumer-group record means, applied to the groups it names (CG-40, CG-41).

The coordinator applies the records a heartbeat writes this way, and a coordinator loading
a partition rebuilds its consumer groups the same way (Kafka 4.0
``GroupMetadataManager.replay`` of the ConsumerGroup* records). The last record of a key
wins; tombstones remove.
"""

from __future__ import annotations

from collections.abc import Iterable

from coordspec.reference.errors import InvariantViolation, UsageError
from coordspec.reference.group.consumer.state import (
    LEAVE_EPOCH,
    NO_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    from_topic_partitions,
)
from coordspec.reference.group.records import (
    CONSUMER_GROUP_KEYS,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
)


def replay_consumer_groups(records: Iterable[Record]) -> dict[str, ConsumerGroup]:
    """The consumer groups that ``records``, read from the start of a partition, describe."""
    groups: dict[str, ConsumerGroup] = {}
    for record in records:
        if isinstance(record.key, CONSUMER_GROUP_KEYS):
            apply(groups, record)
    return groups


def _group(groups: dict[str, ConsumerGroup], group_id: str) -> ConsumerGroup:
    group = groups.get(group_id)
    if group is None:
        group = groups[group_id] = ConsumerGroup(group_id)
    return group


def apply(groups: dict[str, ConsumerGroup], record: Record) -> None:
    key, value = record.key, record.value
    match key:
        case ConsumerGroupMetadataKey():
            if value is None:
                groups.pop(key.group_id, None)
            else:
                assert isinstance(value, ConsumerGroupMetadataValue)
                _group(groups, key.group_id).group_epoch = value.epoch
        case ConsumerGroupMemberMetadataKey():
            if value is None:
                group = groups.get(key.group_id)
                if group is not None:
                    _remove_member(group, key.member_id)
                return
            assert isinstance(value, ConsumerGroupMemberMetadataValue)
            group = _group(groups, key.group_id)
            member = group.members.get(key.member_id) or ConsumerMember(key.member_id)
            group.members[key.member_id] = member.with_metadata(value)
            if value.instance_id is not None:
                group.static_members[value.instance_id] = key.member_id
        case ConsumerGroupTargetAssignmentMetadataKey():
            if value is not None:
                assert isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
                _group(groups, key.group_id).assignment_epoch = value.assignment_epoch
        case ConsumerGroupTargetAssignmentMemberKey():
            if value is None:
                if key.group_id in groups:
                    groups[key.group_id].target.pop(key.member_id, None)
            else:
                group = _group(groups, key.group_id)
                assert isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
                group.target[key.member_id] = from_topic_partitions(value.topic_partitions)
        case ConsumerGroupCurrentMemberAssignmentKey():
            if value is None and key.member_id not in getattr(
                groups.get(key.group_id), "members", {}
            ):
                return
            group = _group(groups, key.group_id)
            member = group.members.get(key.member_id) or ConsumerMember(key.member_id)
            if value is None:
                updated = member.with_assignment(
                    member.state, LEAVE_EPOCH, LEAVE_EPOCH, NO_PARTITIONS, NO_PARTITIONS
                )
            else:
                assert isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
                updated = member.with_assignment(
                    value.state,
                    value.member_epoch,
                    value.previous_member_epoch,
                    from_topic_partitions(value.assigned_partitions),
                    from_topic_partitions(value.partitions_pending_revocation),
                )
            _set_partition_epochs(group, member, updated)
            group.members[key.member_id] = updated
        case ConsumerGroupRegularExpressionKey():  # CG-68
            if value is None:
                if key.group_id in groups:
                    groups[key.group_id].resolved_regexes.pop(key.regular_expression, None)
            else:
                assert isinstance(value, ConsumerGroupRegularExpressionValue)
                resolved = frozenset(value.topics)
                _group(groups, key.group_id).resolved_regexes[key.regular_expression] = resolved
        case _:
            raise UsageError(f"not a consumer group record: {key!r}")


def _set_partition_epochs(
    group: ConsumerGroup, before: ConsumerMember, after: ConsumerMember
) -> None:
    """ConsumerGroup.maybeUpdatePartitionEpoch: a partition is held by one member at a time."""
    for partition in before.assigned | before.pending_revocation:
        group.partition_epochs.pop(partition, None)
    for partition in after.assigned | after.pending_revocation:
        if partition in group.partition_epochs:
            raise InvariantViolation(
                "AtMostOneOwnerPerPartition",
                f"consumer group {group.group_id!r}: {after.member_id} takes {partition}, "
                "which another member holds",
            )
        group.partition_epochs[partition] = after.member_epoch


def _remove_member(group: ConsumerGroup, member_id: str) -> None:
    member = group.members.pop(member_id, None)
    if member is None:
        return
    _set_partition_epochs(group, member, ConsumerMember(member_id))
    if member.instance_id is not None and group.static_members.get(member.instance_id) == member_id:
        del group.static_members[member.instance_id]
