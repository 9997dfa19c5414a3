"""A consumer group's ``__consumer_offsets`` records as Kafka 4.0 writes them (KIP-848).

Each key is its record type as a short (3 group metadata, 5 member metadata, 6 target
assignment metadata, 7 a member's target assignment, 8 a member's current assignment, 16 a
regular expression's resolution) and its fields in the non-flexible encoding; each value is
a short version 0 and its fields in the flexible encoding (compact strings and arrays, a
tagged-field section after each struct; tags this code does not write are skipped when read).
Schemas: ``group-coordinator/src/main/resources/common/message/ConsumerGroup*.json``.

Topics are named by id on disk. The reference's ids are strings: the broker gives it Kafka's
text form of each topic's Uuid (:mod:`coordspec.reference.wire.kafka_uuid`), which is what
these records carry back and forth; an id of another form cannot be written.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from coordspec.reference.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicPartitions,
)
from coordspec.reference.wire import kafka_uuid

T = TypeVar("T")
KEY_TYPES = (3, 5, 6, 7, 8, 16)
_NO_TAGS = b"\x00"


class CorruptConsumerGroupRecord(Exception):
    pass


# -- writing ----------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact(value: str | None) -> bytes:
    if value is None:
        return _uvarint(0)
    data = value.encode()
    return _uvarint(len(data) + 1) + data


def _array(items: tuple[T, ...], write: Callable[[T], bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(write(item) for item in items)


def _topic_partitions(t: TopicPartitions) -> bytes:
    try:
        topic_id = kafka_uuid.from_text(t.topic_id)
    except ValueError:
        raise ValueError(
            f"topic id {t.topic_id!r} is not a Kafka Uuid: it cannot be written"
        ) from None
    partitions = _array(t.partitions, lambda p: struct.pack(">i", p))
    return topic_id.bytes + partitions + _NO_TAGS


def encode_key(key: ConsumerGroupKey) -> bytes:
    head = struct.pack(">h", key.version) + _string(key.group_id)
    if isinstance(key, ConsumerGroupRegularExpressionKey):
        return head + _string(key.regular_expression)
    if isinstance(key, ConsumerGroupMetadataKey | ConsumerGroupTargetAssignmentMetadataKey):
        return head
    return head + _string(key.member_id)


def encode_value(value: ConsumerGroupValue) -> bytes:
    out = [struct.pack(">h", 0)]
    match value:
        case ConsumerGroupMetadataValue():
            out.append(struct.pack(">i", value.epoch))
        case ConsumerGroupMemberMetadataValue():
            out += [
                _compact(value.instance_id),
                _compact(value.rack_id),
                _compact(value.client_id),
                _compact(value.client_host),
                _array(value.subscribed_topic_names, _compact),
                _compact(value.subscribed_topic_regex),
                struct.pack(">i", value.rebalance_timeout_ms),
                _compact(value.server_assignor),
            ]
        case ConsumerGroupTargetAssignmentMetadataValue():
            out.append(struct.pack(">i", value.assignment_epoch))
        case ConsumerGroupTargetAssignmentMemberValue():
            out.append(_array(value.topic_partitions, _topic_partitions))
        case ConsumerGroupCurrentMemberAssignmentValue():
            out += [
                struct.pack(">iib", value.member_epoch, value.previous_member_epoch, value.state),
                _array(value.assigned_partitions, _topic_partitions),
                _array(value.partitions_pending_revocation, _topic_partitions),
            ]
        case ConsumerGroupRegularExpressionValue():
            out += [
                _array(value.topics, _compact),
                struct.pack(">qq", value.version, value.timestamp),
            ]
    out.append(_NO_TAGS)
    return b"".join(out)


# -- reading ----------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptConsumerGroupRecord("record ends early")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise CorruptConsumerGroupRecord("record ends early")
        self.pos += length
        return self.data[self.pos - length : self.pos]

    def string(self) -> str:
        (length,) = self.take(">h")
        return self.raw(length).decode()

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = int(self.take(">B")[0])
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CorruptConsumerGroupRecord("a varint longer than 5 bytes")

    def compact(self) -> str | None:
        length = self.uvarint()
        return None if length == 0 else self.raw(length - 1).decode()

    def text(self) -> str:
        value = self.compact()
        if value is None:
            raise CorruptConsumerGroupRecord("a null where a string must be")
        return value

    def array(self, read: Callable[[], T]) -> tuple[T, ...]:
        count = self.uvarint() - 1
        if count < 0:
            raise CorruptConsumerGroupRecord("a null where an array must be")
        return tuple(read() for _ in range(count))

    def tags(self) -> None:
        """A tagged-field section: fields this code does not read are skipped."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def int32(self) -> int:
        return int(self.take(">i")[0])

    def topic_partitions(self) -> TopicPartitions:
        topic_id = kafka_uuid.to_text(uuid.UUID(bytes=self.raw(16)))
        partitions = self.array(self.int32)
        self.tags()
        return TopicPartitions(topic_id, partitions)


def decode_key(key: bytes) -> ConsumerGroupKey:
    r = _Reader(key)
    (record_type,) = r.take(">h")
    group_id = r.string()
    if record_type == 3:
        return ConsumerGroupMetadataKey(group_id)
    if record_type == 6:
        return ConsumerGroupTargetAssignmentMetadataKey(group_id)
    if record_type == 16:
        return ConsumerGroupRegularExpressionKey(group_id, r.string())
    member_id = r.string()
    if record_type == 5:
        return ConsumerGroupMemberMetadataKey(group_id, member_id)
    if record_type == 7:
        return ConsumerGroupTargetAssignmentMemberKey(group_id, member_id)
    if record_type == 8:
        return ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id)
    raise CorruptConsumerGroupRecord(f"record type {record_type} is not a consumer group's")


def decode_value(key: ConsumerGroupKey, value: bytes) -> ConsumerGroupValue:
    r = _Reader(value)
    (version,) = r.take(">h")
    if version != 0:
        raise CorruptConsumerGroupRecord(f"value version {version} (Kafka 4.0 writes 0)")
    decoded: ConsumerGroupValue
    match key:
        case ConsumerGroupMetadataKey():
            decoded = ConsumerGroupMetadataValue(r.int32())
        case ConsumerGroupMemberMetadataKey():
            decoded = ConsumerGroupMemberMetadataValue(
                instance_id=r.compact(),
                rack_id=r.compact(),
                client_id=r.text(),
                client_host=r.text(),
                subscribed_topic_names=r.array(r.text),
                subscribed_topic_regex=r.compact(),
                rebalance_timeout_ms=r.int32(),
                server_assignor=r.compact(),
            )
        case ConsumerGroupTargetAssignmentMetadataKey():
            decoded = ConsumerGroupTargetAssignmentMetadataValue(r.int32())
        case ConsumerGroupTargetAssignmentMemberKey():
            decoded = ConsumerGroupTargetAssignmentMemberValue(r.array(r.topic_partitions))
        case ConsumerGroupCurrentMemberAssignmentKey():
            member_epoch, previous, state = r.take(">iib")
            decoded = ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch,
                previous,
                state,
                r.array(r.topic_partitions),
                r.array(r.topic_partitions),
            )
        case ConsumerGroupRegularExpressionKey():
            topics = r.array(r.text)
            version_, timestamp = r.take(">qq")
            decoded = ConsumerGroupRegularExpressionValue(topics, version_, timestamp)
    r.tags()
    if r.pos != len(value):
        raise CorruptConsumerGroupRecord(f"{len(value) - r.pos} bytes after the value")
    return decoded
