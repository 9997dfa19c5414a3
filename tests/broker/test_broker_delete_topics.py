"""DeleteTopics on the single broker, from confluent-kafka, kafka-python and raw requests:
the topic and its logs go at once, for good, and a topic of the same name starts empty.

Every test starts its own broker on a free port and bounds every wait.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from client_checks import consume_partition_0
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from coordspec.broker.testing import BrokerProcess, Connection
from coordspec.broker.wire.fuzz import record_batch

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")
UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, INVALID_REQUEST = 3, 29, 42
UNKNOWN_TOPIC_ID = 100


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(10) == 0


def delete_error(admin: AdminClient, topic: str) -> int:
    return admin.delete_topics([topic], request_timeout=10)[topic].exception(10).args[0].code()


def test_a_deleted_topic_loses_its_logs_and_comes_back_empty(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data, *BROKER_ARGS) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("doomed", 2, 1)])["doomed"].result(10)
        produce(broker.bootstrap, "doomed", [b"old-1", b"old-2"])
        assert (data / "doomed-0").is_dir()
        assert admin.delete_topics(["doomed"], request_timeout=10)["doomed"].result(10) is None
        assert "doomed" not in admin.list_topics(timeout=10).topics
        assert not list(data.glob("doomed-*")), "its logs are gone from disk"
        assert "doomed" not in json.loads((data / "topics.json").read_text())["topics"]
        with contextlib.closing(Connection(broker.host, broker.port)) as connection:
            produced = connection.request(
                0,
                9,
                {
                    "acks": 1,
                    "timeout": 5000,
                    "topic_data": [
                        {
                            "name": "doomed",
                            "partition_data": [{"index": 0, "records": record_batch()}],
                        }
                    ],
                },
            )
            assert (
                produced.responses[0].partition_responses[0].error_code
                == UNKNOWN_TOPIC_OR_PARTITION
            )
        assert delete_error(admin, "doomed") == UNKNOWN_TOPIC_OR_PARTITION
        admin.create_topics([NewTopic("doomed", 1, 1)])["doomed"].result(10)
        produce(broker.bootstrap, "doomed", [b"new"])
        assert consume_partition_0(broker.bootstrap, "doomed", 1) == [b"new"]
    with BrokerProcess(data, *BROKER_ARGS) as broker:  # a restart keeps the new topic only
        assert consume_partition_0(broker.bootstrap, "doomed", 1) == [b"new"]


def test_delete_topics_answers_kafkas_errors(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for name in ("by-id", "twice", "named"):
            admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
        assert delete_error(admin, "never-created") == UNKNOWN_TOPIC_OR_PARTITION
        assert delete_error(admin, "__consumer_offsets") == TOPIC_AUTHORIZATION_FAILED
        with contextlib.closing(Connection(broker.host, broker.port)) as connection:
            metadata = connection.request(
                3, 12, {"topics": [{"name": "by-id"}], "allow_auto_topic_creation": False}
            )
            topic_id = metadata.topics[0].topic_id

            def delete(topics: list[dict]) -> list[tuple[str | None, int]]:
                body = connection.request(20, 6, {"topics": topics, "timeout": 5000})
                return [(r.name, r.error_code) for r in body.responses]

            assert delete([{"name": "named", "topic_id": topic_id}, {"name": "twice"}]) == [
                ("named", INVALID_REQUEST),
                ("twice", INVALID_REQUEST),
            ], "a name and an id together fail the whole request"
            assert (
                delete([{"name": "twice"}, {"name": "twice"}]) == [("twice", INVALID_REQUEST)] * 2
            )
            assert (
                delete([{"topic_id": topic_id}, {"topic_id": topic_id}])
                == [("by-id", INVALID_REQUEST)] * 2
            )
            assert delete([{"topic_id": topic_id}]) == [("by-id", 0)]
            assert delete([{"topic_id": topic_id}]) == [(None, UNKNOWN_TOPIC_ID)]
        assert sorted(admin.list_topics(timeout=10).topics) == [
            "__consumer_offsets",
            "named",
            "twice",
        ]
        kafka_python = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            kafka_python.delete_topics(["named", "twice"], timeout_ms=5000)
        finally:
            kafka_python.close()
        assert sorted(admin.list_topics(timeout=10).topics) == ["__consumer_offsets"]
