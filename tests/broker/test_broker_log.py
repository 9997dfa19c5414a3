"""The broker's storage without a network: partition logs, record batches, the
``__consumer_offsets`` record encoding, and the choice of offsets partition."""

from __future__ import annotations

import datetime
import io
import struct
from pathlib import Path

import pytest
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros

from coordspec.broker.group_service import offsets_partition
from coordspec.broker.log.batches import InvalidBatch, check_single_batch, read_header
from coordspec.broker.log.group_records import decode_record, encode_key, encode_value
from coordspec.broker.log.partition import PartitionLog
from coordspec.broker.log.producers import ProducerIds, SequenceError
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)
from coordspec.reference.group.records import Record as GroupRecord


def batch(
    *values: bytes,
    timestamp_ms: int = 1_700_000_000_000,
    producer: tuple[int, int, int] = (-1, -1, -1),
) -> bytes:
    """A batch of ``values``; ``producer`` is (producer id, epoch, base sequence)."""
    stamp = TZAwareMicros.parse(datetime.datetime.fromtimestamp(timestamp_ms / 1000, datetime.UTC))
    records = tuple(
        Record(attributes=0, timestamp=stamp, offset=i, key=None, value=v, headers=())
        for i, v in enumerate(values)
    )
    buffer = io.BytesIO()
    producer_id, epoch, sequence = producer
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
            records=records,
            attributes=0,
        ),
    )
    return buffer.getvalue()


def append(log: PartitionLog, data: bytes) -> int:
    return log.append(data, check_single_batch(data))


def test_appends_get_consecutive_offsets_and_reads_return_whole_batches(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0")
    assert (log.log_start_offset, log.high_watermark) == (0, 0)
    assert append(log, batch(b"a", b"b")) == 0
    assert append(log, batch(b"c")) == 2
    assert log.high_watermark == 3
    whole = log.read(0, 1 << 20)
    first = read_header(whole)
    assert first is not None and first.base_offset == 0 and first.record_count == 2
    second = read_header(whole, first.size)
    assert second is not None and second.base_offset == 2 and first.size + second.size == len(whole)
    assert log.read(1, 1 << 20) == whole  # offset 1 is inside the first batch
    assert read_header(log.read(2, 1 << 20)).base_offset == 2
    assert log.read(3, 1 << 20) == b""


def test_a_read_smaller_than_a_batch_returns_one_batch_only_when_asked(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0")
    append(log, batch(b"x" * 100))
    assert len(log.read(0, 10)) > 10  # KIP-74: progress even with a small limit
    assert log.read(0, 10, at_least_one=False) == b""


def test_a_torn_batch_at_the_end_is_cut_off_when_the_log_is_reopened(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0")
    append(log, batch(b"kept"))
    log.close()
    size = log.path.stat().st_size
    with open(log.path, "ab") as f:
        f.write(batch(b"torn")[:30])
    reopened = PartitionLog(tmp_path / "t-0")
    assert reopened.high_watermark == 1 and reopened.path.stat().st_size == size
    assert append(reopened, batch(b"next")) == 1


def test_timestamps_are_found_by_batch(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0")
    append(log, batch(b"a", timestamp_ms=1000))
    append(log, batch(b"b", timestamp_ms=2000))
    assert log.offset_for_timestamp(1500) == (1, 2000)
    assert log.offset_for_timestamp(3000) is None


def test_produced_batches_are_checked_as_kafka_does() -> None:
    good = batch(b"a")
    assert check_single_batch(good).record_count == 1
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with pytest.raises(InvalidBatch) as error:
        check_single_batch(bytes(corrupt))
    assert error.value.corrupt
    with pytest.raises(InvalidBatch, match="exactly one record batch"):
        check_single_batch(good + good)
    old_magic = bytearray(good)
    old_magic[16] = 1
    with pytest.raises(InvalidBatch, match="magic 1"):
        check_single_batch(bytes(old_magic))
    with pytest.raises(InvalidBatch):
        check_single_batch(struct.pack(">qi", 0, 10_000) + good[12:])


def test_an_idempotent_retry_is_not_appended_twice_and_sequences_are_checked(
    tmp_path: Path,
) -> None:
    log = PartitionLog(tmp_path / "t-0")
    assert append(log, batch(b"a", b"b", producer=(7, 0, 0))) == 0
    assert append(log, batch(b"c", producer=(7, 0, 2))) == 2
    assert (
        append(log, batch(b"a", b"b", producer=(7, 0, 0))) == 0
    )  # a retry: the first append's offset
    assert log.high_watermark == 3
    with pytest.raises(SequenceError) as gap:
        append(log, batch(b"d", producer=(7, 0, 5)))
    assert gap.value.error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(SequenceError) as fresh:
        append(log, batch(b"d", producer=(8, 0, 3)))  # an unknown producer starts at 0
    assert fresh.value.error_code == 45
    assert append(log, batch(b"e", producer=(7, 1, 0))) == 3  # a new epoch starts again at 0
    with pytest.raises(SequenceError) as fenced:
        append(log, batch(b"f", producer=(7, 0, 3)))
    assert fenced.value.error_code == 47  # INVALID_PRODUCER_EPOCH
    log.close()
    reopened = PartitionLog(
        tmp_path / "t-0"
    )  # the producer state comes back from the batch headers
    assert append(reopened, batch(b"e", producer=(7, 1, 0))) == 3
    assert append(reopened, batch(b"g", producer=(7, 1, 1))) == 4


def test_producer_ids_are_not_reused_after_a_restart(tmp_path: Path) -> None:
    first = ProducerIds(tmp_path / "producer_ids.json")
    assert [first.allocate(), first.allocate()] == [0, 1]
    assert ProducerIds(tmp_path / "producer_ids.json").allocate() == ProducerIds.BLOCK


RECORDS = [
    GroupRecord(OffsetCommitKey("g", "orders", 3), OffsetCommitValue(42, 7, "meta", 1000)),
    GroupRecord(
        OffsetCommitKey("g", "orders", 4), OffsetCommitValue(5, -1, "", 1000, expire_timestamp=9000)
    ),
    GroupRecord(OffsetCommitKey("g", "orders", 3), None),
    GroupRecord(
        GroupMetadataKey("g"),
        GroupMetadataValue(
            "consumer",
            3,
            "range",
            "m-1",
            1234,
            (
                MemberMetadata(
                    "m-1", "instance-1", "client", "/127.0.0.1", 300000, 10000, b"\x00\x01", b"\x02"
                ),
                MemberMetadata("m-2", None, "client", "/127.0.0.1", 300000, 10000, b"", b""),
            ),
        ),
    ),
    GroupRecord(GroupMetadataKey("g"), GroupMetadataValue("", 0, None, None, -1, ())),
    GroupRecord(GroupMetadataKey("g"), None),
]


@pytest.mark.parametrize(
    "record", RECORDS, ids=lambda r: f"{type(r.key).__name__}-{type(r.value).__name__}"
)
def test_group_records_round_trip_through_kafkas_encoding(record: GroupRecord) -> None:
    assert decode_record(encode_key(record.key), encode_value(record.value)) == record


def test_an_offset_commit_value_is_written_as_kafka_writes_version_3() -> None:
    # version, offset, leader epoch, metadata, commit timestamp (OffsetCommitValue.json v3)
    expected = struct.pack(">hqih", 3, 42, 7, 4) + b"meta" + struct.pack(">q", 1000)
    assert encode_value(OffsetCommitValue(42, 7, "meta", 1000)) == expected
    assert encode_key(OffsetCommitKey("g", "t", 1)) == struct.pack(
        ">hh", 1, 1
    ) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 1)


@pytest.mark.parametrize(
    ("group", "partition"),
    [
        # abs(String.hashCode()) % 50, computed with Java (jshell); Integer.MIN_VALUE maps to 0
        ("my-group", 12),
        ("billing", 9),
        ("", 0),
        ("gé€", 20),
        ("test-group-42", 31),
        ("polygenelubricants", 0),
    ],
)
def test_the_offsets_partition_of_a_group_is_kafkas(group: str, partition: int) -> None:
    assert offsets_partition(group, 50) == partition
