"""kafka-python on the 3-broker cluster on a real ZooKeeper: a group on a topic with 3
partitions of 3 replicas each rebalances when a third member joins and when one leaves,
consumes every record produced (acks=all) exactly once, and commits; the commits are
fetched back by the admin client and by a new consumer. The group lives on the broker
that leads its ``__consumer_offsets`` partition.

Each consumer runs in its own thread, as kafka-python expects (its calls are not
thread-safe; the test hands them to the member's thread). Every wait is bounded.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401 - the two fixtures are used by name
    assert_no_errors,
    cluster_fixture,
    is_partitioned,
    partition_of,
    values,
    wait_for,
    wait_replicated,
    zookeeper_fixture,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import RebalanceInProgressError
from test_broker_kafka_python import Member  # the same consumer thread as on the single broker
from test_cluster_failover import assert_traces_replay

from coordspec.broker.cluster.launcher import Cluster

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TOPIC = "orders"
GROUP = "billing"
PARTITIONS = 3
ROUND = 30  # records produced per round, ROUND // PARTITIONS to each partition
# How long a rebalance may take: seconds when the machine is idle, but under CI's full load a
# broker's ZooKeeper session may lapse and the group's coordinator move meanwhile.
REBALANCE_S = 90


def produce(bootstrap: str, batch: list[bytes]) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all"
    )  # idempotent, kafka-python's default
    futures = [
        producer.send(TOPIC, value=value, partition=partition_of(value, PARTITIONS))
        for value in batch
    ]
    producer.flush(20)
    for future in futures:
        future.get(10)
    producer.close()


def consume_a_round(cluster: Cluster, members: list[Member], first: int) -> None:
    """Produce a round of records; the members consume each exactly once, each from its own partitions, and commit."""
    for member in members:
        member.received.clear()
    batch = values(first, ROUND)
    produce(cluster.bootstrap, batch)
    wait_for(
        lambda: sum(len(m.received) for m in members) >= ROUND,
        30,
        f"records {first}..{first + ROUND - 1}",
    )
    assert sorted(v for m in members for v in m.received) == sorted(batch)
    for member in members:
        assert {partition_of(v, PARTITIONS) for v in member.received} == member.assigned
        commit(member)


def commit(member: Member) -> None:
    """Commit the member's positions; raises unless every partition's commit is acknowledged.

    A member may rejoin at any time (kafka-python does when, say, its metadata of the topic
    changes; once in CI, under full load, one did mid-round): then, as a client should,
    commit again once the group is stable (the member's thread keeps polling). The member must
    own the same partitions afterwards (the range assignor gives the same members the same
    ones), so its positions, what it consumed, are the same commit.
    """
    owned = set(member.assigned)
    deadline = time.monotonic() + 40
    while True:
        try:
            member.call(lambda c: c.commit())
            break
        except RebalanceInProgressError:
            assert time.monotonic() < deadline, "the group still rebalancing after 40 s"
            time.sleep(0.2)
    assert member.assigned == owned, "a rebalance in the round moved the member's partitions"


def committed_by_admin(admin: KafkaAdminClient) -> dict[int, int]:
    return {
        tp.partition: meta.offset
        for tp, meta in admin.list_group_offsets({GROUP: None})[GROUP].items()
        if tp.topic == TOPIC
    }


def test_group_rebalances_consumes_and_commits_on_three_brokers(
    cluster: Cluster, tmp_path: Path
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    members: list[Member] = []
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
        wait_replicated(cluster, TOPIC, PARTITIONS)

        members = [Member(cluster.bootstrap, GROUP, TOPIC), Member(cluster.bootstrap, GROUP, TOPIC)]
        a, b = members
        wait_for(
            lambda: is_partitioned([a.assigned, b.assigned], PARTITIONS),
            REBALANCE_S,
            "two members sharing the partitions",
        )
        consume_a_round(cluster, [a, b], 0)
        assert committed_by_admin(admin) == {p: 10 for p in range(PARTITIONS)}

        c = Member(cluster.bootstrap, GROUP, TOPIC)
        members.append(c)
        wait_for(
            lambda: is_partitioned([a.assigned, b.assigned, c.assigned], PARTITIONS),
            REBALANCE_S,
            "a rebalance over three members",
        )
        consume_a_round(
            cluster, [a, b, c], ROUND
        )  # each resumes where the previous owner committed
        assert committed_by_admin(admin) == {p: 20 for p in range(PARTITIONS)}

        c.close()  # LeaveGroup
        members.remove(c)
        wait_for(
            lambda: is_partitioned([a.assigned, b.assigned], PARTITIONS),
            REBALANCE_S,
            "a rebalance after a member left",
        )
        consume_a_round(cluster, [a, b], 2 * ROUND)
        assert committed_by_admin(admin) == {p: 30 for p in range(PARTITIONS)}

        # The group lives where ZooKeeper says its offsets partition is led, and nowhere else.
        hosting = {
            broker
            for broker in cluster.broker_ids
            if GROUP in {g["group_id"] for g in admin.list_groups(broker_ids=[broker])}
        }
        assert hosting == {cluster.coordinator(GROUP)}
    finally:
        for member in members:
            member.close()
        admin.close()

    reader = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    try:
        assert [reader.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)] == [
            30
        ] * PARTITIONS
    finally:
        reader.close()
    assert_no_errors(cluster)
    # Members joined while the leader's assignment was being written: the coordinator took
    # them in turn with the write, so the brokers' trace replays.
    assert_traces_replay(cluster, GROUP, min_checked=40)
