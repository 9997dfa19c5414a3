"""Drives the reference GroupCoordinator with real time, a real log and real clients.

The broker adds only IO: the coordinator decides everything. Time is the wall clock in
milliseconds (offset commit timestamps are persisted, so it has to survive restarts),
never moving backwards. After every step one timer is armed for ``next_deadline_ms()``.
``AppendRecords`` is written to the group's ``__consumer_offsets`` partition and synced
to disk before the coordinator hears ``AppendCompleted``, so a reply that waits on a
write (a commit, the leader's SyncGroup) is sent only once the write is durable. At
start every partition is read back and handed to the coordinator as ``LoadGroups``.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.serial.errors import SerialError as KioError
from kio.static.primitive import TZAwareMicros

from broker.log.batches import read_header
from broker.log.group_records import (
    CorruptRecord,
    decode_record,
    encode_key,
    encode_value,
)
from broker.log.topics import OFFSETS_TOPIC, TopicStore
from broker.trace import Trace
from reference.choices import SeededChoices
from reference.errors import ErrorCode
from reference.group import (
    AppendCompleted,
    GroupConfig,
    GroupCoordinator,
    LoadGroups,
    Tick,
)
from reference.group.effects import AppendRecords, Reply
from reference.group.records import Record

log = logging.getLogger(__name__)


def offsets_partition(group_id: str, partitions: int) -> int:
    """Kafka's choice: abs(Java String.hashCode(group_id)) % partitions (Utils.abs maps MIN to 0)."""
    data, h = group_id.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):  # Java hashes UTF-16 code units
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


class GroupService:
    def __init__(self, topics: TopicStore, offsets_partitions: int, config: GroupConfig, trace: Trace) -> None:
        self._topics = topics
        self._trace = trace
        if OFFSETS_TOPIC not in topics:
            topics.create(OFFSETS_TOPIC, offsets_partitions, internal=True)
        self.offsets_partitions = topics.entry(OFFSETS_TOPIC).partitions
        self._now_ms = int(time.time() * 1000)
        self.coordinator = GroupCoordinator(
            config, SeededChoices(secrets.randbits(64)), now_ms=self._now_ms, complete_appends=False
        )
        self._waiting: dict[int, asyncio.Future] = {}
        self._request_ids = 0
        self._timer: asyncio.TimerHandle | None = None
        self._run(LoadGroups(self._read_records(), self._now()))

    def _now(self) -> int:
        self._now_ms = max(self._now_ms, int(time.time() * 1000))
        return self._now_ms

    async def call(self, client: str, make: Callable[[int, int], Any]) -> Any:
        """Send the request ``make(request_id, now_ms)`` builds for ``client``; wait for its reply."""
        self._request_ids += 1
        request = make(self._request_ids, self._now())
        future = asyncio.get_running_loop().create_future()
        self._waiting[request.request_id] = future
        self._trace.request(request.now_ms, client, request)
        try:
            self._run(request)
            return await future
        finally:
            self._waiting.pop(request.request_id, None)

    def _run(self, event: Any) -> None:
        events = [event]
        try:
            while events:
                for effect in self.coordinator.handle(events.pop(0)):
                    if isinstance(effect, Reply):
                        self._deliver(effect)
                    else:
                        events.append(AppendCompleted(effect.append_id, self._now(), self._append(effect)))
        finally:  # even after a failed step, the timers keep going
            self._arm_timer()

    def _deliver(self, reply: Reply) -> None:
        self._trace.response(self._now_ms, reply.api, reply.api_version, reply.request_id, reply.response)
        future = self._waiting.get(reply.request_id)
        if future is not None and not future.done():  # its connection may be gone
            future.set_result(reply.response)

    def _append(self, effect: AppendRecords) -> ErrorCode:
        if not effect.records:
            return ErrorCode.NONE
        partition = offsets_partition(effect.group_id, self.offsets_partitions)
        batch = _encode_batch(effect.records, self._now_ms)
        try:
            log_ = self._topics.log(OFFSETS_TOPIC, partition)
            assert log_ is not None
            header = read_header(batch)
            assert header is not None
            log_.append(batch, header)
        except OSError as e:
            log.error("cannot write %s-%d: %s", OFFSETS_TOPIC, partition, e)
            return ErrorCode.KAFKA_STORAGE_ERROR
        self._topics.notify_appended()
        return ErrorCode.NONE

    def _arm_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.coordinator.next_deadline_ms()
        if deadline is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # loading before the server runs: the first request arms it
            return
        self._timer = loop.call_later(max(0.0, (deadline - self._now()) / 1000), self._tick)

    def _tick(self) -> None:
        self._timer = None
        try:
            self._run(Tick(self._now()))
        except Exception:  # a bug in a timer's step: log it and keep serving
            log.exception("group coordinator failed on a timer")

    def start(self) -> None:
        """Arm the first timer once the event loop runs (sessions of loaded groups)."""
        self._arm_timer()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _read_records(self) -> tuple[Record, ...]:
        records = []
        for partition in range(self.offsets_partitions):
            log_ = self._topics.log(OFFSETS_TOPIC, partition)
            assert log_ is not None
            for index, data in enumerate(log_.batches()):
                try:
                    batch, _ = read_batch(data, 0)
                    records.extend(decode_record(r.key or b"", r.value) for r in batch.records)
                except (CorruptRecord, ValueError, KioError) as e:
                    raise CorruptRecord(f"{log_.path}: batch {index} cannot be read ({e})") from None
        return tuple(records)


def _encode_batch(records: tuple[Record, ...], now_ms: int) -> bytes:
    timestamp = TZAwareMicros.parse(datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC))
    kio_records = tuple(
        KioRecord(attributes=0, timestamp=timestamp, offset=i, key=encode_key(r.key), value=encode_value(r.value), headers=())
        for i, r in enumerate(records)
    )
    buffer = io.BytesIO()
    write_new_batch(buffer, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1, records=kio_records, attributes=0))
    return buffer.getvalue()
