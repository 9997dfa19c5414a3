"""Expire a partition leader's ZooKeeper session while it is paused (SIGSTOP), on a
3-broker cluster on a real ZooKeeper.

While it sleeps the controller elects another leader. When it wakes it is a zombie that
may still believe it leads. A produce sent straight to it with acks=all is never
acknowledged: the followers fetch from the new leader, so the zombie's high watermark
cannot pass the record, and it steps down, either because its ShrinkIsr write fails on
the zk_version or because its new session hears the controller's decision, whichever
comes first. The leader the controller elected stays the published one, and the zombie's
record ends up in no log: following the new leader, the zombie truncates it away
(leader-epoch truncation, which this test is the end-to-end check of). A group then
reads what was committed, and the brokers' traces replay through the reference.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import json
from pathlib import Path

import pytest
from cluster_fixtures import SETTINGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as ConfluentPartition
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros
from test_cluster_failover import (
    PARTITIONS,
    assert_no_errors,
    assert_traces_replay,
    consume_as_a_group,
    consumer,
    create_topic,
    produce,
    wait_for,
)

from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.cluster.peer_wire import PeerConnection
from coordspec.reference.replication.znodes import TopicPartition

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TOPIC = "ledger"
MARK = b"zombie-write"
GROUP = "after-the-zombie"


def one_record_batch(value: bytes) -> bytes:
    timestamp = TZAwareMicros.parse(datetime.datetime.now(datetime.UTC))
    buffer = io.BytesIO()
    record = Record(attributes=0, timestamp=timestamp, offset=0, key=None, value=value, headers=())
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=-1, producer_epoch=-1, base_sequence=-1, records=(record,), attributes=0
        ),
    )
    return buffer.getvalue()


async def produce_to(
    address: tuple[str, int], topic: str, partition: int, value: bytes, acks: int = -1
) -> int:
    """Produce one record (acks=all unless told) straight to one broker; the error code it answers."""
    connection = PeerConnection(*address, "zombie-test", timeout_s=15)
    try:
        body = await connection.request(
            0,
            9,
            {
                "transactional_id": None,
                "acks": acks,
                "timeout": 10_000,
                "topic_data": [
                    {
                        "name": topic,
                        "partition_data": [
                            {"index": partition, "records": one_record_batch(value)}
                        ],
                    }
                ],
            },
        )
    finally:
        connection.close()
    return int(body.responses[0].partition_responses[0].error_code)


async def commit_to(
    address: tuple[str, int],
    group: str,
    member_id: str,
    generation: int,
    topic: str,
    partition: int,
    offset: int,
) -> int:
    """OffsetCommit v8 of one offset straight to one broker; the error code it answers."""
    connection = PeerConnection(*address, "zombie-test", timeout_s=15)
    try:
        body = await connection.request(
            8,
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": generation,
                "member_id": member_id,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": partition,
                                "committed_offset": offset,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
    finally:
        connection.close()
    return int(body.topics[0].partitions[0].error_code)


def last_member(trace: Path, group: str) -> tuple[str, int]:
    """The member id and generation of the last JoinGroup answer in a broker's trace."""
    joins = [
        r["fields"]
        for r in map(json.loads, trace.read_text().splitlines())
        if r["group_id"] == group
        and r["kind"] == "response"
        and r["api"] == "JoinGroup"
        and r["fields"]["error_code"] == 0
    ]
    return joins[-1]["member_id"], joins[-1]["generation_id"]


def test_paused_leader_whose_session_expired_writes_nothing(
    tmp_path: Path, zookeeper_connect: str
) -> None:
    settings = {**SETTINGS, "replica.lag.time.max.ms": 2000}
    with Cluster(
        tmp_path, 3, zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}", settings=settings
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"before-{i}" for i in range(9)])
        tp = next(
            TopicPartition(TOPIC, p)
            for p in range(PARTITIONS)
            if cluster.view.leader(TopicPartition(TOPIC, p)) != cluster.controller()
        )
        zombie = cluster.view.leader(tp)
        cluster.pause(zombie)
        try:
            cluster.wait(
                lambda view: view.leader(tp) not in (zombie, -1),
                "a new leader while the old one sleeps",
                20,
            )
        finally:
            cluster.resume(zombie)
        elected = cluster.view.states[tp]
        error = asyncio.run(produce_to(cluster.peers[zombie], TOPIC, tp.partition, MARK))
        assert error != 0, "the zombie acknowledged a write"
        cluster.wait(
            lambda view: zombie in view.states[tp].isr,
            "the old leader following the new one, back in the ISR",
            20,
        )
        published = cluster.view.states[tp]
        assert (published.leader, published.leader_epoch) == (elected.leader, elected.leader_epoch)
        segments = [
            (tmp_path / f"broker-{b}" / f"{tp.topic}-{tp.partition}" / "replica.log").read_bytes()
            for b in cluster.broker_ids
        ]
        assert not any(MARK in segment for segment in segments), (
            zombie,
            elected,
            published,
            [MARK in s for s in segments],
            [len(s) for s in segments],
        )
        # A group reads what was committed (not the zombie's record), and its trace replays.
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 9)
        assert_no_errors(cluster)
    assert_traces_replay(cluster, GROUP, min_checked=10)


def test_paused_coordinator_resumes_as_a_zombie(tmp_path: Path, zookeeper_connect: str) -> None:
    """The group's coordinator pauses while the group consumes and commits; its session
    expires and the new leader of its offsets partition loads the group. The group goes on
    there, with every acknowledged commit. When the old coordinator resumes it handles what
    reached it meanwhile from what it knew (a zombie coordinator) until it hears that it no
    longer leads and resigns; a commit sent straight to it is never acknowledged (CF-10),
    and the acknowledged commits are what the group fetches back. The brokers' traces replay through the reference: the group's events from both coordinators, on one
    timeline."""
    with Cluster(
        tmp_path,
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
    ) as cluster:
        group = next(
            g
            for g in (f"zombie-group-{i}" for i in range(30))
            if cluster.coordinator(g) != cluster.controller()
        )
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(90)])
        client = consumer(cluster.bootstrap, group)
        client.subscribe([TOPIC])
        acknowledged: dict[
            int, int
        ] = {}  # partition -> the highest offset whose commit was acknowledged

        def commit(offsets: list[ConfluentPartition] | None = None) -> None:
            try:  # without offsets: every position the consumer has reached
                result = (
                    client.commit(offsets=offsets, asynchronous=False)
                    if offsets
                    else client.commit(asynchronous=False)
                )
            except KafkaException:
                return  # not acknowledged: nothing is promised about it
            for tp in result:
                if tp.error is None:
                    acknowledged[tp.partition] = max(acknowledged.get(tp.partition, 0), tp.offset)

        def consume(commit_it: bool) -> None:
            message = client.poll(0.1)
            if message is not None and message.error() is None and commit_it:
                commit([ConfluentPartition(TOPIC, message.partition(), message.offset() + 1)])

        try:
            wait_for(
                lambda: len(acknowledged) == PARTITIONS,
                lambda: consume(True),
                30,
                "commits on every partition",
            )
            zombie = cluster.coordinator(group)
            cluster.pause(zombie)
            try:
                # No commits while it sleeps: a synchronous commit to a paused broker waits for it.
                wait_for(
                    lambda: cluster.coordinator(group) not in (zombie, -1),
                    lambda: consume(False),
                    30,
                    "a new coordinator",
                )
            finally:
                cluster.resume(zombie)
            # Straight to the zombie, as a member of the generation it knows: never acknowledged.
            member_id, generation = last_member(
                tmp_path / f"broker-{zombie}" / "trace.jsonl", group
            )
            assert (
                asyncio.run(
                    commit_to(
                        cluster.peers[zombie],
                        group,
                        member_id,
                        generation,
                        TOPIC,
                        0,
                        acknowledged[0],
                    )
                )
                != 0
            )
            successor = cluster.coordinator(group)
            committed_before = sum(acknowledged.values())
            wait_for(
                lambda: sum(acknowledged.values()) > committed_before,
                lambda: (consume(False), commit()),
                60,
                "a commit on the new coordinator of what was read meanwhile",
            )
            fetched = client.committed(
                [ConfluentPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10
            )
        finally:
            client.close()
        assert cluster.coordinator(group) == successor != zombie
        assert {tp.partition: tp.offset for tp in fetched} == acknowledged
        assert_no_errors(cluster)
    assert_traces_replay(cluster, group, min_checked=30, moved=True)
