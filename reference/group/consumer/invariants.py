"""The consumer group's safety properties, each under one name (spec/consumer-group.md).

The coordinator's ``Monitor`` (``reference/group/invariants.py``) runs ``STATE_CHECKS`` on
every consumer group a step touched, after the step, as it checks classic groups.
"""

from __future__ import annotations

from coordspec.reference.errors import Invariant, InvariantViolation, registry
from coordspec.reference.group.consumer.state import STATIC_LEAVE_EPOCH, ConsumerGroup, Partition

INVARIANTS: dict[str, Invariant] = registry(
    Invariant(
        "AtMostOneOwnerPerPartition",
        "CG-21",
        "no partition is assigned to, or being revoked from, two members of a consumer group",
        tla=True,
    ),
    Invariant(
        "MemberEpochNotAheadOfGroup",
        "CG-12",
        "no member's epoch, and not the target assignment's, is ahead of the group epoch",
        tla=True,
    ),
)


def check_at_most_one_owner_per_partition(group: ConsumerGroup) -> None:
    owners: dict[Partition, str] = {}
    for member in group.members.values():
        for partition in member.assigned | member.pending_revocation:
            other = owners.setdefault(partition, member.member_id)
            if other != member.member_id:
                raise InvariantViolation(
                    "AtMostOneOwnerPerPartition",
                    f"consumer group {group.group_id!r}: {partition} held by {other} "
                    f"and {member.member_id}",
                )


def check_member_epoch_not_ahead_of_group(group: ConsumerGroup) -> None:
    if group.assignment_epoch > group.group_epoch:
        raise InvariantViolation(
            "MemberEpochNotAheadOfGroup",
            f"consumer group {group.group_id!r}: target epoch {group.assignment_epoch} "
            f"ahead of group epoch {group.group_epoch}",
        )
    for member in group.members.values():
        if member.member_epoch > group.group_epoch or member.member_epoch < STATIC_LEAVE_EPOCH:
            raise InvariantViolation(
                "MemberEpochNotAheadOfGroup",
                f"consumer group {group.group_id!r}: member {member.member_id} at epoch "
                f"{member.member_epoch}, group epoch {group.group_epoch}",
            )


STATE_CHECKS = (check_at_most_one_owner_per_partition, check_member_epoch_not_ahead_of_group)
