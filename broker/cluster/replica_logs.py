"""The replication model's logs as Kafka record batches, on disk and in Kafka offsets.

The model's log holds :class:`~coordspec.reference.replication.log.Record` values, one per
append. Here every append is one Kafka record batch (magic 2), so a record is fully
described by its batch: ``value`` is the batch's bytes, ``leader_epoch`` its partition
leader epoch and ``payload_id`` its base offset (unique in a log: within one leader
epoch one leader appends). A model *index* (the model's offsets, high watermark and log
end) is therefore not a Kafka *offset*: :func:`kafka_offset` and :func:`index_of`
translate, and replicas exchange Kafka offsets on the wire, as Kafka's replica fetchers do.

Each replica's log is one segment file of those batches (``<topic>-<p>/replica.log``).
After every model step :meth:`ReplicaFiles.sync` writes what changed: new records are
appended, a truncation cuts the file. A restarted broker reads the files back as the
model's ``logs`` (its disk); the high watermark starts at 0 and is learnt again.
"""

from __future__ import annotations

import bisect
import shutil
import struct
from pathlib import Path

from coordspec.broker.log.batches import InvalidBatch, read_header, with_base_offset
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.znodes import TopicPartition

SEGMENT = "replica.log"
_LEADER_EPOCH = struct.Struct(">i")  # the partition leader epoch, at byte 12 of a batch


def record_of(batch: bytes) -> Record:
    header = read_header(batch)
    assert header is not None
    return Record(_LEADER_EPOCH.unpack_from(batch, 12)[0], header.base_offset, batch)


def stamped(batch: bytes, base_offset: int, leader_epoch: int) -> Record:
    """A producer's batch as the leader appends it: its offset and leader epoch set."""
    return Record(leader_epoch, base_offset, with_base_offset(batch, base_offset, leader_epoch))


def split_batches(data: bytes) -> list[Record]:
    """Whole batches in ``data`` as records; a partial batch at the end is left out."""
    records, position = [], 0
    while True:
        try:
            header = read_header(data, position)
        except InvalidBatch:
            break
        if header is None:
            break
        records.append(record_of(bytes(data[position : position + header.size])))
        position += header.size
    return records


def end_of(record: Record) -> int:
    """The Kafka offset after the record's batch."""
    header = read_header(record.value)
    assert header is not None
    return record.payload_id + header.last_offset_delta + 1


def kafka_offset(log: ReplicaLog, index: int) -> int:
    """The Kafka offset where model index ``index`` starts (the log end offset at the end)."""
    if index < log.log_end_offset:
        return log.records[index].payload_id
    return end_of(log.records[-1]) if log.records else 0


def index_of(log: ReplicaLog, offset: int) -> int:
    """The model index of the first batch at or after Kafka offset ``offset``."""
    return bisect.bisect_left(log.records, offset, key=lambda r: r.payload_id)


def fetch_index(log: ReplicaLog, offset: int) -> int:
    """A follower's fetch offset as a model index on the leader. Past the leader's log end
    it stays past it (the log end plus one): the follower holds records the leader does
    not, which the model's leader-epoch check must see to make it truncate."""
    end = kafka_offset(log, log.log_end_offset)
    return index_of(log, offset) if offset <= end else log.log_end_offset + 1


def index_holding(log: ReplicaLog, offset: int) -> int:
    """The model index of the batch holding Kafka offset ``offset`` (a consumer may ask
    from the middle of a batch; it gets the whole batch, as from Kafka)."""
    index = bisect.bisect_right(log.records, offset, key=lambda r: r.payload_id) - 1
    if index < 0 or end_of(log.records[index]) <= offset:
        return index + 1
    return index


class ReplicaFiles:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.logs: dict[TopicPartition, ReplicaLog] = {}
        self._written: dict[TopicPartition, list[Record]] = {}  # what each file holds, in order
        self._positions: dict[TopicPartition, list[int]] = {}  # file position of each record
        for segment in sorted(data_dir.glob(f"*/{SEGMENT}")):
            topic, _, number = segment.parent.name.rpartition("-")
            if not number.isdigit():
                continue
            tp = TopicPartition(topic, int(number))
            records = split_batches(segment.read_bytes())
            self.logs[tp] = ReplicaLog(list(records))
            self._written[tp] = list(records)
            self._positions[tp] = _positions(records)

    def _path(self, tp: TopicPartition) -> Path:
        return self.data_dir / f"{tp.topic}-{tp.partition}" / SEGMENT

    def sync(self) -> None:
        """Make each file hold exactly its model log (records are compared by identity:
        the model keeps the objects it appended)."""
        for tp in [tp for tp in self._written if tp not in self.logs]:  # StopReplica(delete)
            shutil.rmtree(self._path(tp).parent, ignore_errors=True)
            del self._written[tp], self._positions[tp]
        for tp, log in self.logs.items():
            written = self._written.setdefault(tp, [])
            positions = self._positions.setdefault(tp, [])
            records = log.records
            same = len(written)
            if len(records) < same or (same and records[same - 1] is not written[same - 1]):
                same = next(
                    (
                        i
                        for i, (a, b) in enumerate(zip(records, written, strict=False))
                        if a is not b
                    ),
                    min(len(records), len(written)),
                )
            if same == len(written) == len(records):
                continue
            path = self._path(tp)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as f:
                if same < len(written):
                    f.truncate(positions[same])
                    del written[same:], positions[same:]
                f.seek(0, 2)
                for record in records[same:]:
                    positions.append(f.tell())
                    f.write(record.value)
                    written.append(record)


def _positions(records: list[Record]) -> list[int]:
    positions, position = [], 0
    for record in records:
        positions.append(position)
        position += len(record.value)
    return positions
