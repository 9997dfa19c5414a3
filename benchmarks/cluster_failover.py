"""kill -9 of a group's coordinator on a 3-broker cluster on ZooKeeper: how long until the
group is Stable and committing again on the new coordinator, and how many acknowledged
commits were lost (goal: session timeout + 2 s, and 0), for a classic group and a KIP-848
consumer group side by side.

    .venv/bin/python benchmarks/cluster_failover.py [--runs 3] [--zookeeper-session-timeout-ms 4000]
        [--protocol classic|consumer|both]

One librdkafka consumer commits every record it consumes, synchronously; every commit the
coordinator acknowledged is remembered. Each run kills the coordinator of the group and
prints, from the kill: the new leader of the group's offsets partition published in
ZooKeeper, the first DescribeGroups answering Stable from the new coordinator, the first
acknowledged commit after the kill, and the acknowledged commits OffsetFetch no longer
returns. The broker's ZooKeeper session timeout bounds the first figure from below: until
the dead broker's session expires, nobody knows it is dead.

With both protocols (the default) each run starts a fresh cluster for each, classic first,
and the last line compares their median times to Stable and committing. The consumer group
(`group.protocol=consumer`) gets the classic consumer's timing as the broker's settings
(`group.consumer.session.timeout.ms`, `group.consumer.heartbeat.interval.ms`), since under
KIP-848 the coordinator, not the client, decides them. Its Stable is read with
ConsumerGroupDescribe, which librdkafka's admin client sends for a consumer group.
"""

from __future__ import annotations

import argparse
import statistics
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
SESSION_MS, HEARTBEAT_MS = 6000, 300
# What each protocol's consumer and brokers are told: the same session and heartbeat interval,
# set by the client in the classic protocol and by the coordinator in KIP-848's.
CLIENT = {
    "classic": {"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS},
    "consumer": {"group.protocol": "consumer"},
}
BROKERS = {
    "classic": {},
    "consumer": {
        "group.consumer.session.timeout.ms": SESSION_MS,
        "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
    },
}


def run(
    zookeeper_connect: str, data_dir: Path, session_ms: int, protocol: str
) -> tuple[float, float, float, int]:
    settings = {
        "group.initial.rebalance.delay.ms": 0,
        "zookeeper.session.timeout.ms": session_ms,
        "min.insync.replicas": 2,  # the cluster default the recorded figures were measured with
        **BROKERS[protocol],
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
                "log_level": 0,
                **CLIENT[protocol],
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
    parser.add_argument("--protocol", choices=("classic", "consumer", "both"), default="both")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    protocols = ("classic", "consumer") if args.protocol == "both" else (args.protocol,)
    session_s = args.zookeeper_session_timeout_ms / 1000
    print(
        f"kill -9 of the coordinator, 3 brokers, ZooKeeper session timeout {session_s:.1f} s (goal: Stable and committing "
        f"within {session_s + 2:.1f} s, 0 lost)"
    )
    print("run  protocol  new leader  Stable on it  committing  lost acknowledged commits")
    recovered: dict[str, list[float]] = {protocol: [] for protocol in protocols}
    try:
        with (
            zookeeper(1) as zk,
            tempfile.TemporaryDirectory(prefix="coordspec-bench-") as directory,
        ):
            for i in range(args.runs):
                for protocol in protocols:
                    elected, stable, committing, lost = run(
                        zk.connect_string,
                        Path(directory) / f"run{i}-{protocol}",
                        args.zookeeper_session_timeout_ms,
                        protocol,
                    )
                    recovered[protocol].append(max(stable, committing))
                    print(
                        f"{i + 1:>3}  {protocol:<8}  {elected:>9.2f}s  {stable:>11.2f}s  "
                        f"{committing:>9.2f}s  {lost}",
                        flush=True,
                    )
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    for protocol, times in recovered.items():
        median = statistics.median(times)
        verdict = "met" if max(times) <= session_s + 2 else "NOT met"
        print(f"{protocol}: Stable and committing after {median:.2f} s (median), goal {verdict}")
    if len(recovered) == 2:
        ratio = statistics.median(recovered["consumer"]) / statistics.median(recovered["classic"])
        print(f"consumer group / classic group: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
