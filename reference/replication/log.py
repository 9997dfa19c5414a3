"""A replica's log: records tagged with the leader epoch they were appended in, a log end
offset (LEO) and a high watermark (HW).

Records are compared as whole values: within one leader epoch there is one leader, so two
replicas holding the same (leader_epoch, payload_id) at an offset hold the same record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordspec.reference.errors import UsageError


@dataclass(frozen=True, slots=True)
class Record:
    leader_epoch: int
    payload_id: int
    value: object = None  # opaque to replication: what a layer above stores (e.g. offsets records)


@dataclass(slots=True)
class ReplicaLog:
    records: list[Record] = field(default_factory=list)
    high_watermark: int = 0

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    @property
    def last_epoch(self) -> int:
        """The leader epoch of the last record, -1 when empty."""
        return self.records[-1].leader_epoch if self.records else -1

    def append(self, record: Record) -> int:
        """Append one record; its offset."""
        if self.records and record.leader_epoch < self.records[-1].leader_epoch:
            raise UsageError(
                f"append: record of leader epoch {record.leader_epoch} after epoch {self.records[-1].leader_epoch}"
            )
        self.records.append(record)
        return len(self.records) - 1

    def truncate_to(self, offset: int) -> None:
        del self.records[offset:]
        self.high_watermark = min(self.high_watermark, offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """KIP-101's OffsetsForLeaderEpoch answer: the largest epoch <= ``epoch`` this log
        has records of, and the offset where it ends (the first offset of a later epoch, or
        the LEO); ``(-1, 0)`` when it has no record of such an epoch.

        A leader answers with its LEO for its own current epoch even before appending in
        it: Kafka writes the epoch's start offset to the leader-epoch cache on becoming
        leader, which ends the previous epoch there."""
        found = -1
        for offset, record in enumerate(self.records):
            if record.leader_epoch > epoch:
                return (found, offset) if found >= 0 else (-1, 0)
            found = record.leader_epoch
        return (found, len(self.records)) if found >= 0 else (-1, 0)

    def copy(self) -> ReplicaLog:
        return ReplicaLog(list(self.records), self.high_watermark)
