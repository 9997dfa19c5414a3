"""The cluster broker's replica logs: model records as Kafka batches, Kafka offsets and
model indices, the segment files following the model's appends and truncations, and the
coordinator's batches (an empty write included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordspec.broker.cluster.replica_logs import (
    ReplicaFiles,
    fetch_index,
    index_holding,
    index_of,
    kafka_offset,
    record_of,
    stamped,
)
from coordspec.broker.log.group_batches import decode_group_batch, encode_group_batch
from coordspec.reference.group.records import OffsetCommitKey, OffsetCommitValue, Record
from coordspec.reference.replication.log import ReplicaLog
from coordspec.reference.replication.znodes import TopicPartition

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TP = TopicPartition("t", 0)


def commit(offset: int) -> Record:
    return Record(OffsetCommitKey("g", "t", 0), OffsetCommitValue(offset, -1, "", 0))


def batch(count: int) -> bytes:
    return encode_group_batch(tuple(commit(i) for i in range(count)), 1_000)


def test_offsets_and_indices() -> None:
    log = ReplicaLog()
    log.append(stamped(batch(3), 0, 0))  # offsets 0-2
    log.append(stamped(batch(2), 3, 1))  # offsets 3-4
    assert [kafka_offset(log, i) for i in range(3)] == [0, 3, 5]
    assert [index_of(log, o) for o in (0, 3, 5)] == [0, 1, 2]
    assert [index_holding(log, o) for o in (0, 2, 3, 4, 5)] == [0, 0, 1, 1, 2]
    assert fetch_index(log, 5) == 2 and fetch_index(log, 9) == 3  # past the end stays past it
    assert record_of(log.records[1].value) == log.records[1]  # a batch describes its record


def test_segment_files_follow_appends_and_truncations(tmp_path: Path) -> None:
    files = ReplicaFiles(tmp_path)
    log = files.logs.setdefault(TP, ReplicaLog())
    for base, epoch in ((0, 0), (3, 0), (6, 1)):
        log.append(stamped(batch(3), base, epoch))
    files.sync()
    log.truncate_to(1)
    log.append(stamped(batch(1), 3, 2))
    files.sync()
    again = ReplicaFiles(tmp_path).logs[TP]
    assert again.records == log.records and again.high_watermark == 0
    del files.logs[TP]  # StopReplica(delete)
    files.sync()
    assert not (tmp_path / "t-0").exists()


def test_group_batches_round_trip() -> None:
    records = (commit(7), commit(8))
    assert decode_group_batch(stamped(encode_group_batch(records, 5), 10, 2).value) == records
    empty = stamped(encode_group_batch((), 5), 10, 2)
    assert decode_group_batch(empty.value) == ()
    log = ReplicaLog([empty])
    assert kafka_offset(log, 1) == 11  # it takes one offset, so offsets stay unique
