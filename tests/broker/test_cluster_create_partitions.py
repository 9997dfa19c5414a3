"""CreatePartitions on a 3-broker cluster on a real ZooKeeper, from confluent-kafka,
kafka-python and raw requests, as ZooKeeper-mode Kafka serves it: the controller rewrites
the topic's assignment, its data watch starts the new partitions (ISR-20), and the answer
comes once they have leaders. The new partitions take records on every broker, and a
subscribed group consumer is given them (librdkafka's test 0069_consumer_add_parts).
Brokers other than the controller answer NOT_CONTROLLER.

One cluster serves the module (cluster_fixtures); every wait is bounded.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from cluster_fixtures import (  # noqa: F401 - the two fixtures are used by name
    assert_no_errors,
    cluster_fixture,
    wait_for,
    wait_replicated,
    zookeeper_fixture,
)
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewPartitions as PythonNewPartitions

from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.testing import Connection
from coordspec.reference.replication.znodes import TopicPartition as Partition

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, TOPIC_AUTHORIZATION_FAILED = 3, 7, 29
INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER, INVALID_REQUEST = 37, 39, 41, 42


def create(cluster: Cluster, name: str, partitions: int) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(15)
    wait_replicated(cluster, name, partitions)
    return admin


def grow(admin: AdminClient, topic: str, count: int, **options: Any) -> None:
    request = NewPartitions(topic, count, **options)
    admin.create_partitions([request], operation_timeout=30, request_timeout=40)[topic].result(40)


def grow_error(admin: AdminClient, topic: str, count: int, **options: Any) -> int:
    try:
        grow(admin, topic, count, **options)
    except KafkaException as e:
        return e.args[0].code()
    raise AssertionError(f"growing {topic} to {count} partitions was accepted")


def request(cluster: Cluster, broker: int, api_key: int, version: int, body: dict) -> Any:
    with contextlib.closing(Connection(*cluster.peers[broker], timeout_s=30)) as connection:
        return connection.request(api_key, version, body)


def led_partitions(cluster: Cluster, broker: int, topic: str) -> list[tuple[int, int]]:
    """(partition, error) for each partition with a leader in ``broker``'s Metadata."""
    metadata = request(
        cluster, broker, 3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    )
    return sorted(
        (p.partition_index, p.error_code) for p in metadata.topics[0].partitions if p.leader_id >= 0
    )


def test_added_partitions_have_leaders_on_every_broker_and_take_records(cluster: Cluster) -> None:
    topic = "grown"
    admin = create(cluster, topic, 2)
    grow(admin, topic, 4)
    controller = cluster.controller()
    assert led_partitions(cluster, controller, topic) == [(p, 0) for p in range(4)], (
        "the answer waits for the new partitions' leaders"
    )
    # AdminUtils.assignReplicasToBrokers from partition 0's first replica (broker 1): the
    # first replicas go on round-robin, the followers' shift moves at partition 3.
    assignment = cluster.view.assignments[topic]
    assert (assignment[2], assignment[3]) == ((3, 1, 2), (1, 3, 2))
    for broker in cluster.broker_ids:
        wait_for(
            lambda b=broker: led_partitions(cluster, b, topic) == [(p, 0) for p in range(4)],
            20,
            f"broker {broker}'s metadata to show 4 led partitions",
        )
    wait_replicated(cluster, topic, 4)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3})
    for partition in (2, 3):
        producer.produce(topic, value=f"to-{partition}".encode(), partition=partition)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "r", "log_level": 3})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in (2, 3)])
        seen: set[bytes] = set()
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.add(message.value())
            if len(seen) == 2:
                break
    finally:
        consumer.close()
    assert seen == {b"to-2", b"to-3"}
    for broker in cluster.broker_ids:  # every replica has a log for the new partitions
        for partition in (2, 3):
            log = cluster.data_dir / f"broker-{broker}" / f"{topic}-{partition}" / "replica.log"
            wait_for(log.exists, 20, f"{log} on disk")
    assert_no_errors(cluster)


def test_a_subscribed_group_consumer_is_given_the_added_partitions(cluster: Cluster) -> None:
    """librdkafka's 0069_consumer_add_parts: the consumer's metadata refresh sees the new
    partition count and the group rebalances."""
    topic = "growing"
    admin = create(cluster, topic, 2)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "adds-parts",
            "topic.metadata.refresh.interval.ms": 1000,
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    try:
        consumer.subscribe([topic])

        def assigned(count: int) -> bool:
            return {tp.partition for tp in consumer.assignment()} == set(range(count))

        wait_for(lambda: assigned(2), 30, "partitions 0-1 assigned", lambda: consumer.poll(0.1))
        grow(admin, topic, 4)
        wait_for(lambda: assigned(4), 30, "partitions 0-3 assigned", lambda: consumer.poll(0.1))
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
        producer.produce(topic, value=b"on-3", partition=3)
        assert producer.flush(20) == 0
        received: list[bytes] = []

        def poll() -> None:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                received.append(message.value())

        wait_for(lambda: received == [b"on-3"], 30, "the record on partition 3", poll)
    finally:
        consumer.close()
    assert_no_errors(cluster)


def test_create_partitions_answers_kafkas_errors_from_the_controller_only(
    cluster: Cluster,
) -> None:
    admin = create(cluster, "pair", 2)
    assert grow_error(admin, "pair", 1) == INVALID_PARTITIONS
    assert grow_error(admin, "pair", 2) == INVALID_PARTITIONS
    assert grow_error(admin, "never-created", 3) == UNKNOWN_TOPIC_OR_PARTITION
    assert grow_error(admin, "__consumer_offsets", 60) == TOPIC_AUTHORIZATION_FAILED
    for bad in ([[1, 9, 2]], [[1, 1, 2]], [[1, 2]], [[1, 2, 3], [2, 3, 1]]):
        assert grow_error(admin, "pair", 3, replica_assignment=bad) == INVALID_REPLICA_ASSIGNMENT
    assert cluster.view.partition_count("pair") == 2, "nothing was written"
    controller = cluster.controller()
    other = next(b for b in cluster.broker_ids if b != controller)

    def create_partitions(broker: int, topics: list[dict], **options: Any) -> list[tuple]:
        body = {"topics": topics, "timeout": 20_000, "validate_only": False, **options}
        return [(r.name, r.error_code) for r in request(cluster, broker, 37, 3, body).results]

    def to(count: int, name: str = "pair") -> dict:
        return {"name": name, "count": count, "assignments": None}

    assert create_partitions(other, [to(3)]) == [("pair", NOT_CONTROLLER)]
    assert create_partitions(controller, [to(3), to(4)]) == [("pair", INVALID_REQUEST)], (
        "a name given twice: one answer, as Kafka's map by name"
    )
    assert create_partitions(controller, [to(3)], validate_only=True) == [("pair", 0)]
    assert cluster.view.partition_count("pair") == 2, "validate_only changes nothing"
    # timeout_ms 0: written, answered at once with REQUEST_TIMED_OUT (ZkAdminManager)
    assert create_partitions(controller, [to(3)], timeout=0) == [("pair", REQUEST_TIMED_OUT)]
    wait_replicated(cluster, "pair", 3)
    grow(admin, "pair", 4, replica_assignment=[[2, 3, 1]])
    assert cluster.view.assignments["pair"][3] == (2, 3, 1)
    wait_for(lambda: cluster.view.leader(Partition("pair", 3)) == 2, 20, "2 leads pair-3")
    kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        kafka_python.create_partitions({"pair": PythonNewPartitions(5)}, timeout_ms=20_000)
    finally:
        kafka_python.close()
    wait_replicated(cluster, "pair", 5)
    assert_no_errors(cluster)
