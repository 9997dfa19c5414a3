"""librdkafka (confluent-kafka) on a 3-broker cluster on a real ZooKeeper, on topics with
3 replicas produced with acks=all: a group whose coordinator is the leader of its
``__consumer_offsets`` partition consumes and commits, and finds its commits there; a
static member (group.instance.id) restarts within its session and gets its partitions
back in the same generation (the coordinator's trace) while the other member sees no
rebalance; cooperative-sticky moves only the partitions it must, one rebalance at a time;
a member that dies without leaving is expired by the coordinator after its session;
offsets_for_times finds records inside (compressed) batches; transactions are refused at once.

One cluster serves the module (cluster_fixtures); every wait is bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from client_checks import check_offsets_for_times, check_transactions_refused
from cluster_fixtures import (  # noqa: F401 - the two fixtures are used by name
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    assert_no_errors,
    cluster_fixture,
    is_partitioned,
    partition_of,
    values,
    wait_for,
    wait_replicated,
    zookeeper_fixture,
)
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, NewTopic

from coordspec.broker.cluster.launcher import Cluster

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

PARTITIONS = 3


def create_topic(cluster: Cluster, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 3)]).values():
        future.result(15)
    wait_replicated(cluster, name, PARTITIONS)


def produce(cluster: Cluster, topic: str, batch: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3})
    for value in batch:
        producer.produce(topic, value=value, partition=partition_of(value, PARTITIONS))
    assert producer.flush(20) == 0


def join_responses(cluster: Cluster, group: str) -> list[dict]:
    """The successful JoinGroup answers to ``group``'s members, from the brokers' traces of the group protocol."""
    records = [
        json.loads(line) for path in cluster.trace_files() for line in path.read_text().splitlines()
    ]
    return [
        r["fields"]
        for r in records
        if r["kind"] == "response"
        and r["api"] == "JoinGroup"
        and r["group_id"] == group
        and r["fields"]["error_code"] == 0
    ]


def describe(cluster: Cluster, group: str) -> ConsumerGroupDescription:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)


class Member:
    """A consumer polled by the test, remembering what it consumed, each assign and revoke
    callback (incremental ones under cooperative-sticky), and its statistics' rebalance count."""

    def __init__(self, cluster: Cluster, group: str, topic: str, **extra: object) -> None:
        config = {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "log_level": 3,
            "statistics.interval.ms": 200,
            "stats_cb": self._on_stats,
        }
        self.client = Consumer({**config, **extra})
        self.received: list[bytes] = []
        self.errors: list[str] = []
        self.assigns: list[set[int]] = []
        self.revokes: list[set[int]] = []
        self.rebalances = 0  # librdkafka's cgrp.rebalance_cnt, as of the last statistics
        self.stats_seen = 0
        self.closed = False
        self.client.subscribe(
            [topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def _on_assign(self, client: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigns.append({p.partition for p in partitions})

    def _on_revoke(self, client: Consumer, partitions: list[TopicPartition]) -> None:
        self.revokes.append({p.partition for p in partitions})

    def _on_stats(self, stats: str) -> None:
        self.rebalances = json.loads(stats)["cgrp"]["rebalance_cnt"]
        self.stats_seen += 1

    def poll(self) -> None:
        message = self.client.poll(0.05)
        if message is None:
            return
        if message.error():
            self.errors.append(str(message.error()))
        else:
            self.received.append(message.value())

    def assigned(self) -> set[int]:
        return {p.partition for p in self.client.assignment()}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.close()


def polling(*members: Member):
    def poll() -> None:
        for member in members:
            member.poll()

    return poll


def fresh_statistics(member: Member, *others: Member) -> None:
    """Poll until ``member`` has emitted statistics twice more, so its rebalance count is current."""
    seen = member.stats_seen
    wait_for(lambda: member.stats_seen >= seen + 2, 10, "statistics", polling(member, *others))


def test_consumer_group_on_three_brokers(cluster: Cluster) -> None:
    create_topic(cluster, "orders")
    batch = values(0, 30)
    produce(cluster, "orders", batch)
    member = Member(cluster, "cluster-group", "orders")
    try:
        wait_for(
            lambda: len(member.received) >= len(batch), 40, "every produced record", member.poll
        )
        assert sorted(member.received) == sorted(batch) and not member.errors
        committed = member.client.commit(asynchronous=False)
        assert all(tp.error is None for tp in committed)
        fetched = member.client.committed(
            [TopicPartition("orders", p) for p in range(PARTITIONS)], timeout=10
        )
        assert {tp.partition: tp.offset for tp in fetched} == {p: 10 for p in range(PARTITIONS)}
        # The group lives where ZooKeeper says its offsets partition is led.
        assert describe(cluster, "cluster-group").coordinator.id == cluster.coordinator(
            "cluster-group"
        )
    finally:
        member.close()
    assert_no_errors(cluster)


STATIC_SESSION_MS = 10000  # the restart below must fit in it, on a loaded machine too
QUIET_S = (
    2.0  # heartbeats the other member sends after the restart: a rebalance would reach it by then
)


def static_member(cluster: Cluster, instance: str) -> Member:
    return Member(
        cluster,
        "static",
        "audit",
        **{"group.instance.id": instance, "session.timeout.ms": STATIC_SESSION_MS},
    )


def test_static_member_restarts_without_a_rebalance(cluster: Cluster) -> None:
    create_topic(cluster, "audit")
    first, other = static_member(cluster, "auditor-1"), static_member(cluster, "auditor-2")
    members = [first, other]
    try:
        wait_for(
            lambda: is_partitioned([first.assigned(), other.assigned()], PARTITIONS),
            40,
            "two static members sharing the partitions",
            polling(first, other),
        )
        fresh_statistics(other, first)
        kept, before = first.assigned(), describe(cluster, "static")
        assert before.state.name == "STABLE"
        other_callbacks, other_rebalances = (
            (len(other.assigns), len(other.revokes)),
            other.rebalances,
        )

        first.close()  # a static member does not leave the group on close: no LeaveGroup
        restarted = static_member(cluster, "auditor-1")
        members.append(restarted)
        wait_for(
            lambda: restarted.assigned() == kept,
            20,
            "the restarted member's partitions",
            polling(restarted, other),
        )
        quiet_until = time.monotonic() + QUIET_S
        wait_for(
            lambda: time.monotonic() > quiet_until,
            QUIET_S + 1,
            "the other member's heartbeats",
            polling(restarted, other),
        )
        fresh_statistics(other, restarted)

        # The other member was not rebalanced: no callback, no rebalance counted, same partitions.
        assert (
            len(other.assigns),
            len(other.revokes),
        ) == other_callbacks and other.rebalances == other_rebalances
        assert is_partitioned([restarted.assigned(), other.assigned()], PARTITIONS)
        after = describe(cluster, "static")
        assert after.state.name == "STABLE"
        instances = {m.group_instance_id: m for m in after.members}
        assert sorted(instances) == ["auditor-1", "auditor-2"]
        # The restart got a new member id for the same instance, and the same assignment.
        old_ids = {m.group_instance_id: m.member_id for m in before.members}
        assert (
            instances["auditor-1"].member_id != old_ids["auditor-1"]
            and instances["auditor-2"].member_id == old_ids["auditor-2"]
        )
        assert {tp.partition for tp in instances["auditor-1"].assignment.topic_partitions} == kept
        # Its coordinator answered the rejoin from the Stable group: the generation did not move.
        *earlier, rejoin = join_responses(cluster, "static")
        assert rejoin["member_id"] == instances["auditor-1"].member_id
        assert rejoin["generation_id"] == max(j["generation_id"] for j in earlier)
        assert after.coordinator.id == cluster.coordinator("static")
    finally:
        for member in members:
            member.close()
    assert_no_errors(cluster)


def test_cooperative_sticky_moves_only_the_partitions_it_must(cluster: Cluster) -> None:
    create_topic(cluster, "events")
    sticky = {"partition.assignment.strategy": "cooperative-sticky"}
    a = Member(cluster, "sticky", "events", **sticky)
    members = [a]
    try:
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            30,
            "the first member's assignment",
            a.poll,
        )
        b = Member(cluster, "sticky", "events", **sticky)
        members.append(b)
        wait_for(
            lambda: is_partitioned([a.assigned(), b.assigned()], PARTITIONS),
            40,
            "an incremental rebalance",
            polling(a, b),
        )
        stayed = a.assigned()
        # Incremental: the first member gave up only what moved to the second, and kept the rest throughout.
        assert (
            a.revokes
            and set().union(*a.revokes) == b.assigned()
            and stayed == set(range(PARTITIONS)) - b.assigned()
        )
        assert a.assigns[0] == set(range(PARTITIONS)) and all(
            not assigned for assigned in a.assigns[1:]
        )
        assert describe(cluster, "sticky").partition_assignor == "cooperative-sticky"

        revokes_before = len(a.revokes)
        moved = b.assigned()
        b.close()  # LeaveGroup: its partitions go to the member that stays
        members.remove(b)
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            30,
            "the partitions of the member that left",
            a.poll,
        )
        # The staying member kept its partitions: nothing revoked, only what it gained assigned.
        assert len(a.revokes) == revokes_before and moved in a.assigns and not a.errors
    finally:
        for member in members:
            member.close()
    assert_no_errors(cluster)


CRASHING_MEMBER = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "session.timeout.ms": int(sys.argv[4]),
              "heartbeat.interval.ms": int(sys.argv[5]), "log_level": 0})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.1)
"""


def test_a_member_that_dies_without_leaving_is_expired_by_its_coordinator(cluster: Cluster) -> None:
    create_topic(cluster, "payments")
    survivor = Member(cluster, "settlement", "payments")
    try:
        wait_for(
            lambda: survivor.assigned() == set(range(PARTITIONS)),
            30,
            "the first member's assignment",
            survivor.poll,
        )
        doomed = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CRASHING_MEMBER,
                cluster.bootstrap,
                "settlement",
                "payments",
                str(SESSION_TIMEOUT_MS),
                str(HEARTBEAT_INTERVAL_MS),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(
                lambda: 0 < len(survivor.assigned()) < PARTITIONS,
                40,
                "a rebalance over two members",
                survivor.poll,
            )
        finally:
            doomed.kill()  # no LeaveGroup: only the session timeout on the coordinator can remove it
            doomed.wait(10)
        killed_at = time.monotonic()
        wait_for(
            lambda: survivor.assigned() == set(range(PARTITIONS)),
            30,
            "the dead member's partitions",
            survivor.poll,
        )
        # Removed by its session running out, not at once (its last heartbeat may predate the kill on a loaded machine).
        assert time.monotonic() - killed_at > SESSION_TIMEOUT_MS / 2000
        assert describe(cluster, "settlement").coordinator.id == cluster.coordinator("settlement")
    finally:
        survivor.close()
    assert_no_errors(cluster)


def test_offsets_for_times_finds_records_inside_batches(cluster: Cluster) -> None:
    check_offsets_for_times(cluster.bootstrap, cluster.data_dir, "times", replicas=3)
    assert_no_errors(cluster)


def test_a_transactional_producer_fails_at_once(cluster: Cluster) -> None:
    check_transactions_refused(cluster.bootstrap, "idempotent", replicas=3)
    assert_no_errors(cluster)
