"""aiokafka against the broker: a consumer group that rebalances when a member joins and
when one leaves, consumes what was produced, commits, and finds its commits again after
the broker restarts. Members are tasks on one event loop; every wait is bounded."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")
PARTITIONS = 4
RECORDS = 40


async def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        await asyncio.sleep(0.05)


async def produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(first, first + count):
            await producer.send_and_wait(topic, f"value-{i}".encode(), partition=i % PARTITIONS)
    finally:
        await producer.stop()


def partition_of(value: bytes) -> int:
    return int(value.decode().removeprefix("value-")) % PARTITIONS


class Member:
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        self.received: list[bytes] = []
        self._task: asyncio.Task | None = None

    async def start(self) -> Member:
        await self.consumer.start()
        self._task = asyncio.create_task(self._consume())
        return self

    async def _consume(self) -> None:
        while True:
            for records in (await self.consumer.getmany(timeout_ms=100)).values():
                self.received.extend(r.value for r in records)

    @property
    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.wait_for(self.consumer.stop(), 15)


async def committed(consumer: AIOKafkaConsumer, topic: str) -> list[int | None]:
    return [await consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)]


def assert_trace_replays(path: Path) -> None:
    """The broker's trace, replayed through the conformance oracle, has no violation."""
    findings = check_files(
        [path], Settings(config={"initial_rebalance_delay_ms": 0}), out=io.StringIO()
    )
    assert findings.totals.events > 0
    assert findings.violations == [], findings.violations[0]["message"]


async def group_scenario(tmp_path: Path) -> None:
    expected = {f"value-{i}".encode() for i in range(RECORDS)}
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic("orders", PARTITIONS, 1)])
        await admin.close()

        a = await Member(broker.bootstrap, "billing", "orders").start()
        await wait_for(
            lambda: a.assigned == set(range(PARTITIONS)), 20, "the first member's assignment"
        )
        b = await Member(broker.bootstrap, "billing", "orders").start()
        await wait_for(
            lambda: len(a.assigned) == 2 and len(b.assigned) == 2,
            30,
            "a rebalance over two members",
        )
        assert a.assigned | b.assigned == set(range(PARTITIONS))
        await produce(broker.bootstrap, "orders", 0, RECORDS)
        await wait_for(lambda: set(a.received) | set(b.received) == expected, 20, "every record")
        assert {partition_of(v) for v in a.received} == a.assigned
        assert {partition_of(v) for v in b.received} == b.assigned

        await a.consumer.commit()
        await b.consumer.commit()
        assert await committed(a.consumer, "orders") == [RECORDS // PARTITIONS] * PARTITIONS

        await b.stop()  # LeaveGroup: the survivor takes every partition
        await wait_for(
            lambda: a.assigned == set(range(PARTITIONS)), 30, "a rebalance after a member left"
        )
        a.received.clear()
        await produce(broker.bootstrap, "orders", RECORDS, PARTITIONS)
        await wait_for(
            lambda: len(a.received) >= PARTITIONS, 20, "the records produced after the rebalance"
        )
        assert sorted(a.received) == sorted(
            f"value-{i}".encode() for i in range(RECORDS, RECORDS + PARTITIONS)
        )
        await a.consumer.commit()
        await a.stop()

    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        reader = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, group_id="billing", enable_auto_commit=False
        )
        await reader.start()
        try:
            assert await committed(reader, "orders") == [RECORDS // PARTITIONS + 1] * PARTITIONS
        finally:
            await reader.stop()
    assert_trace_replays(tmp_path / "trace.jsonl")  # across the restart


def test_consumer_group_rebalances_consumes_commits_and_survives_a_restart(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(group_scenario(tmp_path), 120))
