"""DeleteTopics on a 3-broker cluster on a real ZooKeeper, from confluent-kafka, kafka-python
and raw requests, as ZooKeeper-mode Kafka serves it: the controller marks the topic under
/admin/delete_topics and answers once the topic has left the metadata; its znodes and
every broker's replica logs are gone, every broker answers UNKNOWN_TOPIC_OR_PARTITION for
it, and a topic of the same name starts empty. Brokers other than the controller answer
NOT_CONTROLLER. Topics have ids as Kafka 2.8+ gives them (KIP-516): in their znode, in
every broker's Metadata and CreateTopics answer, and DeleteTopics takes them.

One cluster serves the module (cluster_fixtures); every wait is bounded.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from client_checks import consume_partition_0
from cluster_fixtures import (  # noqa: F401 - the two fixtures are used by name
    assert_no_errors,
    cluster_fixture,
    values,
    wait_for,
    wait_replicated,
    zookeeper_fixture,
)
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.testing import Connection
from coordspec.broker.wire.fuzz import record_batch
from coordspec.reference.replication.znodes import (
    TopicAssignment,
    delete_topic_path,
    partitions_path,
    topic_path,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, TOPIC_AUTHORIZATION_FAILED = 3, 7, 29
NOT_CONTROLLER, INVALID_REQUEST, UNKNOWN_TOPIC_ID = 41, 42, 100


def create(cluster: Cluster, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(15)
    wait_replicated(cluster, name, partitions)


def produce(cluster: Cluster, topic: str, batch: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3})
    for value in batch:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(20) == 0


def request(cluster: Cluster, broker: int, api_key: int, version: int, body: dict) -> Any:
    with contextlib.closing(Connection(*cluster.peers[broker], timeout_s=30)) as connection:
        return connection.request(api_key, version, body)


def errors_for(cluster: Cluster, broker: int, topic: str) -> tuple[int, int, int]:
    """What ``broker`` answers for ``topic``'s partition 0: Metadata, Produce, Fetch."""
    metadata = request(
        cluster, broker, 3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    )
    produced = request(
        cluster,
        broker,
        0,
        9,
        {
            "acks": 1,
            "timeout": 5000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": record_batch()}]}
            ],
        },
    )
    partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    fetched = request(
        cluster,
        broker,
        1,
        12,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [partition]}],
        },
    )
    return (
        metadata.topics[0].error_code,
        produced.responses[0].partition_responses[0].error_code,
        fetched.responses[0].partitions[0].error_code,
    )


def delete_error(admin: AdminClient, topic: str) -> int:
    return admin.delete_topics([topic], request_timeout=20)[topic].exception(20).args[0].code()


def test_a_deleted_topic_leaves_zookeeper_every_broker_and_the_disk(cluster: Cluster) -> None:
    topic = "doomed"
    create(cluster, topic, 2)
    produce(cluster, topic, values(0, 5))
    dirs = [
        cluster.data_dir / f"broker-{b}" / f"{topic}-{p}"
        for b in cluster.broker_ids
        for p in (0, 1)
    ]
    wait_for(lambda: (dirs[0] / "replica.log").exists(), 20, "the leader's log on disk")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deleted = admin.delete_topics([topic], operation_timeout=30, request_timeout=40)
    assert deleted[topic].result(40) is None
    zk = cluster.view.client
    for path in (topic_path(topic), partitions_path(topic), delete_topic_path(topic)):
        assert zk.exists(path) is None, f"{path} is left"
    wait_for(lambda: not any(d.exists() for d in dirs), 20, "every replica's log removed")
    unknown = (UNKNOWN_TOPIC_OR_PARTITION,) * 3
    for broker in cluster.broker_ids:
        wait_for(
            lambda b=broker: errors_for(cluster, b, topic) == unknown, 20, f"{broker} to forget it"
        )
    assert topic not in admin.list_topics(timeout=10).topics
    create(cluster, topic, 1)  # the same name again: empty
    produce(cluster, topic, [b"new"])
    assert consume_partition_0(cluster.bootstrap, topic, 1) == [b"new"]
    assert_no_errors(cluster)


def test_delete_topics_answers_kafkas_errors_from_the_controller_only(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    assert delete_error(admin, "never-created") == UNKNOWN_TOPIC_OR_PARTITION
    assert delete_error(admin, "__consumer_offsets") == TOPIC_AUTHORIZATION_FAILED
    for name in ("quick", "twice", "by-python", "unwaited"):
        create(cluster, name, 1)
    controller = cluster.controller()
    other = next(b for b in cluster.broker_ids if b != controller)

    def delete(broker: int, topics: list[dict], timeout: int = 20_000) -> list[tuple]:
        body = request(cluster, broker, 20, 6, {"topics": topics, "timeout": timeout})
        return [(r.name, r.error_code) for r in body.responses]

    assert delete(other, [{"name": "quick"}]) == [("quick", NOT_CONTROLLER)]
    assert (
        delete(controller, [{"name": "twice"}, {"name": "twice"}])
        == [("twice", INVALID_REQUEST)] * 2
    )
    assert delete(controller, [{"topic_id": uuid.UUID(int=1)}]) == [(None, UNKNOWN_TOPIC_ID)]
    # timeout_ms 0: marked, answered at once with REQUEST_TIMED_OUT (ZkAdminManager.deleteTopics)
    assert delete(controller, [{"name": "quick"}], timeout=0) == [("quick", REQUEST_TIMED_OUT)]
    wait_for(lambda: "quick" not in cluster.view.assignments, 20, "quick deleted all the same")
    # librdkafka's default operation_timeout is 0: it takes that REQUEST_TIMED_OUT for success
    assert admin.delete_topics(["unwaited"], request_timeout=20)["unwaited"].result(20) is None
    wait_for(lambda: "unwaited" not in cluster.view.assignments, 20, "unwaited deleted")
    kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        kafka_python.delete_topics(["by-python"], timeout_ms=20_000)
    finally:
        kafka_python.close()
    wait_for(
        lambda: (
            {"quick", "twice", "by-python"} & set(admin.list_topics(timeout=10).topics) == {"twice"}
        ),
        20,
        "only twice left",
    )
    assert_no_errors(cluster)


def topic_ids(cluster: Cluster, broker: int, topic: str) -> tuple[int, uuid.UUID]:
    metadata = request(
        cluster, broker, 3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    )
    return metadata.topics[0].error_code, metadata.topics[0].topic_id


def test_a_topic_has_one_id_everywhere_and_a_recreated_one_a_new_id(cluster: Cluster) -> None:
    """CreateTopics v7+ answers the id it wrote into the topic's znode (version 3, Kafka's
    text form of the Uuid); every broker's Metadata v10+ gives it; DeleteTopics v6 by id
    deletes that topic; the same name created again is another topic with another id."""
    created = request(
        cluster,
        cluster.controller(),
        19,
        7,
        {"topics": [{"name": "with-id", "num_partitions": 1, "replication_factor": 3}]},
    )
    [answer] = created.topics
    assert answer.error_code == 0 and answer.topic_id != uuid.UUID(int=0)
    path = topic_path("with-id")
    assert (
        TopicAssignment.decode(path, cluster.view.client.get(path)[0]).topic_id == answer.topic_id
    )
    for broker in cluster.broker_ids:
        wait_for(
            lambda b=broker: topic_ids(cluster, b, "with-id") == (0, answer.topic_id),
            20,
            f"broker {broker} to give the topic's id",
        )
    body = request(
        cluster,
        cluster.controller(),
        20,
        6,
        {"topics": [{"topic_id": answer.topic_id}], "timeout": 20_000},
    )
    assert [(r.name, r.error_code) for r in body.responses] == [("with-id", 0)]
    create(cluster, "with-id", 1)
    again = topic_ids(cluster, cluster.controller(), "with-id")
    assert again[0] == 0 and again[1] not in (answer.topic_id, uuid.UUID(int=0))
    assert_no_errors(cluster)
