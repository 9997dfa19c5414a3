"""A coordinator's append to ``__consumer_offsets`` as one Kafka record batch, and back.

The records are the reference's group records in Kafka's key and value encoding
(:mod:`broker.log.group_records`); the batch's offset and leader epoch are set when
the leader appends it (:func:`broker.cluster.replica_logs.stamped`).
"""

from __future__ import annotations

import datetime
import io

from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros

from broker.log.group_records import decode_record, encode_key, encode_value
from reference.group.records import Record

# Kafka's error codes by name, for the replication model's error names on the wire.
ERROR_CODES = {"NOT_LEADER_OR_FOLLOWER": 6, "UNKNOWN_TOPIC_OR_PARTITION": 3, "NOT_ENOUGH_REPLICAS": 19,
               "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20, "FENCED_LEADER_EPOCH": 74, "UNKNOWN_LEADER_EPOCH": 75}
ERROR_NAMES = {code: name for name, code in ERROR_CODES.items()}


def encode_group_batch(records: tuple[Record, ...], now_ms: int) -> bytes:
    timestamp = TZAwareMicros.parse(datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC))
    kio_records = tuple(KioRecord(attributes=0, timestamp=timestamp, offset=i, key=encode_key(r.key), value=encode_value(r.value), headers=())
                        for i, r in enumerate(records))
    buffer = io.BytesIO()
    write_new_batch(buffer, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1, records=kio_records, attributes=0))
    return buffer.getvalue()


def decode_group_batch(batch: bytes) -> tuple[Record, ...]:
    """Raises CorruptRecord or kio's errors on a batch that is not a coordinator's."""
    decoded, _ = read_batch(batch, 0)
    return tuple(decode_record(r.key or b"", r.value) for r in decoded.records)
