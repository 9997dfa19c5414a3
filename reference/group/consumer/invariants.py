"""The consumer group's safety properties, each under one name (spec/consumer-group.md).

The coordinator's ``Monitor`` (``reference/group/invariants.py``) runs ``STATE_CHECKS`` on
every consumer group a step touched, after the step, as it checks classic groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.errors import Invariant, InvariantViolation, registry
from coordspec.reference.group.consumer.state import STATIC_LEAVE_EPOCH, ConsumerGroup, Partition
from coordspec.reference.group.requests import OffsetCommit

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
    Invariant(
        "NoStaleMemberEpochCommit",
        "CG-60",
        "an accepted OffsetCommit to a consumer group came from a member at its current epoch, "
        "or without a member epoch while the group had no members",
        tla=True,
    ),
)


def check_at_most_one_owner_per_partition(group: ConsumerGroup) -> None:
    held = [m.assigned | m.pending_revocation for m in group.members.values()]
    if len(frozenset().union(*held)) == sum(map(len, held)):
        return  # no two members' partitions meet: the walk below names the first that do
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


@dataclass(frozen=True, slots=True)
class CommitContext:
    """A consumer group's members' epochs when an OffsetCommit reached the coordinator."""

    request: OffsetCommit
    member_epochs: dict[str, int]


def check_no_stale_member_epoch_commit(context: CommitContext) -> None:
    req = context.request
    if req.generation_id < 0 and not context.member_epochs:
        return
    if context.member_epochs.get(req.member_id) != req.generation_id:
        raise InvariantViolation(
            "NoStaleMemberEpochCommit",
            f"consumer group {req.group_id!r}: commit by {req.member_id!r} at epoch "
            f"{req.generation_id} accepted; the members' epochs were {context.member_epochs}",
        )
