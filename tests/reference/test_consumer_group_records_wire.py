"""A consumer group's __consumer_offsets records in Kafka 4.0's bytes (KIP-848): each kind
round-trips, a value is the flexible encoding Kafka's schemas give, tagged fields Kafka may add
are skipped, and what cannot be Kafka's record is refused in one line."""

from __future__ import annotations

import struct
import uuid

import pytest

from coordspec.reference.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
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
    Record,
    TopicPartitions,
)
from coordspec.reference.wire import kafka_uuid
from coordspec.reference.wire.group_records import (
    CorruptRecord,
    decode_record,
    encode_key,
    encode_value,
)

FOO = kafka_uuid.to_text(uuid.UUID(int=1))
BAR = kafka_uuid.to_text(uuid.UUID(int=2))
MEMBER = ConsumerGroupMemberMetadataValue(
    instance_id="i-1",
    rack_id=None,
    client_id="c",
    client_host="/127.0.0.1",
    subscribed_topic_names=("foo", "bar"),
    subscribed_topic_regex=None,
    rebalance_timeout_ms=300_000,
    server_assignor="uniform",
)
RECORDS = [
    Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7)),
    Record(ConsumerGroupMemberMetadataKey("g", "m"), MEMBER),
    Record(
        ConsumerGroupTargetAssignmentMetadataKey("g"), ConsumerGroupTargetAssignmentMetadataValue(7)
    ),
    Record(
        ConsumerGroupTargetAssignmentMemberKey("g", "m"),
        ConsumerGroupTargetAssignmentMemberValue(
            (TopicPartitions(FOO, (0, 2)), TopicPartitions(BAR, ()))
        ),
    ),
    Record(
        ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
        ConsumerGroupCurrentMemberAssignmentValue(
            7, 6, 1, (TopicPartitions(FOO, (0,)),), (TopicPartitions(BAR, (1, 3)),)
        ),
    ),
    Record(
        ConsumerGroupRegularExpressionKey("g", "fo.*"),
        ConsumerGroupRegularExpressionValue(("foo",), 3, 1_000),
    ),
    Record(ConsumerGroupMemberMetadataKey("g", "m"), None),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r.key).__name__)
def test_each_kind_round_trips_through_kafkas_encoding(record: Record) -> None:
    assert decode_record(encode_key(record.key), encode_value(record.value)) == record


def test_keys_and_values_are_kafkas_bytes() -> None:
    # Key: record type 8, then group id and member id as int16-length strings.
    key = ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    assert encode_key(key) == struct.pack(">hh", 8, 1) + b"g" + struct.pack(">h", 1) + b"m"
    # Value v0, flexible: epochs, state, two compact arrays of (uuid, compact int32 array,
    # no tags), then the value's own empty tagged-field section.
    value = ConsumerGroupCurrentMemberAssignmentValue(7, 6, 1, (TopicPartitions(FOO, (0,)),), ())
    assert encode_value(value) == (
        struct.pack(">hiib", 0, 7, 6, 1)
        + b"\x02"
        + uuid.UUID(int=1).bytes
        + b"\x02"
        + struct.pack(">i", 0)
        + b"\x00"
        + b"\x01"
        + b"\x00"
    )
    assert encode_value(ConsumerGroupMetadataValue(5)) == struct.pack(">hi", 0, 5) + b"\x00"


def test_tagged_fields_kafka_adds_are_skipped() -> None:
    # A classic member of a consumer group carries ClassicMemberMetadata in tag 0.
    plain = encode_value(MEMBER)
    assert plain is not None
    tagged = plain[:-1] + b"\x01" + b"\x00" + b"\x03" + b"abc"
    assert (
        decode_record(encode_key(ConsumerGroupMemberMetadataKey("g", "m")), tagged).value == MEMBER
    )


def test_what_is_not_kafkas_record_is_refused_in_one_line() -> None:
    key = encode_key(ConsumerGroupMetadataKey("g"))
    with pytest.raises(CorruptRecord, match="record ends early"):
        decode_record(key, struct.pack(">h", 0) + b"\x00")
    with pytest.raises(CorruptRecord, match="value version 1"):
        decode_record(key, struct.pack(">hi", 1, 5) + b"\x00")
    with pytest.raises(CorruptRecord, match="2 bytes after the value"):
        decode_record(key, struct.pack(">hi", 0, 5) + b"\x00\x00\x00")
    with pytest.raises(ValueError, match="'foo' is not a Kafka Uuid"):
        encode_value(ConsumerGroupTargetAssignmentMemberValue((TopicPartitions("foo", (0,)),)))
