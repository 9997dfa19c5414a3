"""Transactional offsets: TxnOffsetCommit and the marker that ends the transaction.

A producer's transaction commits offsets with TxnOffsetCommit (GM-57). They are written to
the group's ``__consumer_offsets`` partition at once, in the producer's batches, but stay
*pending*: OffsetFetch does not show them, and a stable fetch answers UNSTABLE_OFFSET_COMMIT
for their partitions (GM-59). When the transaction coordinator ends the transaction it
writes a marker to the partition (WriteTxnMarkers); once the marker is written, a COMMIT
makes the pending offsets the committed ones, unless a newer record committed the same
partition meanwhile, and an ABORT drops them (GM-58).

Follows Kafka 4.x ``OffsetMetadataManager.commitTransactionalOffset`` and
``replayEndTransactionMarker``, ``GroupCoordinatorService.commitTransactionalOffsets`` and
``ClassicGroup.validateOffsetCommit``, with the fixes of Kafka 4.0.1 (KAFKA-19163,
KAFKA-19164). The transaction coordinator's side (producer ids and epochs, which groups a
transaction includes, when markers are sent) is not this coordinator's.
"""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.after_write import MarkerWritten
from coordspec.reference.group.context import Context
from coordspec.reference.group.offsets import (
    commit_error_response,
    commit_to_consumer_group,
    validate_offset_commit,
    write_accepted,
)
from coordspec.reference.group.records import EndTransactionMarker, Record
from coordspec.reference.group.requests import TxnOffsetCommit, WriteTxnMarker


def commit_txn_offsets(c: Context, req: TxnOffsetCommit) -> None:
    """GM-57: validated as an OffsetCommit, without its state checks for a producer that
    is not a member; an unknown group is created only outside group management."""
    if not req.group_id:
        c.reply(req, commit_error_response(req, ErrorCode.INVALID_GROUP_ID))
        return
    consumer = c.consumer_groups.get(req.group_id)
    if consumer is not None:
        commit_to_consumer_group(c, req, consumer, req.api_version >= 2, -1)
        return
    group = c.groups.get(req.group_id)
    created = group is None
    if group is None:
        if req.generation_id >= 0:
            c.reply(req, commit_error_response(req, ErrorCode.ILLEGAL_GENERATION))
            return
        group = c.create_group(req.group_id)
    error = validate_offset_commit(group, req)
    if error is not None:
        c.reply(req, commit_error_response(req, error))
        return
    write_accepted(c, req, group, created, req.api_version >= 2, -1)


def write_txn_marker(c: Context, event: WriteTxnMarker) -> None:
    """GM-58: the marker is appended like any record; it takes effect once written."""
    marker = Record(EndTransactionMarker(event.result), None, event.producer_id)
    c.write(event.group_id, (marker,), MarkerWritten(event.producer_id, event.result))


def marker_written(c: Context, after: MarkerWritten, error: ErrorCode) -> None:
    """A marker the log refused changes nothing: the transaction coordinator sends it again."""
    if error != ErrorCode.NONE:
        return
    for group in c.groups.values():
        group.end_transaction(after.producer_id, after.result)
    for consumer in c.consumer_groups.values():
        consumer.store.end_transaction(after.producer_id, after.result)
