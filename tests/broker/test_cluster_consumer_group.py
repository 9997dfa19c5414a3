"""librdkafka with ``group.protocol=consumer`` (KIP-848) on the 3-broker cluster, through a
``kill -9`` of the group's coordinator (issue 20, CF-14).

Two members share a topic of four partitions: the second takes half, the first loses only
what the second gets. They consume and commit each record; then the coordinator (the leader of
the group's offsets partition) is killed. The group is served again by the new leader: new
records are consumed and their commits acknowledged there, and no commit acknowledged before
is lost; librdkafka's admin client describes the group there (ConsumerGroupDescribe) as Stable
with each member's partitions. The brokers' traces, with the topics each showed its coordinators, replay through
the reference with no violation. Every wait is bounded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_fixtures import SETTINGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupType,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, MemberDescription
from test_cluster_failover import assert_no_errors, assert_traces_replay, create_topic, wait_for

from coordspec.broker.cluster.launcher import Cluster

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TOPIC = "shipments"
GROUP = "kip848-group"
PARTITIONS = 4


def produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    for i in range(first, first + count):
        producer.produce(TOPIC, value=f"value-{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(20) == 0


class Member:
    """A KIP-848 consumer that commits each record it reads, remembering the acknowledged commits."""

    def __init__(self, bootstrap: str, acknowledged: dict[int, int]) -> None:
        self.client = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        self.acknowledged = acknowledged  # partition -> highest acknowledged offset, shared
        self.received: set[bytes] = set()
        self.revoked: list[set[int]] = []
        self.client.subscribe(
            [TOPIC], on_revoke=lambda _, ps: self.revoked.append({p.partition for p in ps})
        )

    def assigned(self) -> set[int]:
        return {p.partition for p in self.client.assignment()}

    def poll(self) -> None:
        message = self.client.poll(0.05)
        if message is not None and message.error() is None:
            self.received.add(message.value())
            self._commit(message)

    def _commit(self, message: Message) -> None:
        position = TopicPartition(TOPIC, message.partition(), message.offset() + 1)
        try:
            result = self.client.commit(offsets=[position], asynchronous=False)
        except KafkaException:
            return  # not acknowledged: nothing is promised about it
        for tp in result:
            if tp.error is None:
                self.acknowledged[tp.partition] = max(
                    self.acknowledged.get(tp.partition, 0), tp.offset
                )


def describe(bootstrap: str) -> ConsumerGroupDescription:
    """The group as librdkafka's admin client describes it: for a consumer group it sends
    ConsumerGroupDescribe (KIP-848), not DescribeGroups."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    return admin.describe_consumer_groups([GROUP], request_timeout=10)[GROUP].result(10)


def assigned(member: MemberDescription) -> set[int]:
    return {tp.partition for tp in member.assignment.topic_partitions if tp.topic == TOPIC}


def test_consumer_group_rebalances_commits_and_survives_its_coordinators_kill(
    tmp_path: Path, zookeeper_connect: str
) -> None:
    with Cluster(
        tmp_path, 3, zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}", settings=SETTINGS
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, 0, 40)
        acknowledged: dict[int, int] = {}
        a = Member(cluster.bootstrap, acknowledged)
        b = None
        try:
            wait_for(lambda: a.assigned() == set(range(PARTITIONS)), a.poll, 20, "a's assignment")
            b = Member(cluster.bootstrap, acknowledged)

            def poll_both() -> None:
                a.poll()
                b.poll()

            wait_for(
                lambda: len(a.assigned()) == len(b.assigned()) == PARTITIONS // 2,
                poll_both,
                20,
                "b taking half the partitions",
            )
            assert a.assigned() | b.assigned() == set(range(PARTITIONS))
            assert all(revoked <= b.assigned() for revoked in a.revoked), a.revoked
            wait_for(
                lambda: acknowledged == dict.fromkeys(range(PARTITIONS), 10),
                poll_both,
                20,
                "every record's commit acknowledged",
            )
            before = dict(acknowledged)

            victim = cluster.coordinator(GROUP)
            cluster.kill(victim)
            wait_for(
                lambda: cluster.coordinator(GROUP) not in (victim, -1),
                poll_both,
                20,
                "a new coordinator",
            )
            produce(cluster.bootstrap, 40, 20)
            wait_for(
                lambda: acknowledged == dict.fromkeys(range(PARTITIONS), 15),
                poll_both,
                25,
                "the new records' commits acknowledged by the new coordinator",
            )
            expected = {f"value-{i}".encode() for i in range(60)}
            assert a.received | b.received == expected
            described = describe(cluster.bootstrap)
            assert described.type == ConsumerGroupType.CONSUMER
            assert described.state == ConsumerGroupState.STABLE
            assert described.coordinator.id == cluster.coordinator(GROUP) != victim
            assert sorted(assigned(m) for m in described.members) == sorted(
                [a.assigned(), b.assigned()], key=sorted
            )
            fetched = a.client.committed(
                [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10
            )
        finally:
            a.client.close()
            if b is not None:
                b.client.close()
        assert before == dict.fromkeys(range(PARTITIONS), 10)
        assert {tp.partition: tp.offset for tp in fetched} == acknowledged  # none lost
        assert_no_errors(cluster)
    assert_traces_replay(cluster, GROUP, min_checked=20, moved=True)
    described_by = [
        line
        for path in cluster.trace_files()
        for line in map(json.loads, path.read_text().splitlines())
        if line.get("api") == "ConsumerGroupDescribe" and line["kind"] == "response"
    ]
    assert described_by and all(line["group_id"] == GROUP for line in described_by)
