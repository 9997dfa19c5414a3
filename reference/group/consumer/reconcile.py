"""A member's way towards its target assignment (CG-20..CG-23), as Kafka 4.0's
``CurrentAssignmentBuilder``: partitions leave a member first (it revokes them, acknowledged
by no longer listing them as owned) and reach another only once no one holds them."""

from __future__ import annotations

from collections.abc import Callable

from coordspec.reference.group.consumer.state import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerMember,
    MemberAssignment,
    Partition,
    Partitions,
)


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    partition_epoch: Callable[[Partition], int],
    owned: Partitions | None,
) -> MemberAssignment:
    """The member's assignment after this heartbeat; ``owned``: the partitions the request
    says the member holds (None: not sent). Only the assignment: the member itself changes
    once, when its current-assignment record is applied."""
    if member.state == STABLE:
        if member.member_epoch == target_epoch:
            return member.assignment()
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if member.state == UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return member.assignment()  # CG-22: it must revoke first
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)


def _still_owns(owned: Partitions | None, revoking: Partitions) -> bool:
    return owned is None or bool(owned & revoking)


def _next(
    member: ConsumerMember,
    member_epoch: int,
    target_epoch: int,
    target: Partitions,
    partition_epoch: Callable[[Partition], int],
    owned: Partitions | None,
) -> MemberAssignment:
    kept = member.assigned & target
    revoking = member.assigned - kept
    wanted = target - kept
    free = frozenset(p for p in wanted if partition_epoch(p) == -1)
    unreleased = len(free) < len(wanted)
    if revoking and _still_owns(owned, revoking):
        return _updated(member, UNREVOKED_PARTITIONS, member_epoch, kept, revoking)
    state = UNRELEASED_PARTITIONS if unreleased else STABLE
    return _updated(member, state, target_epoch, kept | free, frozenset())


def _updated(
    member: ConsumerMember, state: int, epoch: int, assigned: Partitions, revoking: Partitions
) -> MemberAssignment:
    return MemberAssignment(state, epoch, member.member_epoch, assigned, revoking)
