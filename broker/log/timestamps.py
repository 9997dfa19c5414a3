"""ListOffsets by timestamp: the first record whose timestamp reaches a target, as Kafka finds it.

Kafka 4.0 (``FileRecords.searchForTimestamp``, reached from ``LogSegment.findOffsetByTimestamp``)
takes the first batch whose max timestamp reaches the target, then the first record in it
that does. A record's timestamp is its batch's base timestamp plus the record's delta; in a
LOG_APPEND_TIME batch every record carries the batch's max timestamp. Batches are stored as
producers sent them, so a compressed batch's records are decompressed here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import cramjam

from coordspec.broker.log.batches import HEADER, HEADER_SIZE, InvalidBatch

_CODEC_MASK, _LOG_APPEND_TIME = 0x07, 0x08
# Kafka's Java producer frames snappy as snappy-java's stream: this header, then blocks each
# led by its length; librdkafka sends one raw snappy block.
_XERIAL = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int  # the batch's partition leader epoch


def search_for_timestamp(batches: Iterable[bytes], target: int) -> TimestampAndOffset | None:
    """The first record of ``batches`` (whole batches, offsets set, in log order) whose
    timestamp is at least ``target``; None past the last one. Raises InvalidBatch for a
    batch whose records cannot be read."""
    for batch in batches:
        base_offset, _, epoch, _, _, attributes, _, base_ts, max_ts, *_, count = HEADER.unpack_from(
            batch
        )
        if max_ts < target:
            continue
        for ts_delta, offset_delta in _record_deltas(_records(batch, attributes), count):
            timestamp = max_ts if attributes & _LOG_APPEND_TIME else base_ts + ts_delta
            if timestamp >= target:
                return TimestampAndOffset(timestamp, base_offset + offset_delta, epoch)
    return None


def _records(batch: bytes, attributes: int) -> bytes:
    body = batch[HEADER_SIZE:]
    codec = attributes & _CODEC_MASK
    if codec == 0:
        return body
    decompress = _DECOMPRESS.get(codec)
    if decompress is None:
        raise InvalidBatch(f"record batch compression codec {codec} is not one Kafka knows")
    try:
        return decompress(body)
    except Exception as e:  # each codec raises its own error type on bad input
        raise InvalidBatch(f"compressed records cannot be read: {e}", corrupt=True) from e


def _snappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL):
        return bytes(cramjam.snappy.decompress_raw(data))
    out, position = bytearray(), _XERIAL_HEADER_SIZE
    while position < len(data):
        size = int.from_bytes(data[position : position + 4], "big")
        position += 4
        out += cramjam.snappy.decompress_raw(data[position : position + size])
        position += size
    return bytes(out)


_DECOMPRESS: dict[int, Callable[[bytes], bytes]] = {
    1: lambda data: bytes(cramjam.gzip.decompress(data)),
    2: _snappy,
    3: lambda data: bytes(cramjam.lz4.decompress(data)),  # the LZ4 frame format
    4: lambda data: bytes(cramjam.zstd.decompress(data)),
}


def _record_deltas(records: bytes, count: int) -> Iterator[tuple[int, int]]:
    """Each record's timestamp delta and offset delta (Kafka's record v2 layout: length,
    attributes, timestamp delta, offset delta, then key, value and headers, skipped)."""
    position = 0
    for _ in range(count):
        length, position = _varint(records, position)
        end = position + length
        ts_delta, after = _varint(records, position + 1)  # past the record's attributes
        offset_delta, _ = _varint(records, after)
        if end > len(records):
            raise InvalidBatch("a record runs past the end of its batch", corrupt=True)
        yield ts_delta, offset_delta
        position = end


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at ``position``: its value and the position after it."""
    value = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise InvalidBatch("a record's varint runs past the end of its batch", corrupt=True)
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), position
