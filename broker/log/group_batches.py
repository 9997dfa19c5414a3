"""A coordinator's append to ``__consumer_offsets`` as one Kafka record batch, and back.

The records are the reference's group records in Kafka's key and value encoding
(:mod:`coordspec.reference.wire.group_records`). The single broker writes the batch to its
partition log as it is; in the cluster the leader sets its offset and leader epoch when it
appends it (:func:`coordspec.broker.cluster.replica_logs.stamped`).
"""

from __future__ import annotations

import datetime
import io

from crc32c import crc32c
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros

from coordspec.broker.log.batches import HEADER, read_header
from coordspec.reference.group.records import Record
from coordspec.reference.wire.group_records import decode_records, encode_key, encode_value


def _empty_batch(now_ms: int) -> bytes:
    """A batch of no records that still takes one offset (last offset delta 0), as
    Kafka's control batches do: the host counts every append as one batch."""
    after_crc = HEADER.pack(0, 0, 0, 2, 0, 0, 0, now_ms, now_ms, -1, -1, -1, 0)[21:]
    return HEADER.pack(
        0, HEADER.size - 12, 0, 2, crc32c(after_crc), 0, 0, now_ms, now_ms, -1, -1, -1, 0
    )


def encode_group_batch(records: tuple[Record, ...], now_ms: int) -> bytes:
    if not records:  # a write of nothing (kio builds no empty batch)
        return _empty_batch(now_ms)
    timestamp = TZAwareMicros.parse(datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC))
    kio_records = tuple(
        KioRecord(
            attributes=0,
            timestamp=timestamp,
            offset=i,
            key=encode_key(r.key),
            value=encode_value(r.value),
            headers=(),
        )
        for i, r in enumerate(records)
    )
    buffer = io.BytesIO()
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=-1, producer_epoch=-1, base_sequence=-1, records=kio_records, attributes=0
        ),
    )
    return buffer.getvalue()


def decode_group_batch(batch: bytes) -> tuple[Record, ...]:
    """The records of a batch from ``encode_group_batch``, an empty one included (its CRC is
    not checked). Raises CorruptRecord or kio's errors on a batch that is not a coordinator's."""
    header = read_header(batch)
    if header is not None and header.record_count == 0:
        return ()
    return decode_records(batch)
