"""Drives the reference GroupCoordinator with real time, a real log and real clients.

The broker adds only IO: the coordinator decides everything. Time is the wall clock in
milliseconds (offset commit timestamps are persisted, so it has to survive restarts),
never moving backwards. After every step one timer is armed for ``next_deadline_ms()``.
At start every partition is read back and handed to the coordinator as ``LoadGroups``.

``AppendRecords`` go to the group's ``__consumer_offsets`` partition as a group commit:
the appends of a loop turn are written together, one fsync per partition runs in a
worker thread while the loop keeps serving, and only then does the coordinator hear
``AppendCompleted`` for each, so a reply that waits on a write (a commit, the leader's
SyncGroup) is sent only once the write is durable. Appends issued meanwhile form the
next batch.

Requests, replies, the trace and the timer go through :mod:`coordspec.broker.group_driver`: while a
group has a write in flight, its next requests wait for it (:mod:`coordspec.broker.group_turns`).

Consumer groups (KIP-848) need the broker's topics: the coordinator gets them as a
``NewMetadataImage`` at start and before the first request after any change, with each topic
known by Kafka's text form of its id (CG-70). After a ConsumerGroupHeartbeat is answered, a
group with a regular expression not yet resolved, or resolved against older topics, has its
regexes resolved (``ResolveRegularExpressions``, CG-68), as Kafka 4.0 does asynchronously.
The trace shows a consumer group's image before its first request after each change, and
each resolution. The cluster's brokers do the same (:mod:`coordspec.broker.group_image`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.serial.errors import SerialError as KioError

from coordspec.broker.group_driver import GroupDriver
from coordspec.broker.group_image import (
    CONSUMER_GROUP_APIS,
    Image,
    ImagesShown,
    Resolutions,
    call_keeping_request,
)
from coordspec.broker.group_turns import commits_only
from coordspec.broker.log.batches import read_header
from coordspec.broker.log.group_batches import encode_group_batch
from coordspec.broker.log.partition import PartitionLog
from coordspec.broker.log.topics import OFFSETS_TOPIC, TopicStore
from coordspec.broker.trace import Trace
from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import (
    AppendCompleted,
    GroupConfig,
    GroupCoordinator,
    LoadGroups,
    ResolveRegularExpressions,
)
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.records import Record
from coordspec.reference.wire import kafka_uuid
from coordspec.reference.wire.group_records import CorruptRecord, decode_records

log = logging.getLogger(__name__)


def offsets_partition(group_id: str, partitions: int) -> int:
    """Kafka's choice: abs(Java String.hashCode(group_id)) % partitions (Utils.abs maps MIN to 0)."""
    data, h = group_id.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):  # Java hashes UTF-16 code units
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


def image_of(topics: TopicStore) -> Image:
    """The broker's topics as the coordinator's image: every topic has an id here."""
    entries = {name: topics.entry(name) for name in topics.names()}
    return Image(
        topics.version,
        {name: e.partitions for name, e in entries.items()},
        {name: kafka_uuid.to_text(e.topic_id) for name, e in entries.items()},
    )


class _TraceAll:
    """This broker coordinates every group: each request and reply goes to its trace, and a
    consumer group's request after the image it last showed is preceded by the new one."""

    def __init__(self, trace: Trace, image: Callable[[], Image]) -> None:
        self._trace = trace
        self._image = image
        self._shown = ImagesShown(trace)

    def request(self, client: str, request: Any) -> None:
        if request.api in CONSUMER_GROUP_APIS:
            self._shown.show(request.now_ms, request.trace_group, self._image())
        self._trace.request(request.now_ms, client, request)

    def resolved(self, now_ms: int, group_id: str) -> None:
        self._trace.resolve_regular_expressions(now_ms, group_id)

    def reply(self, now_ms: int, reply: Reply, resigning: bool) -> None:
        self._trace.response(now_ms, reply.api, reply.api_version, reply.request_id, reply.response)


@dataclass
class _Write:
    """One AppendRecords in a batch of the group commit."""

    append_id: int
    group_id: str
    commits_only: bool
    log: PartitionLog
    batch: bytes


class GroupService:
    def __init__(
        self, topics: TopicStore, offsets_partitions: int, config: GroupConfig, trace: Trace | None
    ) -> None:
        self._topics = topics
        if OFFSETS_TOPIC not in topics:
            topics.create(OFFSETS_TOPIC, offsets_partitions, internal=True)
        self.offsets_partitions = topics.entry(OFFSETS_TOPIC).partitions
        self._now_ms = int(time.time() * 1000)
        self.coordinator = GroupCoordinator(
            config, SeededChoices(secrets.randbits(64)), now_ms=self._now_ms, complete_appends=False
        )
        self._traced = None if trace is None else _TraceAll(trace, lambda: self.image)
        self.driver = GroupDriver(
            self._run, self.coordinator.next_deadline_ms, self._now, self._traced
        )
        self._writes: list[_Write] = []  # the next batch of the group commit
        self._writer: asyncio.Task | None = None
        self.image = image_of(topics)
        self._run(self.image.event(self._now()))
        self._run(LoadGroups(self._read_records(), self._now()))
        self._resolutions = Resolutions()

    def _now(self) -> int:
        self._now_ms = max(self._now_ms, int(time.time() * 1000))
        return self._now_ms

    async def call(self, client: str, make: Callable[[int, int], Any]) -> Any:
        """Send the request ``make(request_id, now_ms)`` builds for ``client``; wait for its reply."""
        if self._topics.version != self.image.version:
            self.image = image_of(self._topics)
            self._run(self.image.event(self._now()))
        request, response = await call_keeping_request(self.driver, client, make)
        if request.api == "ConsumerGroupHeartbeat":
            self._maybe_resolve(request.group_id)
        return response

    def _maybe_resolve(self, group_id: str) -> None:
        """CG-68: resolve the group's regexes if one is new or the topics changed since."""
        if self._resolutions.due(self.coordinator, group_id, self.image):
            now = self._now()
            if self._traced is not None:
                self._traced.resolved(now, group_id)
            self._run(ResolveRegularExpressions(group_id, now))

    def _run(self, event: Any) -> None:
        events = [event]
        try:
            while events:
                for effect in self.coordinator.handle(events.pop(0)):
                    if isinstance(effect, Reply):
                        self.driver.reply(self._now_ms, effect)
                    elif not effect.records:
                        events.append(
                            AppendCompleted(effect.append_id, self._now(), ErrorCode.NONE)
                        )
                    else:
                        self._queue_write(effect)
        finally:  # even after a failed step, the timers keep going
            self.driver.arm_timer()

    # -- the group commit ------------------------------------------------------------

    def _queue_write(self, effect: AppendRecords) -> None:
        log_ = self._topics.log(
            OFFSETS_TOPIC, offsets_partition(effect.group_id, self.offsets_partitions)
        )
        assert log_ is not None
        commits = commits_only(effect.records)
        self._writes.append(
            _Write(
                effect.append_id,
                effect.group_id,
                commits,
                log_,
                encode_group_batch(effect.records, self._now_ms),
            )
        )
        self.driver.turns.writing(effect.group_id, commits)
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_batches())

    async def _write_batches(self) -> None:
        """Write, sync and complete batch after batch until no append is left."""
        try:
            while self._writes:
                batch, self._writes = self._writes, []
                errors = {w.append_id: _write(w) for w in batch}
                written = {id(w.log): w.log for w in batch if errors[w.append_id] == ErrorCode.NONE}
                try:
                    await asyncio.to_thread(_sync, list(written.values()))
                except OSError as e:
                    log.error("cannot sync %s: %s", OFFSETS_TOPIC, e)
                    errors = dict.fromkeys(errors, ErrorCode.KAFKA_STORAGE_ERROR)
                self._topics.notify_appended()
                for w in batch:
                    self._complete(w, errors[w.append_id])
        finally:
            self._writer = None

    def _complete(self, write: _Write, error: ErrorCode) -> None:
        try:
            self._run(AppendCompleted(write.append_id, self._now(), error))
        except Exception:  # a bug in this step: log it and keep serving
            log.exception("group coordinator failed on a completed append")
        finally:
            self.driver.turns.written(write.group_id, write.commits_only)

    def start(self) -> None:
        """Arm the first timer once the event loop runs (sessions of loaded groups)."""
        self.driver.start()

    async def stop(self) -> None:
        """Let the writes in flight complete, then stop the timers."""
        if self._writer is not None:
            await self._writer
        self.driver.stop()

    def _read_records(self) -> tuple[Record, ...]:
        records = []
        for partition in range(self.offsets_partitions):
            log_ = self._topics.log(OFFSETS_TOPIC, partition)
            assert log_ is not None
            for index, data in enumerate(log_.batches()):
                try:
                    records.extend(decode_records(data))
                except (CorruptRecord, ValueError, KioError) as e:
                    raise CorruptRecord(
                        f"{log_.path}: batch {index} cannot be read ({e})"
                    ) from None
        return tuple(records)


def _write(write: _Write) -> ErrorCode:
    header = read_header(write.batch)
    assert header is not None
    try:
        write.log.write(write.batch, header)
    except OSError as e:
        log.error("cannot write %s: %s", write.log.path, e)
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.NONE


def _sync(logs: list[PartitionLog]) -> None:
    for log_ in logs:
        log_.sync()
