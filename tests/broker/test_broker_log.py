"""The broker's storage without a network: partition logs, record batches, the
``__consumer_offsets`` record encoding, and the choice of offsets partition."""

from __future__ import annotations

import datetime
import io
import struct
from pathlib import Path

import cramjam
import pytest
from crc32c import crc32c
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros

from coordspec.broker.group_service import offsets_partition
from coordspec.broker.log.batches import HEADER, InvalidBatch, check_single_batch, read_header
from coordspec.broker.log.partition import PartitionLog
from coordspec.broker.log.producers import ProducerIds, SequenceError
from coordspec.broker.log.timestamps import TimestampAndOffset, search_for_timestamp
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)
from coordspec.reference.group.records import Record as GroupRecord
from coordspec.reference.wire.group_records import decode_record, encode_key, encode_value


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


_CODECS = {"gzip": 1, "snappy": 2, "snappy-java": 2, "lz4": 3, "zstd": 4}


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "snappy-java":  # snappy-java's stream: magic, version, compatible, blocks
        block = bytes(cramjam.snappy.compress_raw(data))
        return b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, len(block)) + block
    compress = {
        "gzip": cramjam.gzip.compress,
        "snappy": cramjam.snappy.compress_raw,
        "lz4": cramjam.lz4.compress,
        "zstd": cramjam.zstd.compress,
    }[codec]
    return bytes(compress(data))


def raw_batch(
    timestamps: list[int],
    codec: str | None = None,
    base_offset: int = 0,
    log_append_time: int | None = None,
    leader_epoch: int = 0,
) -> bytes:
    """A batch of one record per timestamp, encoded here byte by byte (kio's writer does not
    compress); ``log_append_time`` sets the batch's type and max timestamp."""
    base = timestamps[0]
    records = b""
    for i, timestamp in enumerate(timestamps):
        value = f"v{i}".encode()
        body = (
            b"\x00"
            + _zigzag(timestamp - base)
            + _zigzag(i)
            + _zigzag(-1)
            + _zigzag(len(value))
            + value
            + _zigzag(0)
        )
        records += _zigzag(len(body)) + body
    attributes = _CODECS[codec] if codec else 0
    if codec:
        records = _compress(codec, records)
    max_ts = max(timestamps)
    if log_append_time is not None:
        attributes |= 0x08
        max_ts = log_append_time
    last = len(timestamps) - 1
    after_crc = (
        HEADER.pack(0, 0, 0, 2, 0, attributes, last, base, max_ts, -1, -1, -1, len(timestamps))[21:]
        + records
    )
    return (
        struct.pack(">qiib", base_offset, 9 + len(after_crc), leader_epoch, 2)
        + struct.pack(">I", crc32c(after_crc))
        + after_crc
    )


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


def test_a_timestamp_is_found_at_its_record_inside_a_batch(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0")
    append(log, raw_batch([1000, 1300, 1200]))
    append(log, raw_batch([2000, 2500]))
    assert log.offset_for_timestamp(0) == TimestampAndOffset(1000, 0, 0)
    assert log.offset_for_timestamp(1250) == TimestampAndOffset(1300, 1, 0)  # not 1200 at 2
    assert log.offset_for_timestamp(1301) == TimestampAndOffset(2000, 3, 0)
    assert log.offset_for_timestamp(2001) == TimestampAndOffset(2500, 4, 0)
    assert log.offset_for_timestamp(2501) is None


@pytest.mark.parametrize("codec", ["gzip", "snappy", "snappy-java", "lz4", "zstd"])
def test_a_timestamp_is_found_inside_a_compressed_batch(codec: str) -> None:
    found = search_for_timestamp([raw_batch([10, 20, 30, 40], codec=codec, base_offset=7)], 25)
    assert found == TimestampAndOffset(30, 9, 0)


def test_every_record_of_a_log_append_time_batch_has_its_max_timestamp() -> None:
    batch = raw_batch([10, 20, 30], log_append_time=5000, leader_epoch=4)
    assert search_for_timestamp([batch], 15) == TimestampAndOffset(5000, 0, 4)
    assert search_for_timestamp([batch], 5001) is None


def test_records_that_cannot_be_read_are_a_corrupt_batch() -> None:
    batch = raw_batch([10, 20], codec="zstd")
    with pytest.raises(InvalidBatch, match="compressed records cannot be read"):
        search_for_timestamp([batch[:-4]], 15)
    truncated = raw_batch([10, 20])[:-3]
    with pytest.raises(InvalidBatch, match="past the end"):
        search_for_timestamp([truncated], 15)


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
