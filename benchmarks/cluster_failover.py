"""kill -9 of a group's coordinator on a 3-broker cluster on ZooKeeper: how long until the
group is Stable and committing again on the new coordinator, and how many acknowledged
commits were lost (goal: session timeout + 2 s, and 0).

    .venv/bin/python benchmarks/cluster_failover.py [--runs 3] [--zookeeper-session-timeout-ms 4000]

One librdkafka consumer commits every record it consumes, synchronously; every commit the
coordinator acknowledged is remembered. Each run kills the coordinator of the group and
prints, from the kill: the new leader of the group's offsets partition published in
ZooKeeper, the first DescribeGroups answering Stable from the new coordinator, the first
acknowledged commit after the kill, and the acknowledged commits OffsetFetch no longer
returns. The broker's ZooKeeper session timeout bounds the first figure from below: until
the dead broker's session expires, nobody knows it is dead.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.zookeeper.process import zookeeper

TOPIC, GROUP, PARTITIONS = "bench", "bench-group", 3


def run(zookeeper_connect: str, data_dir: Path, session_ms: int) -> tuple[float, float, float, int]:
    settings = {
        "group.initial.rebalance.delay.ms": 0,
        "zookeeper.session.timeout.ms": session_ms,
        "min.insync.replicas": 2,  # the cluster default the recorded figures were measured with
    }
    with Cluster(
        data_dir, 3, zookeeper_connect=f"{zookeeper_connect}/{data_dir.name}", settings=settings
    ) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]).values():
            future.result(15)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0})
        for i in range(600):
            producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
        producer.flush(30)
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                "log_level": 0,
            }
        )
        consumer.subscribe([TOPIC])
        acknowledged: dict[int, int] = {}
        last_ack = [0.0]

        def step() -> None:
            message = consumer.poll(0.05)
            if message is None or message.error() is not None:
                return
            try:
                result = consumer.commit(
                    offsets=[TopicPartition(TOPIC, message.partition(), message.offset() + 1)],
                    asynchronous=False,
                )
            except KafkaException:
                return
            for tp in result:
                if tp.error is None:
                    acknowledged[tp.partition] = max(acknowledged.get(tp.partition, 0), tp.offset)
                    last_ack[0] = time.monotonic()

        def until(condition, timeout_s: float = 60) -> float:
            deadline = time.monotonic() + timeout_s
            while not condition():
                if time.monotonic() > deadline:
                    raise TimeoutError("the group did not recover")
                step()
            return time.monotonic()

        def stable_on(broker: int) -> bool:
            try:
                description = admin.describe_consumer_groups([GROUP], request_timeout=2)[
                    GROUP
                ].result(3)
            except KafkaException:
                return False
            return (
                description.state == ConsumerGroupState.STABLE
                and description.coordinator.id == broker
            )

        try:
            until(lambda: len(acknowledged) == PARTITIONS)
            victim = cluster.coordinator(GROUP)
            killed = time.monotonic()
            cluster.kill(victim)
            elected = until(lambda: cluster.coordinator(GROUP) not in (victim, -1)) - killed
            new = cluster.coordinator(GROUP)
            stable = until(lambda: stable_on(new)) - killed
            committing = until(lambda: last_ack[0] > killed) - killed
            fetched = consumer.committed(
                [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10
            )
        finally:
            consumer.close()
        lost = sum(1 for tp in fetched if tp.offset < acknowledged.get(tp.partition, 0))
        return elected, stable, committing, lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--zookeeper-session-timeout-ms", type=int, default=4000)
    args = parser.parse_args()
    session_s = args.zookeeper_session_timeout_ms / 1000
    print(
        f"kill -9 of the coordinator, 3 brokers, ZooKeeper session timeout {session_s:.1f} s (goal: Stable and committing "
        f"within {session_s + 2:.1f} s, 0 lost)"
    )
    print("run  new leader  Stable on it  committing  lost acknowledged commits")
    with zookeeper(1) as zk, tempfile.TemporaryDirectory(prefix="coordspec-bench-") as directory:
        for i in range(args.runs):
            elected, stable, committing, lost = run(
                zk.connect_string, Path(directory) / f"run{i}", args.zookeeper_session_timeout_ms
            )
            print(f"{i + 1:>3}  {elected:>9.2f}s  {stable:>11.2f}s  {committing:>9.2f}s  {lost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
