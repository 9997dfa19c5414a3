"""The group checks of a consumer group's offset requests (CG-60..CG-65), as Kafka 4.0's
``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch`` / ``validateOffsetDelete`` /
``validateDeleteGroup`` and ``OffsetMetadataManager`` answer them. The per-partition work is
:mod:`coordspec.reference.group.offsets`'s, the same for both kinds of group."""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.consumer.state import ConsumerGroup
from coordspec.reference.group.records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    Record,
)
from coordspec.reference.group.requests import OffsetCommit, OffsetFetch, TxnOffsetCommit


def validate_commit(group: ConsumerGroup, req: OffsetCommit | TxnOffsetCommit) -> ErrorCode | None:
    """CG-60, CG-61: a commit without a member epoch only while the group is empty; otherwise
    from a member at its current epoch, over OffsetCommit v9+. A transactional commit's stale
    epoch is answered ILLEGAL_GENERATION, the error its clients know."""
    if req.generation_id < 0 and not group.members:
        return None
    member = group.members.get(req.member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    transactional = isinstance(req, TxnOffsetCommit)
    if not transactional and req.api_version < 9:
        return ErrorCode.UNSUPPORTED_VERSION
    if req.generation_id != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
    return None


def validate_fetch(group: ConsumerGroup, req: OffsetFetch) -> ErrorCode | None:
    """CG-62: a fetch naming no member (an admin's, or below v9) is answered; one naming a
    member needs it at its current epoch."""
    if req.member_id is None and req.member_epoch < 0:
        return None
    member = group.members.get(req.member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if req.member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return None


def is_subscribed_to_topic(group: ConsumerGroup, topic: str) -> bool:
    """CG-63, CG-65: a topic some member subscribes to, by name or by a resolved regex
    (ModernGroup.isSubscribedToTopic)."""
    return any(topic in group.subscription(m) for m in group.members.values())


def empty_group_tombstones(group_id: str) -> tuple[Record, ...]:
    """CG-64: the tombstones of a consumer group without members, in Kafka's order
    (createGroupTombstoneRecords; no subscription metadata record is written here)."""
    return (
        Record(ConsumerGroupTargetAssignmentMetadataKey(group_id), None),
        Record(ConsumerGroupMetadataKey(group_id), None),
    )
