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
from pathlib import Path

from cluster_fixtures import BROKER_ARGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros
from test_cluster_failover import PARTITIONS, assert_no_errors, assert_traces_replay, consume_as_a_group, create_topic, produce

from broker.cluster.launcher import Cluster
from broker.cluster.peer_wire import PeerConnection
from reference.replication.znodes import TopicPartition

TOPIC = "ledger"
MARK = b"zombie-write"
GROUP = "after-the-zombie"


def one_record_batch(value: bytes) -> bytes:
    timestamp = TZAwareMicros.parse(datetime.datetime.now(datetime.UTC))
    buffer = io.BytesIO()
    record = Record(attributes=0, timestamp=timestamp, offset=0, key=None, value=value, headers=())
    write_new_batch(buffer, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1, records=(record,), attributes=0))
    return buffer.getvalue()


async def produce_to(address: tuple[str, int], topic: str, partition: int, value: bytes, acks: int = -1) -> int:
    """Produce one record (acks=all unless told) straight to one broker; the error code it answers."""
    connection = PeerConnection(*address, "zombie-test", timeout_s=15)
    try:
        body = await connection.request(0, 9, {"transactional_id": None, "acks": acks, "timeout": 10_000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": one_record_batch(value)}]}]})
    finally:
        connection.close()
    return int(body.responses[0].partition_responses[0].error_code)


def test_paused_leader_whose_session_expired_writes_nothing(tmp_path: Path, zookeeper_connect: str) -> None:
    args = (*BROKER_ARGS, "--replica-lag-time-max-ms", "2000")
    with Cluster(tmp_path, 3, zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}", broker_args=args) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"before-{i}" for i in range(9)])
        tp = next(TopicPartition(TOPIC, p) for p in range(PARTITIONS) if cluster.view.leader(TopicPartition(TOPIC, p)) != cluster.controller())
        zombie = cluster.view.leader(tp)
        cluster.pause(zombie)
        try:
            cluster.wait(lambda view: view.leader(tp) not in (zombie, -1), "a new leader while the old one sleeps", 20)
        finally:
            cluster.resume(zombie)
        elected = cluster.view.states[tp]
        error = asyncio.run(produce_to(cluster.peers[zombie], TOPIC, tp.partition, MARK))
        assert error != 0, "the zombie acknowledged a write"
        cluster.wait(lambda view: zombie in view.states[tp].isr, "the old leader following the new one, back in the ISR", 20)
        published = cluster.view.states[tp]
        assert (published.leader, published.leader_epoch) == (elected.leader, elected.leader_epoch)
        segments = [(tmp_path / f"broker-{b}" / f"{tp.topic}-{tp.partition}" / "replica.log").read_bytes() for b in cluster.broker_ids]
        assert not any(MARK in segment for segment in segments), (zombie, elected, published, [MARK in s for s in segments], [len(s) for s in segments])
        # A group reads what was committed (not the zombie's record), and its trace replays.
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 9)
        assert_no_errors(cluster)
    assert_traces_replay(cluster, tmp_path / "trace.jsonl", GROUP, min_checked=10)
