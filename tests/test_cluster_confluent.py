"""librdkafka (confluent-kafka) on a 3-broker cluster on a real ZooKeeper: a topic with
3 replicas, produced with acks=all, consumed by a group whose coordinator is the leader of
its ``__consumer_offsets`` partition, commits fetched back from that coordinator.

The test starts and stops ZooKeeper and the brokers itself; every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.cluster.launcher import Cluster
from broker.zookeeper.process import ZooKeeperUnavailable, zookeeper

BROKER_ARGS = ("--initial-rebalance-delay-ms", "0", "--zookeeper-session-timeout-ms", "4000")
TOPIC = "orders"
PARTITIONS = 3


@pytest.fixture(scope="module")
def zookeeper_connect():
    try:
        with zookeeper(1) as zk:
            yield zk.connect_string
    except ZooKeeperUnavailable as e:
        pytest.fail(str(e), pytrace=False)  # ZooKeeper is one of the real components CI installs


def wait_for(condition: Callable[[], bool], poll: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        poll()


def assert_no_errors(cluster: Cluster) -> None:
    """No broker logged an error or a traceback (kazoo's warnings about a lost connection are fine)."""
    for broker in cluster.broker_ids:
        stderr = cluster.stderr(broker)
        assert "Traceback" not in stderr and "ERROR" not in stderr, f"broker {broker}:\n{stderr}"


def create_topic(bootstrap: str, name: str, partitions: int, replication_factor: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, replication_factor)]).values():
        future.result(15)


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % PARTITIONS)
    assert producer.flush(20) == 0


def consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "log_level": 3})


def test_consumer_group_on_three_brokers(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(tmp_path, 3, zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}", broker_args=BROKER_ARGS) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        values = [f"value-{i}" for i in range(30)]
        produce(cluster.bootstrap, TOPIC, values)
        client = consumer(cluster.bootstrap, "cluster-group")
        client.subscribe([TOPIC])
        received: list[str] = []

        def poll() -> None:
            message = client.poll(0.2)
            if message is not None and message.error() is None:
                received.append(message.value().decode())

        try:
            wait_for(lambda: len(received) >= len(values), poll, 40, "every produced record")
            assert sorted(received) == sorted(values)
            committed = client.commit(asynchronous=False)
            assert all(tp.error is None for tp in committed)
            fetched = client.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)
            assert {tp.partition: tp.offset for tp in fetched} == {p: 10 for p in range(PARTITIONS)}
        finally:
            client.close()
        # The group lives where ZooKeeper says its offsets partition is led.
        assert cluster.coordinator("cluster-group") in cluster.running()
        assert_no_errors(cluster)
