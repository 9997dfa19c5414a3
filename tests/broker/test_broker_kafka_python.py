"""kafka-python against the broker: a consumer group that rebalances when a member joins
and when one leaves, consumes what was produced, commits, and finds its commits again
after the broker restarts. Each consumer runs in its own thread, as kafka-python expects
(its calls are not thread-safe; the test hands them to the member's thread).
The producer is idempotent, kafka-python's default (InitProducerId, then sequenced batches).
"""

from __future__ import annotations

import io
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")
PARTITIONS = 4
RECORDS = 40


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.05)


def produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    futures = [
        producer.send(topic, value=f"value-{i}".encode(), partition=i % PARTITIONS)
        for i in range(first, first + count)
    ]
    producer.flush(10)
    for future in futures:
        future.get(10)
    producer.close()


def partition_of(value: bytes) -> int:
    return int(value.decode().removeprefix("value-")) % PARTITIONS


class Member(threading.Thread):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            # A leader whose metadata did not list the new topic yet assigns nothing, and only
            # a metadata refresh (every 5 minutes by default) makes kafka-python rejoin.
            metadata_max_age_ms=500,
        )
        # kafka-python 3.0.12 can lose a leader's own rejoin when its metadata changes after it
        # joined: once the leader has computed the new assignment, ensure_active_group no longer
        # sees the rejoin in flight (need_rejoin compares metadata snapshots), and if poll's
        # timeout ends before the SyncGroup answer, nothing ever reads it: no assignment and
        # no heartbeats (2.x checked the pending join; its 3.0 rewrite does not). So the member
        # knows the topic's partitions before it joins, and its first assignment is whole.
        wait_for(
            lambda: bool(self.consumer.partitions_for_topic(topic)),
            20,
            f"the partitions of {topic}",
        )
        self.consumer.subscribe([topic])
        self.received: list[bytes] = []
        self.assigned: set[int] = set()
        self._calls: queue.Queue = queue.Queue()
        self._stopping = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._stopping.is_set():
            # A second, not 100 ms: kafka-python 3.0.12 reads a SyncGroup answer only within
            # the poll that sent it (see __init__), and on a loaded machine the cluster's
            # answer, which waits for the assignment's replicated write, can take longer.
            for records in self.consumer.poll(1000).values():
                self.received.extend(r.value for r in records)
            self.assigned = {tp.partition for tp in self.consumer.assignment()}
            while not self._calls.empty():
                fn, future = self._calls.get()
                try:
                    future.set_result(fn(self.consumer))
                except Exception as e:  # noqa: BLE001 - handed back to the test
                    future.set_exception(e)
        self.consumer.close()

    def call(self, fn: Callable[[KafkaConsumer], Any]) -> Any:
        future: Future = Future()
        self._calls.put((fn, future))
        return future.result(15)

    def close(self) -> None:
        self._stopping.set()
        self.join(15)
        assert not self.is_alive()


def committed(consumer: KafkaConsumer, topic: str) -> list[int | None]:
    return [consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)]


def assert_trace_replays(path: Path) -> None:
    """The broker's trace, replayed through the conformance oracle, has no violation."""
    findings = check_files(
        [path], Settings(config={"initial_rebalance_delay_ms": 0}), out=io.StringIO()
    )
    assert findings.totals.events > 0
    assert findings.violations == [], findings.violations[0]["message"]


def test_consumer_group_rebalances_consumes_commits_and_survives_a_restart(tmp_path: Path) -> None:
    expected = {f"value-{i}".encode() for i in range(RECORDS)}
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("orders", PARTITIONS, 1)])
        admin.close()

        a = Member(broker.bootstrap, "billing", "orders")
        wait_for(lambda: a.assigned == set(range(PARTITIONS)), 20, "the first member's assignment")
        b = Member(broker.bootstrap, "billing", "orders")
        wait_for(
            lambda: len(a.assigned) == 2 and len(b.assigned) == 2,
            30,
            "a rebalance over two members",
        )
        assert a.assigned | b.assigned == set(range(PARTITIONS))
        produce(broker.bootstrap, "orders", 0, RECORDS)
        wait_for(lambda: set(a.received) | set(b.received) == expected, 20, "every record")
        assert {partition_of(v) for v in a.received} == a.assigned
        assert {partition_of(v) for v in b.received} == b.assigned

        a.call(lambda c: c.commit())
        b.call(lambda c: c.commit())
        assert a.call(lambda c: committed(c, "orders")) == [RECORDS // PARTITIONS] * PARTITIONS

        b.close()  # LeaveGroup: the survivor takes every partition
        wait_for(
            lambda: a.assigned == set(range(PARTITIONS)), 30, "a rebalance after a member left"
        )
        a.received.clear()
        produce(broker.bootstrap, "orders", RECORDS, PARTITIONS)
        wait_for(
            lambda: len(a.received) >= PARTITIONS, 20, "the records produced after the rebalance"
        )
        assert sorted(a.received) == sorted(
            f"value-{i}".encode() for i in range(RECORDS, RECORDS + PARTITIONS)
        )
        a.call(lambda c: c.commit())
        a.close()
    assert (tmp_path / "producer_ids.json").exists(), "the producers did not ask for producer ids"

    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        reader = KafkaConsumer(
            bootstrap_servers=broker.bootstrap, group_id="billing", enable_auto_commit=False
        )
        assert committed(reader, "orders") == [RECORDS // PARTITIONS + 1] * PARTITIONS
        reader.close()
    assert_trace_replays(tmp_path / "trace.jsonl")  # across the restart
