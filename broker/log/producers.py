"""Idempotent producers: ids that are never reused, and per-partition sequence checks.

Producer ids are handed out from blocks of 1000 reserved in ``producer_ids.json`` before
use, so a restart skips the rest of a block instead of reusing an id (Kafka's
ProducerIdManager reserves blocks the same way). A partition remembers, per producer, its
epoch and its last five batches (Kafka's ``max.in.flight`` bound for idempotence): a
batch seen again is a retry and gets its first offset back without a second append; any
other batch must carry the next sequence. The state is rebuilt from batch headers when a
log is opened, as Kafka rebuilds it from the log.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from coordspec.broker.log.batches import BatchHeader

OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH = 45, 47
_MAX_SEQUENCE = 2**31 - 1
_REMEMBERED_BATCHES = 5


class _ProducerIdsFile(BaseModel):
    next_block: int


class ProducerIds:
    BLOCK = 1000

    def __init__(self, path: Path) -> None:
        self._path = path
        self._next = (
            _ProducerIdsFile.model_validate_json(path.read_bytes()).next_block
            if path.exists()
            else 0
        )
        self._end = self._next

    def allocate(self) -> int:
        if self._next == self._end:
            self._end = self._next + self.BLOCK
            temporary = self._path.with_suffix(".tmp")
            temporary.write_text(_ProducerIdsFile(next_block=self._end).model_dump_json())
            temporary.replace(self._path)
        self._next += 1
        return self._next - 1


class SequenceError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _last_sequence(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % (_MAX_SEQUENCE + 1)


@dataclass
class _Producer:
    epoch: int
    batches: deque = field(
        default_factory=lambda: deque(maxlen=_REMEMBERED_BATCHES)
    )  # (first seq, last seq, base offset)


class ProducerState:
    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}

    def check(self, header: BatchHeader) -> int | None:
        """The base offset of the earlier append if ``header`` is a retry of it, else None;
        raises SequenceError for a batch Kafka would refuse."""
        if header.producer_id < 0:
            return None
        producer = self._producers.get(header.producer_id)
        if producer is None or header.producer_epoch > producer.epoch:
            if header.base_sequence != 0:
                raise SequenceError(
                    OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {header.producer_id} epoch {header.producer_epoch} starts at sequence {header.base_sequence}, not 0",
                )
            return None
        if header.producer_epoch < producer.epoch:
            raise SequenceError(
                INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {producer.epoch}",
            )
        for first, last, base_offset in producer.batches:
            if (first, last) == (header.base_sequence, _last_sequence(header)):
                return base_offset
        expected = (producer.batches[-1][1] + 1) % (_MAX_SEQUENCE + 1)
        if header.base_sequence != expected:
            raise SequenceError(
                OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} sent sequence {header.base_sequence}, expected {expected}",
            )
        return None

    def record(self, header: BatchHeader, base_offset: int) -> None:
        if header.producer_id < 0:
            return
        producer = self._producers.get(header.producer_id)
        if producer is None or header.producer_epoch > producer.epoch:
            producer = self._producers[header.producer_id] = _Producer(header.producer_epoch)
        producer.batches.append((header.base_sequence, _last_sequence(header), base_offset))
