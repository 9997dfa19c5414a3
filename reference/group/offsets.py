"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry for classic groups.

Follows Kafka 4.x ``OffsetMetadataManager`` and ``ClassicGroup.validateOffsetCommit`` /
``validateOffsetDelete`` / ``offsetExpirationCondition``. Spec rules GM-50..GM-55, GM-59 and
GM-63; transactional offsets (GM-57, GM-58) are in :mod:`txn_offsets`. A consumer group's
offsets take the same paths; only its group checks differ (:mod:`consumer.offsets`, CG-60..CG-65).
A commit or a deletion is acknowledged only once its records are appended, and becomes
visible to OffsetFetch at the same moment.
"""

from __future__ import annotations

import dataclasses
import functools

from coordspec.reference.errors import ErrorCode, append_error_to_response_error
from coordspec.reference.group.after_write import (
    OffsetsDeleted,
    OffsetsExpired,
    OffsetsWritten,
    same_group,
)
from coordspec.reference.group.consumer import offsets as consumer_offsets
from coordspec.reference.group.consumer.state import ConsumerGroup
from coordspec.reference.group.context import Context
from coordspec.reference.group.rebalance import reschedule_heartbeat
from coordspec.reference.group.records import (
    NO_PRODUCER_ID,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from coordspec.reference.group.requests import (
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
    TxnOffsetCommit,
)
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    FetchGroupResponse,
    FetchPartitionResponse,
    FetchTopicResponse,
    OffsetCommitResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteResponse,
    OffsetDeleteTopicResponse,
    OffsetFetchResponse,
    TxnOffsetCommitResponse,
)
from coordspec.reference.group.state import Group
from coordspec.reference.group.transitions import (
    COMPLETING,
    DEAD,
    EMPTY,
    OUTCOMES,
    PREPARING,
    STABLE,
)


def commit_error_response(
    req: OffsetCommit | TxnOffsetCommit, error: ErrorCode
) -> OffsetCommitResponse | TxnOffsetCommitResponse:
    """(Txn)OffsetCommit has no top-level error: a group-level error goes on every partition."""
    return _response_type(req)(
        tuple(
            CommitTopicResponse(
                t.name,
                tuple(CommitPartitionResponse(p.partition_index, error) for p in t.partitions),
            )
            for t in req.topics
        )
    )


def _response_type(
    req: OffsetCommit | TxnOffsetCommit,
) -> type[OffsetCommitResponse | TxnOffsetCommitResponse]:
    return TxnOffsetCommitResponse if isinstance(req, TxnOffsetCommit) else OffsetCommitResponse


def commit_offsets(c: Context, req: OffsetCommit) -> None:
    if req.group_id is None:
        c.reply(req, commit_error_response(req, ErrorCode.INVALID_GROUP_ID))
        return
    expire_timestamp = c.now_ms + req.retention_time_ms if req.retention_time_ms != -1 else -1
    consumer = c.consumer_groups.get(req.group_id)
    if consumer is not None:
        commit_to_consumer_group(c, req, consumer, req.api_version >= 6, expire_timestamp)
        return
    group = c.groups.get(req.group_id)
    created = group is None
    if group is None:
        if req.generation_id >= 0:
            # GM-50: v9 names the missing group; older versions keep ILLEGAL_GENERATION.
            missing = (
                ErrorCode.GROUP_ID_NOT_FOUND
                if req.api_version >= 9
                else ErrorCode.ILLEGAL_GENERATION
            )
            c.reply(req, commit_error_response(req, missing))
            return
        # GM-51: a commit outside group management creates a "simple" group.
        group = c.create_group(req.group_id)
    error = validate_offset_commit(group, req)
    if error is not None:
        c.reply(req, commit_error_response(req, error))
        return
    if group.state in (STABLE, PREPARING):
        # GM-52: in the classic protocol a commit also keeps the member's session alive.
        reschedule_heartbeat(c, group, group.members[req.member_id])
    write_accepted(c, req, group, created, req.api_version >= 6, expire_timestamp)


def commit_to_consumer_group(
    c: Context,
    req: OffsetCommit | TxnOffsetCommit,
    group: ConsumerGroup,
    with_leader_epochs: bool,
    expire_timestamp: int,
) -> None:
    """CG-60, CG-61: a consumer group's commit, checked by its members' epochs."""
    error = consumer_offsets.validate_commit(group, req)
    if error is not None:
        c.reply(req, commit_error_response(req, error))
        return
    write_accepted(c, req, group.store, False, with_leader_epochs, expire_timestamp)


def write_accepted(
    c: Context,
    req: OffsetCommit | TxnOffsetCommit,
    group: Group,
    created: bool,
    with_leader_epochs: bool,
    expire_timestamp: int,
) -> None:
    """Write the offsets a validated (Txn)OffsetCommit carries; their answer waits for it."""
    assert req.group_id is not None
    producer_id = req.producer_id if isinstance(req, TxnOffsetCommit) else NO_PRODUCER_ID
    max_metadata, now_ms = c.config.offset_metadata_max_bytes, c.now_ms
    topics = []
    accepted: list[Record] = []
    for topic in req.topics:
        answers = []
        for p in topic.partitions:
            metadata = p.committed_metadata
            if metadata is not None and len(metadata) > max_metadata:
                answers.append(
                    CommitPartitionResponse(p.partition_index, ErrorCode.OFFSET_METADATA_TOO_LARGE)
                )
                continue
            answers.append(_accepted(p.partition_index))
            value = OffsetCommitValue(  # offset, leader_epoch, metadata, commit and expire times
                p.committed_offset,
                p.committed_leader_epoch if with_leader_epochs else -1,
                metadata or "",
                now_ms,
                expire_timestamp,
            )
            key = _offset_key(req.group_id, topic.name, p.partition_index)
            accepted.append(Record(key, value, producer_id))
        topics.append(CommitTopicResponse(topic.name, tuple(answers)))
    response = _response_type(req)(tuple(topics))
    if not accepted:
        c.reply(req, response)
        return
    written = OffsetsWritten(
        req.group_id, group.incarnation, created, req, tuple(accepted), response
    )
    c.write(req.group_id, tuple(accepted), written)


# Answers and keys are immutable values: every commit of a partition shares one of each.
@functools.lru_cache(maxsize=4096)
def _accepted(partition_index: int) -> CommitPartitionResponse:
    return CommitPartitionResponse(partition_index, ErrorCode.NONE)


_offset_key = functools.lru_cache(maxsize=4096)(OffsetCommitKey)


def offsets_written(c: Context, after: OffsetsWritten, error: ErrorCode) -> None:
    """A commit is acknowledged, and visible to OffsetFetch, once its records are written."""
    req = after.request
    if error != ErrorCode.NONE:
        group = same_group(c.groups, after.group_id, after.incarnation)
        if after.created and group is not None and not group.in_log:
            c.drop_group(group.group_id)  # Kafka reverts the group the failed write created
        c.reply(req, commit_error_response(req, append_error_to_response_error(error)))
        return
    apply_offset_records(c, after.records)
    c.reply(req, after.response)


def validate_offset_commit(group: Group, req: OffsetCommit | TxnOffsetCommit) -> ErrorCode | None:
    """GM-50..GM-52 and GM-57, in Kafka's order (ClassicGroup.validateOffsetCommit). A
    transactional commit without member id and generation (below v3) is accepted in any
    state, and one from a member is accepted while the group completes its rebalance."""
    transactional = isinstance(req, TxnOffsetCommit)
    if group.state == DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.state == EMPTY:
        return None
    if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
        error = group.validate_member(req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
    elif group.state != EMPTY and not transactional:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.state == COMPLETING and not transactional:
        outcome = OUTCOMES[("OffsetCommit", COMPLETING)]
        assert isinstance(outcome, ErrorCode)
        return outcome
    return None


def apply_offset_records(c: Context, records: list[Record] | tuple[Record, ...]) -> None:
    for record in records:
        key, value = record.key, record.value
        assert isinstance(key, OffsetCommitKey)
        assert value is None or isinstance(value, OffsetCommitValue)
        group = offsets_of(c, key.group)
        if group is None and value is not None:
            group = c.create_group(key.group)
        if group is not None:
            group.replay_offset(key, value, record.producer_id, c.next_position())


def offsets_of(c: Context, group_id: str) -> Group | None:
    """The group holding a group id's offsets: a consumer group's store, or the classic group."""
    consumer = c.consumer_groups.get(group_id)
    return consumer.store if consumer is not None else c.groups.get(group_id)


def fetch_offsets(c: Context, req: OffsetFetch) -> None:
    """GM-54: from v8 each group the request names is answered as if it were alone."""
    first, *others = (group_offsets(c, part) for part in req.each_group())
    if others:
        first = dataclasses.replace(
            first,
            other_groups=tuple(
                FetchGroupResponse(g.group_id, answer.error_code, answer.topics)
                for g, answer in zip(req.other_groups, others, strict=True)
            ),
        )
    c.reply(req, first)


def group_offsets(c: Context, req: OffsetFetch) -> OffsetFetchResponse:
    """The answer to an OffsetFetch of one group."""
    if req.group_id is None:
        return OffsetFetchResponse(ErrorCode.INVALID_GROUP_ID)
    consumer = c.consumer_groups.get(req.group_id)
    if consumer is not None:
        error = consumer_offsets.validate_fetch(consumer, req)
        if error is not None:
            return OffsetFetchResponse(error)
    group = offsets_of(c, req.group_id)
    if group is None or group.state == DEAD:
        group = None
    offsets = group.offsets if group is not None else {}
    # GM-59: a stable fetch does not answer a partition a transaction may still change.
    unstable = group.has_pending_offset if group is not None and req.require_stable else _never
    if req.topics is None:
        by_topic: dict[str, list[FetchPartitionResponse]] = {}
        for (topic, partition), value in sorted(offsets.items()):
            answer = fetched(partition, value, unstable((topic, partition)))
            by_topic.setdefault(topic, []).append(answer)
        topics = tuple(FetchTopicResponse(t, tuple(ps)) for t, ps in by_topic.items())
    else:
        topics = tuple(
            FetchTopicResponse(
                t.name,
                tuple(
                    fetched(p, offsets.get((t.name, p)), unstable((t.name, p)))
                    for p in t.partition_indexes
                ),
            )
            for t in req.topics
        )
    return OffsetFetchResponse(ErrorCode.NONE, topics)


def _never(partition: tuple[str, int]) -> bool:
    return False


def fetched(
    partition: int, value: OffsetCommitValue | None, unstable: bool = False
) -> FetchPartitionResponse:
    if unstable:
        return FetchPartitionResponse(partition, error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
    if value is None:
        return FetchPartitionResponse(partition)
    return FetchPartitionResponse(partition, value.offset, value.leader_epoch, value.metadata)


# -- OffsetDelete ---------------------------------------------------------------------------


def delete_offsets(c: Context, req: OffsetDelete) -> None:
    """GM-63: offsets of topics the group does not subscribe to are deleted by tombstones."""
    consumer = c.consumer_groups.get(req.group_id)
    group = offsets_of(c, req.group_id)
    # CG-63: a consumer group's store is always Empty: no state check refuses it.
    error = validate_offset_delete(group, req)
    if error is not None:
        c.reply(req, OffsetDeleteResponse(error))
        return
    assert group is not None
    held = offsets_once_written(c, group)
    topics = []
    tombstones: list[Record] = []
    for topic in req.topics:
        subscribed = (
            consumer_offsets.is_subscribed_to_topic(consumer, topic.name)
            if consumer is not None
            else group.is_subscribed_to_topic(topic.name)
        )
        answers = []
        for p in topic.partitions:
            if subscribed:
                answers.append(
                    OffsetDeletePartitionResponse(
                        p.partition_index, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                    )
                )
                continue
            answers.append(OffsetDeletePartitionResponse(p.partition_index, ErrorCode.NONE))
            if (topic.name, p.partition_index) in held:
                key = OffsetCommitKey(req.group_id, topic.name, p.partition_index)
                tombstones.append(Record(key, None))
        topics.append(OffsetDeleteTopicResponse(topic.name, tuple(answers)))
    response = OffsetDeleteResponse(ErrorCode.NONE, tuple(topics))
    if not tombstones:
        c.reply(req, response)
        return
    c.write(req.group_id, tuple(tombstones), OffsetsDeleted(req, tuple(tombstones), response))


def offsets_once_written(c: Context, group: Group) -> set[tuple[str, int]]:
    """The group's partitions with an offset, committed or pending in a transaction (GM-59),
    once the writes in flight are done: Kafka's write operations read the uncommitted state,
    so a commit still being written counts."""
    held = set(group.offsets)
    held.update(p for pending in group.pending_offsets.values() for p in pending)
    for after in c.pending_writes():
        if isinstance(after, (OffsetsWritten, OffsetsDeleted)):
            if after.request.group_id != group.group_id:
                continue
            for record in after.records:
                assert isinstance(record.key, OffsetCommitKey)
                key = (record.key.topic, record.key.partition)
                if record.value is None:
                    held.discard(key)
                else:
                    held.add(key)
        elif isinstance(after, OffsetsExpired) and after.group_id == group.group_id:
            held.difference_update(after.expired)
    return held


def validate_offset_delete(group: Group | None, req: OffsetDelete) -> ErrorCode | None:
    """GM-63, in Kafka's order (GroupCoordinatorService, then ClassicGroup.validateOffsetDelete)."""
    if not req.group_id:
        return ErrorCode.INVALID_GROUP_ID
    if group is None or group.state == DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.state in (STABLE, PREPARING, COMPLETING) and not group.uses_consumer_protocol():
        return ErrorCode.NON_EMPTY_GROUP
    return None


def offsets_deleted(c: Context, after: OffsetsDeleted, error: ErrorCode) -> None:
    """The offsets are gone from OffsetFetch once their tombstones are written."""
    if error != ErrorCode.NONE:
        c.reply(after.request, OffsetDeleteResponse(append_error_to_response_error(error)))
        return
    apply_offset_records(c, after.records)
    c.reply(after.request, after.response)


# -- expiry ---------------------------------------------------------------------------------


def expiration_base(group: Group) -> str | None:
    """Which timestamp an offset's retention counts from, or None when offsets cannot expire."""
    if group.protocol_type is None or group.protocol_type == "":
        return "commit"
    if group.state == EMPTY:
        return "empty"
    if (
        group.protocol_type == "consumer"
        and group.state == STABLE
        and group.subscribed_topics is not None
    ):
        return "commit"
    return None


def expired_offset_keys(c: Context, group: Group) -> tuple[list[tuple[str, int]], bool]:
    """GM-55: the offsets due to expire now, and whether that is all of them. GM-59: an
    offset a transaction may still change does not expire, and a group with a transaction
    open is not all expired (KAFKA-19163, Kafka 4.0.1)."""
    if not group.offsets:
        return [], not group.pending_offsets
    base = expiration_base(group)
    if base is None:
        return [], False
    subscribed = group.subscribed_topics or set()
    expired = []
    all_expired = not group.pending_offsets
    for (topic, partition), value in group.offsets.items():
        if topic in subscribed or group.has_pending_offset((topic, partition)):
            all_expired = False
            continue
        if value.expire_timestamp != -1:
            due = c.now_ms >= value.expire_timestamp
        else:
            start = value.commit_timestamp
            if base == "empty" and group.state_timestamp_ms is not None:
                start = group.state_timestamp_ms
            due = c.now_ms - start >= c.config.offsets_retention_ms
        if due:
            expired.append((topic, partition))
        else:
            all_expired = False
    return expired, all_expired
