"""Idempotent producers on a partition leader: the single broker's sequence checks
(:class:`coordspec.broker.log.producers.ProducerState`: per producer id, its epoch and last five
batches) over a replica log.

The state is read from the batch headers of the log itself. Before each check it is
brought up to date with the batches appended since the last one, whoever appended them;
when the log is no longer the one it was read from (a truncation replaced records, the
partition was deleted and created again) it is read again from the start. So a broker
that becomes leader knows every sequence its log holds, fetched as a follower or written
as an earlier leader, as Kafka's leader rebuilds its producer state from its log.

The check and the append must happen in one step of the loop (no ``await`` between), so
that two batches of one producer cannot both pass a check before either is in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from coordspec.broker.cluster.replica_logs import index_of
from coordspec.broker.log.batches import BatchHeader, read_header
from coordspec.broker.log.producers import ProducerState
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.znodes import TopicPartition

NONE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND = 0, 6, 7, 20


@dataclass
class _Read:
    log: ReplicaLog
    state: ProducerState = field(default_factory=ProducerState)
    count: int = 0  # records read
    last: Record | None = None  # the last of them, to see a truncation that replaced it

    def current(self, log: ReplicaLog) -> bool:
        return (
            log is self.log
            and len(log.records) >= self.count
            and (self.count == 0 or log.records[self.count - 1] is self.last)
        )


class LeaderProducers:
    """The producer state of each partition this broker produces to as leader."""

    def __init__(self) -> None:
        self._read: dict[TopicPartition, _Read] = {}

    def check(self, tp: TopicPartition, log: ReplicaLog, header: BatchHeader) -> int | None:
        """The model index of the batch in ``log`` that ``header`` repeats (a producer's
        retry), None for a batch to append; raises SequenceError for one Kafka refuses."""
        if header.producer_id < 0:
            return None
        read = self._read.get(tp)
        if read is None or not read.current(log):
            read = self._read[tp] = _Read(log)
        for record in log.records[read.count :]:
            stored = read_header(record.value)
            if stored is not None:
                read.state.record(stored, record.payload_id)
        read.count, read.last = len(log.records), (log.records[-1] if log.records else None)
        earlier = read.state.check(header)
        return None if earlier is None else index_of(log, earlier)


async def committed(node, tp: TopicPartition, log: ReplicaLog, index: int, timeout_ms: int) -> int:
    """acks=all for a retried batch already in the leader's log at ``index``: wait, as
    Kafka's delayed produce does for the original offsets, until the high watermark passes
    it; the error code to answer (NONE once committed)."""
    record = log.records[index]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_ms, 0) / 1000
    while True:
        if (
            node.leader_log(tp) is not log
            or index >= len(log.records)
            or log.records[index] is not record
        ):
            return NOT_LEADER_OR_FOLLOWER
        if log.high_watermark > index:
            partition = node.replica.partitions.get(tp)
            enough = (
                partition is not None
                and len(partition.isr) >= node.config.replication.min_insync_replicas
            )
            return NONE if enough else NOT_ENOUGH_REPLICAS_AFTER_APPEND
        progress, remaining = node.progress, deadline - loop.time()
        if remaining <= 0:
            return REQUEST_TIMED_OUT
        # A look every half second too: not every change of leadership sets progress.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(progress.wait(), min(remaining, 0.5))
