"""Kafka record batches (magic 2): the header fields the log needs, checked, and offsets set.

The broker stores batches as producers send them: compressed batches stay compressed
and consumers decode them. Only the base offset and the partition leader epoch, which
sit before the CRC and are not covered by it, are rewritten on append.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61 bytes, up to and including the record count
_CRC_START = 21  # the CRC covers everything from the attributes on


class InvalidBatch(Exception):
    """A batch Kafka would refuse; ``corrupt`` tells CORRUPT_MESSAGE from INVALID_RECORD."""

    def __init__(self, message: str, corrupt: bool = False) -> None:
        super().__init__(message)
        self.corrupt = corrupt


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    size: int  # bytes of the whole batch
    last_offset_delta: int
    max_timestamp: int
    record_count: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def read_header(data: bytes | memoryview, position: int = 0) -> BatchHeader | None:
    """The header of the batch at ``position``, or None if the data ends inside it."""
    if len(data) - position < HEADER_SIZE:
        return None
    (
        base_offset,
        length,
        _epoch,
        magic,
        _crc,
        _attributes,
        last_delta,
        _first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = HEADER.unpack_from(data, position)
    if magic != 2:
        raise InvalidBatch(f"record batch magic {magic} (only v2 batches are accepted)")
    if length < HEADER_SIZE - 12:
        raise InvalidBatch(f"record batch length {length} is shorter than its header")
    size = 12 + length
    if len(data) - position < size:
        return None
    return BatchHeader(
        base_offset, size, last_delta, max_ts, count, producer_id, producer_epoch, base_sequence
    )


def check_single_batch(records: bytes) -> BatchHeader:
    """Produce v3+ carries exactly one batch per partition (Kafka's ProduceRequest rule)."""
    header = read_header(records)
    if header is None:
        raise InvalidBatch(f"{len(records)} bytes do not hold a whole record batch")
    if header.size != len(records):
        raise InvalidBatch("produce requests v3+ carry exactly one record batch per partition")
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise InvalidBatch(
            f"{header.record_count} records with last offset delta {header.last_offset_delta}"
        )
    (crc,) = struct.unpack_from(">I", records, 17)
    if crc32c(memoryview(records)[_CRC_START:]) != crc:
        raise InvalidBatch("record batch CRC mismatch", corrupt=True)
    return header


def with_base_offset(batch: bytes, base_offset: int, leader_epoch: int = 0) -> bytes:
    return (
        struct.pack(">q", base_offset) + batch[8:12] + struct.pack(">i", leader_epoch) + batch[16:]
    )
