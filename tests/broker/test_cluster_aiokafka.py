"""aiokafka on the 3-broker cluster on a real ZooKeeper: a group on a topic with 3
partitions of 3 replicas each rebalances when a third member joins and when one leaves,
consumes every record produced (acks=all) exactly once, and commits; the commits are
fetched back by the admin client and by a new consumer. The group lives on the broker
that leads its ``__consumer_offsets`` partition.

Members are tasks on one event loop; every wait is bounded.
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from cluster_fixtures import (  # noqa: F401 - the two fixtures are used by name
    assert_no_errors,
    cluster_fixture,
    is_partitioned,
    partition_of,
    values,
    wait_for_async,
    wait_replicated,
    zookeeper_fixture,
)
from test_broker_aiokafka import Member  # the same consumer task as on the single broker

from coordspec.broker.cluster.launcher import Cluster

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TOPIC = "orders"
GROUP = "shipping"
PARTITIONS = 3
ROUND = 30  # records produced per round, ROUND // PARTITIONS to each partition


async def produce(bootstrap: str, batch: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        sent = [
            await producer.send(TOPIC, value, partition=partition_of(value, PARTITIONS))
            for value in batch
        ]
        await asyncio.wait_for(asyncio.gather(*sent), 20)
    finally:
        await producer.stop()


async def consume_a_round(cluster: Cluster, members: list[Member], first: int) -> None:
    """Produce a round of records; the members consume each exactly once, each from its own partitions, and commit."""
    for member in members:
        member.received.clear()
    batch = values(first, ROUND)
    await produce(cluster.bootstrap, batch)
    await wait_for_async(
        lambda: sum(len(m.received) for m in members) >= ROUND,
        30,
        f"records {first}..{first + ROUND - 1}",
    )
    assert sorted(v for m in members for v in m.received) == sorted(batch)
    for member in members:
        assert {partition_of(v, PARTITIONS) for v in member.received} == member.assigned
        await member.consumer.commit()  # raises unless every partition's commit is acknowledged


async def committed_by_admin(admin: AIOKafkaAdminClient) -> dict[int, int]:
    return {
        tp.partition: meta.offset
        for tp, meta in (await admin.list_consumer_group_offsets(GROUP)).items()
        if tp.topic == TOPIC
    }


async def group_scenario(cluster: Cluster) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await admin.start()
    members: list[Member] = []
    try:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
        wait_replicated(cluster, TOPIC, PARTITIONS)

        members = [
            await Member(cluster.bootstrap, GROUP, TOPIC).start(),
            await Member(cluster.bootstrap, GROUP, TOPIC).start(),
        ]
        a, b = members
        await wait_for_async(
            lambda: is_partitioned([a.assigned, b.assigned], PARTITIONS),
            40,
            "two members sharing the partitions",
        )
        await consume_a_round(cluster, [a, b], 0)
        assert await committed_by_admin(admin) == {p: 10 for p in range(PARTITIONS)}

        c = await Member(cluster.bootstrap, GROUP, TOPIC).start()
        members.append(c)
        await wait_for_async(
            lambda: is_partitioned([a.assigned, b.assigned, c.assigned], PARTITIONS),
            40,
            "a rebalance over three members",
        )
        await consume_a_round(
            cluster, [a, b, c], ROUND
        )  # each resumes where the previous owner committed
        assert await committed_by_admin(admin) == {p: 20 for p in range(PARTITIONS)}

        await c.stop()
        members.remove(c)
        await wait_for_async(
            lambda: is_partitioned([a.assigned, b.assigned], PARTITIONS),
            40,
            "a rebalance after a member left",
        )
        await consume_a_round(cluster, [a, b], 2 * ROUND)
        assert await committed_by_admin(admin) == {p: 30 for p in range(PARTITIONS)}

        # The group lives where ZooKeeper says its offsets partition is led, and nowhere else.
        hosting = {
            broker
            for broker in cluster.broker_ids
            if GROUP in {g[0] for g in await admin.list_consumer_groups(broker_ids=[broker])}
        }
        assert hosting == {cluster.coordinator(GROUP)}
    finally:
        for member in members:
            await member.stop()
        await admin.close()

    reader = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    await reader.start()
    try:
        assert [await reader.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)] == [
            30
        ] * PARTITIONS
    finally:
        await reader.stop()


def test_group_rebalances_consumes_and_commits_on_three_brokers(cluster: Cluster) -> None:
    asyncio.run(asyncio.wait_for(group_scenario(cluster), 150))
    assert_no_errors(cluster)
