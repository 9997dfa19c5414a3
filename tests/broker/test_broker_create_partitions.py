"""CreatePartitions on the single broker, from confluent-kafka and raw requests: the topic
grows at once, its new partitions take records and survive a restart; Kafka's errors.

Every test starts its own broker on a free port and bounds every wait.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from coordspec.broker.testing import BrokerProcess, Connection

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")
UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, INVALID_PARTITIONS = 3, 29, 37
INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST = 39, 42


def grow_error(admin: AdminClient, topic: str, count: int, **options: Any) -> int:
    futures = admin.create_partitions([NewPartitions(topic, count, **options)], request_timeout=10)
    try:
        futures[topic].result(10)
    except KafkaException as e:
        return e.args[0].code()
    raise AssertionError(f"growing {topic} to {count} partitions was accepted")


def read(bootstrap: str, topic: str, partitions: list[int], expected: int) -> set[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "r"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        seen: set[bytes] = set()
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.add(message.value())
            if len(seen) >= expected:
                break
        return seen
    finally:
        consumer.close()


def test_a_grown_topic_takes_records_on_its_new_partitions_and_keeps_them(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("grown", 1, 1)])["grown"].result(10)
        grown = admin.create_partitions([NewPartitions("grown", 3)], request_timeout=10)
        assert grown["grown"].result(10) is None
        assert len(admin.list_topics("grown", timeout=10).topics["grown"].partitions) == 3
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for partition in (1, 2):
            producer.produce("grown", value=f"to-{partition}".encode(), partition=partition)
        assert producer.flush(10) == 0
        assert read(broker.bootstrap, "grown", [1, 2], 2) == {b"to-1", b"to-2"}
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        assert read(broker.bootstrap, "grown", [1, 2], 2) == {b"to-1", b"to-2"}


def test_create_partitions_answers_kafkas_errors(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("pair", 2, 1)])["pair"].result(10)
        assert grow_error(admin, "pair", 2) == INVALID_PARTITIONS
        assert grow_error(admin, "pair", 1) == INVALID_PARTITIONS
        assert grow_error(admin, "never-created", 3) == UNKNOWN_TOPIC_OR_PARTITION
        assert grow_error(admin, "__consumer_offsets", 60) == TOPIC_AUTHORIZATION_FAILED
        assert grow_error(admin, "pair", 3, replica_assignment=[[7]]) == (
            INVALID_REPLICA_ASSIGNMENT
        )
        with contextlib.closing(Connection(broker.host, broker.port)) as connection:

            def create_partitions(topics: list[dict], validate_only: bool) -> list[tuple]:
                body = {"topics": topics, "timeout": 5000, "validate_only": validate_only}
                return [(r.name, r.error_code) for r in connection.request(37, 3, body).results]

            three = {"name": "pair", "count": 3, "assignments": None}
            assert create_partitions([three, three], False) == [("pair", INVALID_REQUEST)]
            assert create_partitions([three], True) == [("pair", 0)]
            assert len(admin.list_topics("pair", timeout=10).topics["pair"].partitions) == 2
            assert create_partitions([three], False) == [("pair", 0)]
        assert len(admin.list_topics("pair", timeout=10).topics["pair"].partitions) == 3
