"""librdkafka with ``group.protocol=consumer`` (KIP-848) against the single broker: the
coordinator assigns, members reconcile through ConsumerGroupHeartbeat, a second member takes
half the partitions without the first losing one it keeps, commits are fenced by member epoch
and found again, and a classic group lives beside it. The broker's trace, with the topics it
showed the coordinator, replays through the oracle without a violation.

Every wait is bounded; the broker runs on a free port.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from test_broker_confluent import (
    PARTITIONS,
    RECORDS,
    Member,
    consumer,
    create_topic,
    poll_all,
    produce,
    wait_for,
)

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")
# Members heartbeat each second, not Kafka's 5 s: a change reaches them sooner.
FAST_HEARTBEATS = ("--broker-config", "group.consumer.heartbeat.interval.ms=1000")


def assert_trace_replays(path: Path) -> None:
    """The broker's trace, replayed through the oracle with the broker's settings, has no
    violation."""
    config = {"initial_rebalance_delay_ms": 0, "consumer_heartbeat_interval_ms": 1000}
    findings = check_files([path], Settings(config=config), out=io.StringIO())
    assert findings.totals.events > 0
    assert findings.violations == [], findings.violations[0]["message"]


def kip848_consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )


def test_a_consumer_group_is_assigned_rebalances_commits_and_lives_beside_a_classic_one(
    tmp_path: Path,
) -> None:
    expected = {f"value-{i}".encode() for i in range(RECORDS)}
    with BrokerProcess(tmp_path, *BROKER_ARGS, *FAST_HEARTBEATS) as broker:
        create_topic(broker.bootstrap, "orders", PARTITIONS)
        a = Member(kip848_consumer(broker.bootstrap, "billing"), "orders")
        wait_for(lambda: a.assigned() == set(range(PARTITIONS)), poll_all(a), 30, "a's assignment")
        b = Member(kip848_consumer(broker.bootstrap, "billing"), "orders")
        both = poll_all(a, b)
        wait_for(
            lambda: len(a.assigned()) == 2 and len(b.assigned()) == 2,
            both,
            30,
            "the coordinator's assignment over two members",
        )
        assert a.assigned() | b.assigned() == set(range(PARTITIONS))
        # Incremental: a gave up only what b now has (no revocation of a kept partition).
        assert all(revoked <= b.assigned() for revoked in a.revoked)

        # A classic group on the same topic, beside it.
        classic = Member(consumer(broker.bootstrap, "audit"), "orders")
        produce(broker.bootstrap, "orders", RECORDS, PARTITIONS)
        everyone = poll_all(a, b, classic)
        wait_for(
            lambda: (
                set(a.received) | set(b.received) == expected and set(classic.received) == expected
            ),
            everyone,
            30,
            "every record in both groups",
        )
        a.client.commit(asynchronous=False)
        b.client.commit(asynchronous=False)
        committed = a.client.committed(
            [TopicPartition("orders", p) for p in range(PARTITIONS)], timeout=10
        )
        assert [(p.partition, p.offset) for p in committed] == [
            (p, RECORDS // PARTITIONS) for p in range(PARTITIONS)
        ]

        b.client.close()  # a leave (epoch -1): the survivor gets every partition
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            poll_all(a, classic),
            30,
            "a's assignment after b left",
        )
        assert not a.errors and not b.errors and not classic.errors
        a.client.close()
        classic.client.close()
    assert_trace_replays(tmp_path / "trace.jsonl")


def test_a_regex_subscription_is_resolved_by_the_broker_and_follows_new_topics(
    tmp_path: Path,
) -> None:
    """librdkafka sends a pattern starting with ^ as the subscription's regex: the broker
    resolves it after the join (CG-68), and again once a matching topic is created."""
    with BrokerProcess(tmp_path, *BROKER_ARGS, *FAST_HEARTBEATS) as broker:
        create_topic(broker.bootstrap, "orders", 2)
        create_topic(broker.bootstrap, "payments", 2)
        member = Member(kip848_consumer(broker.bootstrap, "billing"), "^ord.*")
        wait_for(
            lambda: (
                {(p.topic, p.partition) for p in member.client.assignment()}
                == {("orders", 0), ("orders", 1)}
            ),
            poll_all(member),
            30,
            "the regex's topic assigned",
        )
        create_topic(broker.bootstrap, "orders-eu", 1)
        wait_for(
            lambda: {p.topic for p in member.client.assignment()} == {"orders", "orders-eu"},
            poll_all(member),
            30,
            "the new matching topic assigned",
        )
        assert not member.errors
        member.client.close()
    trace = (tmp_path / "trace.jsonl").read_text()
    assert trace.count('"kind":"resolve_regular_expressions"') >= 2
    assert_trace_replays(tmp_path / "trace.jsonl")


def test_a_consumer_group_takes_the_offsets_a_simple_consumer_committed(tmp_path: Path) -> None:
    """CG-3: a consumer that assigns itself partitions and commits makes an Empty classic
    group; a KIP-848 member joining under its id gets the group and starts where the commits
    left off (librdkafka's 0029_assign_offset does this, and was refused GROUP_ID_NOT_FOUND)."""
    with BrokerProcess(tmp_path, *BROKER_ARGS, *FAST_HEARTBEATS) as broker:
        create_topic(broker.bootstrap, "orders", PARTITIONS)
        produce(broker.bootstrap, "orders", RECORDS, PARTITIONS)
        half = RECORDS // PARTITIONS // 2
        simple = kip848_consumer(broker.bootstrap, "billing")
        positions = [TopicPartition("orders", p, half) for p in range(PARTITIONS)]
        simple.assign(positions)
        simple.commit(offsets=positions, asynchronous=False)
        simple.close()

        member = Member(kip848_consumer(broker.bootstrap, "billing"), "orders")
        wait_for(
            lambda: len(member.received) == RECORDS // 2,
            poll_all(member),
            30,
            "the records after the committed offsets",
        )
        assert member.assigned() == set(range(PARTITIONS))
        assert {
            int(v.decode().removeprefix("value-")) // PARTITIONS for v in member.received
        } == set(range(half, RECORDS // PARTITIONS))
        assert not member.errors
        member.client.close()
    assert_trace_replays(tmp_path / "trace.jsonl")
