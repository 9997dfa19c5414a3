"""The reference's ``__consumer_offsets`` records as Kafka writes them: key and value bytes.

Each key starts with its version (GroupMetadataKey v2, OffsetCommitKey v1) and each
value with its own (GroupMetadataValue v3, OffsetCommitValue v1 or v3), in Kafka's
non-flexible encoding (group-coordinator/src/main/resources/common/message). A record
with no value is a tombstone. A consumer group's records (key versions 3, 5 to 8 and 16) are
:mod:`coordspec.reference.wire.consumer_group_records`'.
"""

from __future__ import annotations

import struct

from kio.records.readers import read_batch

from coordspec.reference.group.records import (
    CONSUMER_GROUP_KEYS,
    ConsumerGroupKey,
    ConsumerGroupValue,
    EndTransactionMarker,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from coordspec.reference.wire import consumer_group_records


class CorruptRecord(Exception):
    pass


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def encode_key(
    key: GroupMetadataKey | OffsetCommitKey | EndTransactionMarker | ConsumerGroupKey,
) -> bytes:
    if isinstance(key, CONSUMER_GROUP_KEYS):
        return consumer_group_records.encode_key(key)
    if isinstance(key, EndTransactionMarker):
        # A marker is a control batch, and the broker serves no transactions to write one.
        raise TypeError("a transaction marker is not a group record: it has no key bytes")
    if isinstance(key, GroupMetadataKey):
        return struct.pack(">h", 2) + _string(key.group)
    return (
        struct.pack(">h", 1)
        + _string(key.group)
        + _string(key.topic)
        + struct.pack(">i", key.partition)
    )


def encode_value(
    value: GroupMetadataValue | OffsetCommitValue | ConsumerGroupValue | None,
) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, GroupMetadataValue | OffsetCommitValue):
        return consumer_group_records.encode_value(value)
    if isinstance(value, OffsetCommitValue):
        if value.version == 1:
            return (
                struct.pack(">hq", 1, value.offset)
                + _string(value.metadata)
                + struct.pack(">qq", value.commit_timestamp, value.expire_timestamp)
            )
        return (
            struct.pack(">hqi", 3, value.offset, value.leader_epoch)
            + _string(value.metadata)
            + struct.pack(">q", value.commit_timestamp)
        )
    out = [
        struct.pack(">h", 3),
        _string(value.protocol_type),
        struct.pack(">i", value.generation),
        _string(value.protocol),
        _string(value.leader),
        struct.pack(">qi", value.current_state_timestamp, len(value.members)),
    ]
    for m in value.members:
        out += [
            _string(m.member_id),
            _string(m.group_instance_id),
            _string(m.client_id),
            _string(m.client_host),
            struct.pack(">ii", m.rebalance_timeout, m.session_timeout),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptRecord("record ends early")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def number(self, fmt: str) -> int:
        return self.take(fmt)[0]

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise CorruptRecord("record ends early")
        self.pos += length
        return self.data[self.pos - length : self.pos]

    def string(self) -> str | None:
        length = self.number(">h")
        return None if length == -1 else self.raw(length).decode()

    def blob(self) -> bytes:
        return self.raw(self.number(">i"))


def decode_record(key: bytes, value: bytes | None) -> Record:
    k = _Reader(key)
    version = k.number(">h")
    if version == 2:
        group_key = GroupMetadataKey(k.string() or "")
        return Record(group_key, None if value is None else _group_value(_Reader(value)))
    if version in (0, 1):
        offset_key = OffsetCommitKey(k.string() or "", k.string() or "", k.number(">i"))
        return Record(offset_key, None if value is None else _offset_value(_Reader(value)))
    if version in consumer_group_records.KEY_TYPES:
        try:
            cg_key = consumer_group_records.decode_key(key)
            return Record(
                cg_key,
                None if value is None else consumer_group_records.decode_value(cg_key, value),
            )
        except (consumer_group_records.CorruptConsumerGroupRecord, UnicodeDecodeError) as exc:
            raise CorruptRecord(str(exc)) from None
    raise CorruptRecord(f"unknown key version {version}")


def _offset_value(r: _Reader) -> OffsetCommitValue:
    version = r.number(">h")
    offset = r.number(">q")
    leader_epoch = r.number(">i") if version >= 3 else -1
    metadata = r.string() or ""
    commit_timestamp = r.number(">q")
    expire_timestamp = r.number(">q") if version == 1 else -1
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def _group_value(r: _Reader) -> GroupMetadataValue:
    version = r.number(">h")
    if version != 3:
        raise CorruptRecord(f"group metadata value v{version} (the reference writes and reads v3)")
    protocol_type = r.string() or ""
    generation = r.number(">i")
    protocol, leader = r.string(), r.string()
    current_state_timestamp, count = r.take(">qi")
    members = []
    for _ in range(count):
        member_id, instance_id, client_id, client_host = (
            r.string(),
            r.string(),
            r.string(),
            r.string(),
        )
        rebalance_timeout, session_timeout = r.take(">ii")
        members.append(
            MemberMetadata(
                member_id or "",
                instance_id,
                client_id or "",
                client_host or "",
                rebalance_timeout,
                session_timeout,
                r.blob(),
                r.blob(),
            )
        )
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members)
    )


def decode_records(batch: bytes) -> tuple[Record, ...]:
    """The records of one record batch, read by kio, which checks its CRC. Raises
    CorruptRecord or kio's errors on a batch that is not a coordinator's."""
    decoded, _ = read_batch(batch, 0)
    return tuple(decode_record(r.key or b"", r.value) for r in decoded.records)
