"""librdkafka with ``group.protocol=consumer`` (KIP-848) against the single broker: the
coordinator assigns, members reconcile through ConsumerGroupHeartbeat, a second member takes
half the partitions without the first losing one it keeps, commits are fenced by member epoch
and found again, and a classic group lives beside it. The broker's trace, with the topics it
showed the coordinator, replays through the oracle without a violation.

Every wait is bounded; the broker runs on a free port.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from test_broker_confluent import (
    PARTITIONS,
    RECORDS,
    Member,
    assert_trace_replays,
    consumer,
    create_topic,
    poll_all,
    produce,
    wait_for,
)

from coordspec.broker.testing import BrokerProcess

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")


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
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
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
