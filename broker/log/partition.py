"""One partition's log: a single segment file of record batches, with an in-memory index.

The index (each batch's base offset, last offset, max timestamp and file position) is
rebuilt by scanning the file at start; a torn batch at the end, left by a crash in the
middle of a write, is cut off.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

from coordspec.broker.log.batches import BatchHeader, InvalidBatch, read_header, with_base_offset
from coordspec.broker.log.producers import ProducerState
from coordspec.broker.log.timestamps import TimestampAndOffset, search_for_timestamp

SEGMENT = "00000000000000000000.log"


class PartitionLog:
    def __init__(self, directory: Path, fsync: bool = False) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / SEGMENT
        self._fsync = fsync
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._positions: list[int] = []
        self._max_timestamps: list[int] = []
        self._end = 0
        self.producers = ProducerState()
        self._recover()
        self._file = open(self.path, "ab")  # noqa: SIM115 - open for the life of the log

    def _recover(self) -> None:
        data = self.path.read_bytes() if self.path.exists() else b""
        position = 0
        while True:
            try:
                header = read_header(data, position)
            except InvalidBatch:
                header = None
            if header is None:
                break
            self._index(header, position)
            position += header.size
        if position != len(data):
            os.truncate(self.path, position)
        self._end = position

    def _index(self, header: BatchHeader, position: int) -> None:
        self.producers.record(header, header.base_offset)
        self._bases.append(header.base_offset)
        self._lasts.append(header.last_offset)
        self._positions.append(position)
        self._max_timestamps.append(header.max_timestamp)

    @property
    def log_start_offset(self) -> int:
        return self._bases[0] if self._bases else 0

    @property
    def high_watermark(self) -> int:
        """The next offset; with one replica every appended record is committed."""
        return self._lasts[-1] + 1 if self._lasts else 0

    def append(self, batch: bytes, header: BatchHeader) -> int:
        """Append one checked batch at the log end; returns its base offset. A producer's
        retry of a batch already in the log is not appended again: its offset comes back.
        Raises SequenceError for an idempotent batch out of sequence. A log made with
        ``fsync`` is synced to disk before this returns."""
        base = self.write(batch, header)
        if self._fsync:
            self.sync()
        return base

    def write(self, batch: bytes, header: BatchHeader) -> int:
        """As ``append``, but the batch is only handed to the OS: durable after ``sync``."""
        earlier = self.producers.check(header)
        if earlier is not None:
            return earlier
        base = self.high_watermark
        data = with_base_offset(batch, base)
        self._file.write(data)
        self._file.flush()
        self._index(dataclasses.replace(header, base_offset=base), self._end)
        self._end += len(data)
        return base

    def sync(self) -> None:
        """Make every batch written so far durable (safe to call from a worker thread)."""
        os.fsync(self._file.fileno())

    def read(self, offset: int, max_bytes: int, at_least_one: bool = True) -> bytes:
        """Whole batches from the one holding ``offset``, as many as fit in ``max_bytes``;
        with ``at_least_one`` the first batch comes even if it is larger (KIP-74)."""
        index = bisect.bisect_left(self._lasts, offset)
        start = self._positions[index] if index < len(self._positions) else self._end
        stop = index
        while stop < len(self._positions) and self._next_position(stop) - start <= max_bytes:
            stop += 1
        if stop == index and at_least_one and index < len(self._positions):
            stop += 1
        end = self._positions[stop] if stop < len(self._positions) else self._end
        with open(self.path, "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def _next_position(self, index: int) -> int:
        return self._positions[index + 1] if index + 1 < len(self._positions) else self._end

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first record whose timestamp is at least ``timestamp`` (ListOffsets); only
        the batches whose max timestamp reaches it are read from the file."""
        return search_for_timestamp(self._batches_reaching(timestamp), timestamp)

    def _batches_reaching(self, timestamp: int) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            for index, max_ts in enumerate(self._max_timestamps):
                if max_ts >= timestamp:
                    f.seek(self._positions[index])
                    yield f.read(self._next_position(index) - self._positions[index])

    def batches(self) -> list[bytes]:
        """Every batch, in order (to load ``__consumer_offsets``)."""
        data = self.path.read_bytes()[: self._end]
        return [data[p : self._next_position(i)] for i, p in enumerate(self._positions)]

    def close(self) -> None:
        self._file.close()
