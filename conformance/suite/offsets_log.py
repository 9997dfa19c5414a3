"""What a broker's coordinator wrote to ``__consumer_offsets``, read back over the wire.

The kafka target shows a session the records of its groups (``expect.records``) when the
broker lists ``__consumer_offsets`` and serves Fetch v4-12 and ListOffsets: a reader starts at
each partition's end (ListOffsets, latest) and then reads every partition up to its high
watermark with Fetch, as a consumer of an internal topic may. Records are decoded by the
reference's wire vocabulary; control batches and keys of versions the classic coordinator
does not write (other kinds of groups) are skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable

from kio.records.readers import read_batch

from coordspec.conformance.suite.kafka_wire import Connection, WireError
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.placement import OFFSETS_TOPIC
from coordspec.reference.group.records import Record
from coordspec.reference.wire.group_records import CorruptRecord, decode_record

FETCH, LIST_OFFSETS = 1, 2
FETCH_VERSIONS = range(4, 13)  # topics by name (v13 names them by id)
_CLASSIC_KEYS = (0, 1, 2)  # offset commit (v0, v1) and group metadata (v2) keys
_CONTROL = 0x20  # a batch attribute: transaction markers
_MAX_BYTES = 8 * 1024 * 1024
Connect = Callable[[tuple[str, int]], Awaitable[Connection]]
Locate = Callable[[], Awaitable[dict[int, tuple[str, int]]]]


def readable(versions: dict[int, range]) -> bool:
    """Whether a broker serving these API versions can be read this way."""
    fetch = versions.get(FETCH, range(0))
    overlap = range(max(fetch.start, FETCH_VERSIONS.start), min(fetch.stop, FETCH_VERSIONS.stop))
    return versions.get(LIST_OFFSETS, range(0)).stop > 1 and bool(overlap)  # ListOffsets v1+


class OffsetsLog:
    """The records after a cursor, by partition; ``locate``: each partition's broker, looked up
    when the cursor is placed."""

    def __init__(self, locate: Locate, connect: Connect, timeout_s: float) -> None:
        self.locate = locate
        self.leaders: dict[int, tuple[str, int]] = {}
        self.connect = connect
        self.timeout_s = timeout_s
        self.cursor: dict[int, int] | None = None  # partition -> next offset to read

    async def read(self) -> list[Record]:
        """The records written since the last call (at the first: none, from now on)."""
        try:
            if self.cursor is None:
                self.leaders = await self.locate()
                self.cursor = await self._ends()
                return []
            return await self._read_on()
        except WireError as exc:
            raise WireError(f"reading {OFFSETS_TOPIC}: {exc}") from None

    def _by_leader(self) -> dict[tuple[str, int], list[int]]:
        by_leader: dict[tuple[str, int], list[int]] = {}
        for partition, leader in sorted(self.leaders.items()):
            by_leader.setdefault(leader, []).append(partition)
        return by_leader

    async def _ends(self) -> dict[int, int]:
        ends = {}
        for leader, partitions in self._by_leader().items():
            connection = await self.connect(leader)
            version = connection.versions[LIST_OFFSETS].stop - 1
            answer = await connection.call(
                LIST_OFFSETS,
                min(version, 6),
                {
                    "replica_id": -1,
                    "topics": [
                        {
                            "name": OFFSETS_TOPIC,
                            "partitions": [
                                {"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                for p in partitions
                            ],
                        }
                    ],
                },
                self.timeout_s,
            )
            for topic in answer.topics:
                for p in topic.partitions:
                    _check(int(p.error_code), "ListOffsets", p.partition_index)
                    ends[p.partition_index] = p.offset
        return ends

    async def _read_on(self) -> list[Record]:
        assert self.cursor is not None
        records: list[Record] = []
        for leader, partitions in self._by_leader().items():
            connection = await self.connect(leader)
            version = min(connection.versions[FETCH].stop - 1, FETCH_VERSIONS.stop - 1)
            behind = set(partitions)
            while behind:
                answer = await connection.call(FETCH, version, self._fetch(behind), self.timeout_s)
                for topic in answer.responses:
                    for p in topic.partitions:
                        _check(int(p.error_code), "Fetch", p.partition_index)
                        start = self.cursor[p.partition_index]
                        read, after = _records(p.records or b"", start)
                        records.extend(read)
                        self.cursor[p.partition_index] = after
                        if after >= p.high_watermark or after == start:
                            behind.discard(p.partition_index)
        return records

    def _fetch(self, partitions: set[int]) -> dict:
        assert self.cursor is not None
        return {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": _MAX_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": OFFSETS_TOPIC,
                    "partitions": [
                        {
                            "partition": p,
                            "fetch_offset": self.cursor[p],
                            "partition_max_bytes": _MAX_BYTES,
                            "current_leader_epoch": -1,
                            "log_start_offset": -1,
                        }
                        for p in sorted(partitions)
                    ],
                }
            ],
        }


def _check(code: int, api: str, partition: int) -> None:
    if code != ErrorCode.NONE:
        try:
            name = ErrorCode(code).name
        except ValueError:
            name = f"error {code}"
        raise WireError(f"{api} of partition {partition} answered {name}")


def _records(data: bytes, start: int) -> tuple[list[Record], int]:
    """The classic group records of the whole batches in ``data`` at or after offset ``start``,
    and the offset after the last whole batch."""
    records: list[Record] = []
    position, next_offset = 0, start
    while position + 12 <= len(data):
        size = 12 + struct.unpack_from(">i", data, position + 8)[0]
        if position + size > len(data):
            break  # a partial batch at the end of a fetch
        batch, _ = read_batch(data[position : position + size], 0)
        position += size
        next_offset = max(next_offset, batch.base_offset + batch.last_offset_delta + 1)
        if batch.attributes & _CONTROL:
            continue
        for r in batch.records:
            key = r.key or b""
            offset = batch.base_offset + r.offset
            if (
                offset < start
                or len(key) < 2
                or struct.unpack_from(">h", key)[0] not in _CLASSIC_KEYS
            ):
                continue
            try:
                records.append(decode_record(key, r.value))
            except CorruptRecord as exc:
                raise WireError(f"the record at offset {offset} does not decode: {exc}") from None
    return records, next_offset
