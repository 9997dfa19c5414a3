"""Faults on a 3-broker cluster on a real ZooKeeper, with librdkafka clients.

- kill -9 the group's coordinator while the group consumes and commits: the group is
  Stable again on a new coordinator (the new leader of its offsets partition), and every
  commit that was acknowledged is still what OffsetFetch returns (or a later one).
- kill -9 the coordinator in the middle of a rebalance: Stable again, with both members,
  on the new coordinator; the acknowledged commit is still there.
- kill -9 the controller: another broker becomes controller and elects new leaders for
  the partitions the dead broker led.

After each, the brokers' traces of the group protocol (one file each, one run) replay
through the reference with no violation (:func:`assert_traces_replay`); where the
coordinator was killed, the group's events come from two brokers. Each test starts and
stops the brokers itself (ZooKeeper is shared by the module); every wait is bounded.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cluster_fixtures import SETTINGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordspec.broker.cluster.launcher import Cluster
from coordspec.conformance.trace.format import validate_file
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings
from coordspec.conformance.tracecheck.summary import Findings
from coordspec.reference.failover.placement import OFFSETS_TOPIC
from coordspec.reference.replication.znodes import TopicPartition as Partition

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

PARTITIONS = 3
TOPIC = "payments"
GROUP = "failover-group"
TRACE_SETTINGS = Settings(config={"initial_rebalance_delay_ms": 0})  # SETTINGS' group setting


def check(*paths: Path) -> Findings:
    return check_files(list(paths), TRACE_SETTINGS, out=io.StringIO())


def assert_traces_replay(
    cluster: Cluster, group: str, *, min_checked: int = 20, moved: bool = False
) -> Findings:
    """The cluster's trace replays through the reference with no violation, and a fair part
    of it was checked: ``min_checked`` events of ``group`` at least; with ``moved``, events
    of the group from two brokers and a ``load_group`` fault on the second."""
    files = cluster.trace_files()
    assert files, f"no broker wrote a trace under {cluster.data_dir}"
    for path in files:
        validate_file(path)
    findings = check(*files)  # the brokers' files as they are: one run, replayed together
    assert findings.violations == [], json.dumps(findings.violations[:1], indent=1)
    assert findings.totals.events - findings.totals.unchecked >= min_checked, findings.totals
    lines = [
        json.loads(line) for path in cluster.trace_files() for line in path.read_text().splitlines()
    ]
    mine = [line for line in lines if line["group_id"] == group]
    assert sum(1 for line in mine if line["kind"] == "response") >= min_checked // 2, (
        f"{len(mine)} records of {group}"
    )
    if moved:
        writers = {
            path.parent.name
            for path in cluster.trace_files()
            for line in path.read_text().splitlines()
            if json.loads(line)["group_id"] == group
        }
        assert len(writers) >= 2, f"the events of {group} are all in {writers}"
        assert any(
            line["kind"] == "fault"
            and line["fault"] == "load_group"
            and line["t_ms"] > mine[0]["t_ms"]
            for line in mine
        )
    return findings


def wait_for(
    condition: Callable[[], bool], poll: Callable[[], object], timeout_s: float, what: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        poll()


def assert_no_errors(cluster: Cluster) -> None:
    """No broker logged an error or a traceback (kazoo's warnings about a lost connection are fine)."""
    for broker in cluster.broker_ids:
        stderr = cluster.stderr(broker)
        assert "Traceback" not in stderr and "ERROR" not in stderr, f"broker {broker}:\n{stderr}"


def create_topic(bootstrap: str, name: str, partitions: int, replication_factor: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, replication_factor)]).values():
        future.result(15)


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % PARTITIONS)
    assert producer.flush(20) == 0


def consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "log_level": 3,
        }
    )


def unanswered(trace: Path) -> list[tuple[str, str]]:
    """(api, group id) of the requests in a broker's trace that have no response there."""
    waiting = {}
    for record in map(json.loads, trace.read_text().splitlines()):
        if record["kind"] == "request":
            waiting[(record["client"], record["correlation_id"])] = (
                record["api"],
                record["group_id"],
            )
        elif record["kind"] == "response":
            waiting.pop((record["client"], record["correlation_id"]), None)
    return list(waiting.values())


def consume_as_a_group(bootstrap: str, topic: str, group: str, count: int) -> None:
    """A consumer of ``group`` reads ``count`` records, commits, fetches its commits back, and leaves."""
    client = consumer(bootstrap, group)
    client.subscribe([topic])
    received: list[bytes] = []
    try:
        wait_for(
            lambda: len(received) >= count,
            lambda: received.extend(
                m.value() for m in [client.poll(0.2)] if m is not None and m.error() is None
            ),
            40,
            f"{count} records",
        )
        committed = client.commit(asynchronous=False)
        assert committed and all(tp.error is None for tp in committed)
        fetched = client.committed(
            [TopicPartition(topic, tp.partition) for tp in committed], timeout=10
        )
        assert [tp.offset for tp in fetched] == [tp.offset for tp in committed]
    finally:
        client.close()


def group_state(bootstrap: str) -> tuple[ConsumerGroupState | None, int | None]:
    """The group's state and coordinator as DescribeGroups on its coordinator reports them."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        description = admin.describe_consumer_groups([GROUP], request_timeout=3)[GROUP].result(5)
    except KafkaException:
        return None, None
    return description.state, description.coordinator.id


def test_kill_coordinator_while_consuming(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(
        tmp_path,
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(60)])
        client = consumer(cluster.bootstrap, GROUP)
        client.subscribe([TOPIC])
        acknowledged: dict[
            int, int
        ] = {}  # partition -> the highest offset whose commit was acknowledged
        consumed = 0

        def consume_and_commit() -> None:
            nonlocal consumed
            message = client.poll(0.1)
            if message is None or message.error() is not None:
                return
            consumed += 1
            position = TopicPartition(TOPIC, message.partition(), message.offset() + 1)
            try:
                result = client.commit(offsets=[position], asynchronous=False)
            except KafkaException:
                return  # not acknowledged: nothing is promised about it
            for tp in result:
                if tp.error is None:
                    acknowledged[tp.partition] = max(acknowledged.get(tp.partition, 0), tp.offset)

        try:
            wait_for(
                lambda: consumed >= 20, consume_and_commit, 30, "the group consuming and committing"
            )
            victim = cluster.coordinator(GROUP)
            before = dict(acknowledged)
            killed_at = time.monotonic()
            cluster.kill(victim)
            wait_for(
                lambda: cluster.coordinator(GROUP) not in (victim, -1),
                consume_and_commit,
                30,
                "a new coordinator",
            )
            new_coordinator = cluster.coordinator(GROUP)
            # Stable again, on the new coordinator, and committing again.
            wait_for(
                lambda: (
                    group_state(cluster.bootstrap) == (ConsumerGroupState.STABLE, new_coordinator)
                ),
                consume_and_commit,
                30,
                "the group Stable on the new coordinator",
            )
            committed_before = sum(acknowledged.values())
            wait_for(
                lambda: sum(acknowledged.values()) > committed_before,
                consume_and_commit,
                30,
                "a commit on the new coordinator",
            )
            recovered_s = time.monotonic() - killed_at
            fetched = client.committed(
                [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10
            )
        finally:
            client.close()
        assert before, "commits were acknowledged before the kill"
        lost = {
            tp.partition: (acknowledged[tp.partition], tp.offset)
            for tp in fetched
            if tp.partition in acknowledged and tp.offset < acknowledged[tp.partition]
        }
        assert lost == {}, f"acknowledged commits lost (partition: acknowledged, fetched): {lost}"
        assert recovered_s < 30
        assert_no_errors(cluster)
    assert_traces_replay(cluster, GROUP, min_checked=40, moved=True)


def test_kill_coordinator_in_the_middle_of_a_rebalance(
    tmp_path: Path, zookeeper_connect: str
) -> None:
    """A second member joins while the first is not polled (librdkafka rejoins only from
    poll), so the group waits in PreparingRebalance; the coordinator dies there. The new
    coordinator loads the last Stable generation, both members join it, and the commit
    acknowledged before the rebalance is still there."""
    with Cluster(
        tmp_path,
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(30)])
        first, second = consumer(cluster.bootstrap, GROUP), consumer(cluster.bootstrap, GROUP)
        first.subscribe([TOPIC])
        try:
            messages = []
            wait_for(
                lambda: bool(messages),
                lambda: messages.extend(
                    m for m in [first.poll(0.1)] if m is not None and m.error() is None
                ),
                30,
                "the first member consuming",
            )
            acknowledged = first.commit(
                offsets=[TopicPartition(TOPIC, messages[0].partition(), messages[0].offset() + 1)],
                asynchronous=False,
            )
            assert all(tp.error is None for tp in acknowledged)
            second.subscribe([TOPIC])
            wait_for(
                lambda: (
                    group_state(cluster.bootstrap)[0] == ConsumerGroupState.PREPARING_REBALANCING
                ),
                lambda: second.poll(0.1),
                30,
                "the group in PreparingRebalance",
            )
            victim = cluster.coordinator(GROUP)
            cluster.kill(victim)

            def poll_both() -> None:
                first.poll(0.05)
                second.poll(0.05)

            wait_for(
                lambda: cluster.coordinator(GROUP) not in (victim, -1),
                poll_both,
                30,
                "a new coordinator",
            )
            new_coordinator = cluster.coordinator(GROUP)
            wait_for(
                lambda: (
                    group_state(cluster.bootstrap) == (ConsumerGroupState.STABLE, new_coordinator)
                    and len(first.assignment()) + len(second.assignment()) == PARTITIONS
                    and first.assignment()
                    and second.assignment()
                ),
                poll_both,
                30,
                "both members Stable on the new coordinator",
            )
            fetched = first.committed(
                [TopicPartition(TOPIC, tp.partition) for tp in acknowledged], timeout=10
            )
        finally:
            first.close()
            second.close()
        assert [(tp.partition, tp.offset) for tp in fetched] == [
            (tp.partition, tp.offset) for tp in acknowledged
        ]
        assert_no_errors(cluster)
    assert_traces_replay(cluster, GROUP, min_checked=20, moved=True)
    # The second member's JoinGroup was parked on the victim when it died: no response in its trace.
    assert ("JoinGroup", GROUP) in unanswered(tmp_path / f"broker-{victim}" / "trace.jsonl"), (
        unanswered(tmp_path / f"broker-{victim}" / "trace.jsonl")
    )


def test_kill_controller(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(
        tmp_path,
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        old = cluster.controller()
        cluster.kill(old)
        cluster.wait(lambda view: view.controller not in (old, -1), "a new controller", 20)
        # The new controller finishes the elections the dead broker's partitions need.
        partitions = [Partition(OFFSETS_TOPIC, p) for p in range(cluster.offsets_partitions)] + [
            Partition(TOPIC, p) for p in range(PARTITIONS)
        ]
        cluster.wait(
            lambda view: all(
                view.leader(tp) not in (old, -1) and old not in view.states[tp].isr
                for tp in partitions
            ),
            "leaders and ISRs without the dead broker",
            20,
        )
        # And the cluster still takes writes with acks=all (from the ISR of the 2 left).
        produce(cluster.bootstrap, TOPIC, [f"after-{i}" for i in range(6)])
        # And serves groups: one consumes what was written, on whichever broker coordinates it now.
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 6)
        assert_no_errors(cluster)
    assert_traces_replay(cluster, GROUP, min_checked=10)


def test_restarted_broker_catches_up(tmp_path: Path, zookeeper_connect: str) -> None:
    """A broker killed and started again over its data directory rejoins: it follows the
    leaders, fetches what it missed, and the leaders add it back to their ISRs."""
    with Cluster(
        tmp_path,
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"before-{i}" for i in range(30)])
        victim = next(b for b in cluster.broker_ids if b != cluster.controller())
        partitions = [Partition(TOPIC, p) for p in range(PARTITIONS)]
        cluster.kill(victim)
        cluster.wait(
            lambda view: all(victim not in view.states[tp].isr for tp in partitions),
            "ISRs without the dead broker",
            20,
        )
        produce(cluster.bootstrap, TOPIC, [f"while-down-{i}" for i in range(30)])
        cluster.start_broker(victim)
        cluster.wait(
            lambda view: all(victim in view.states[tp].isr for tp in partitions),
            "the restarted broker back in every ISR",
            30,
        )

        def segment(broker: int, tp: Partition) -> bytes:
            return (
                tmp_path / f"broker-{broker}" / f"{tp.topic}-{tp.partition}" / "replica.log"
            ).read_bytes()

        cluster.wait(
            lambda view: all(
                segment(victim, tp) == segment(view.leader(tp), tp) for tp in partitions
            ),
            "the restarted broker's logs equal to the leaders'",
            10,
        )
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 60)
        assert_no_errors(cluster)
    assert_traces_replay(cluster, GROUP, min_checked=10)
