"""librdkafka (confluent-kafka) against the broker: a consumer group that produces,
subscribes, rebalances when a member joins and when one leaves, consumes, commits, and
finds its commits again after the broker restarts; static membership; cooperative-sticky;
offsets_for_times inside (compressed) batches; transactions refused at once.

Every test starts its own broker on a free port and bounds every wait.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from client_checks import check_offsets_for_times, check_transactions_refused
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.trace.format import validate_file
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings
from coordspec.reference.group.json_values import decode_request, decode_response

pytestmark = pytest.mark.wire

BROKER_ARGS = ("--broker-config", "group.initial.rebalance.delay.ms=0")
PARTITIONS = 4
RECORDS = 40


def wait_for(
    condition: Callable[[], bool], poll: Callable[[], object], timeout_s: float, what: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        poll()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(10)


def produce(bootstrap: str, topic: str, count: int, partitions: int, first: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        producer.produce(
            topic, key=str(i).encode(), value=f"value-{i}".encode(), partition=i % partitions
        )
    assert producer.flush(10) == 0


def partition_of(value: bytes) -> int:
    return int(value.decode().removeprefix("value-")) % PARTITIONS


def consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
        "log_level": 3,
    }
    config.update(extra)
    return Consumer(config)


class Member:
    """A consumer polled by the test, remembering what it consumed and was assigned."""

    def __init__(self, client: Consumer, topic: str) -> None:
        self.client = client
        self.received: list[bytes] = []
        self.errors: list[str] = []
        self.revoked: list[set[int]] = []
        client.subscribe([topic], on_revoke=self._on_revoke)

    def _on_revoke(self, client: Consumer, partitions: list[TopicPartition]) -> None:
        self.revoked.append({p.partition for p in partitions})

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


def poll_all(*members: Member) -> Callable[[], None]:
    def poll() -> None:
        for member in members:
            member.poll()

    return poll


def assert_trace_replays(path: Path) -> None:
    """The broker's trace, replayed through the conformance oracle, has no violation."""
    findings = check_files(
        [path], Settings(config={"initial_rebalance_delay_ms": 0}), out=io.StringIO()
    )
    assert findings.totals.events > 0
    assert findings.violations == [], findings.violations[0]["message"]


def test_consumer_group_rebalances_consumes_commits_and_survives_a_restart(tmp_path: Path) -> None:
    expected = {f"value-{i}".encode() for i in range(RECORDS)}
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        create_topic(broker.bootstrap, "orders", PARTITIONS)

        a = Member(consumer(broker.bootstrap, "billing"), "orders")
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            poll_all(a),
            20,
            "the first member's assignment",
        )

        b = Member(consumer(broker.bootstrap, "billing"), "orders")
        both = poll_all(a, b)
        wait_for(
            lambda: len(a.assigned()) == 2 and len(b.assigned()) == 2,
            both,
            30,
            "a rebalance over two members",
        )
        assert a.assigned() | b.assigned() == set(range(PARTITIONS))
        produce(broker.bootstrap, "orders", RECORDS, PARTITIONS)
        wait_for(lambda: set(a.received) | set(b.received) == expected, both, 20, "every record")
        assert {partition_of(v) for v in a.received} == a.assigned()
        assert {partition_of(v) for v in b.received} == b.assigned()

        # Each member commits what it consumed: together, every partition at its end.
        a.client.commit(asynchronous=False)
        b.client.commit(asynchronous=False)
        everything = [TopicPartition("orders", p) for p in range(PARTITIONS)]
        committed = a.client.committed(everything, timeout=10)
        assert [(p.partition, p.offset) for p in committed] == [
            (p, RECORDS // PARTITIONS) for p in range(PARTITIONS)
        ]

        b.client.close()  # LeaveGroup: the survivor takes every partition
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            poll_all(a),
            30,
            "a rebalance after a member left",
        )
        a.received.clear()
        produce(
            broker.bootstrap, "orders", PARTITIONS, PARTITIONS, first=RECORDS
        )  # one more per partition
        wait_for(
            lambda: len(a.received) >= PARTITIONS,
            poll_all(a),
            20,
            "the records produced after the rebalance",
        )
        # It resumed from the committed offsets: only the new records, nothing consumed twice.
        assert sorted(a.received) == sorted(
            f"value-{i}".encode() for i in range(RECORDS, RECORDS + PARTITIONS)
        )
        a.client.commit(asynchronous=False)
        assert not a.errors and not b.errors
        a.client.close()

    check_trace(
        tmp_path / "trace.jsonl",
        {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch"},
    )

    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        reader = consumer(broker.bootstrap, "billing")
        committed = reader.committed(
            [TopicPartition("orders", p) for p in range(PARTITIONS)], timeout=10
        )
        assert [(p.partition, p.offset) for p in committed] == [
            (p, RECORDS // PARTITIONS + 1) for p in range(PARTITIONS)
        ]
        reader.close()
    assert_trace_replays(tmp_path / "trace.jsonl")  # across the restart


def join_responses(trace: Path, group: str) -> list[dict]:
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    return [
        line["fields"]
        for line in lines
        if line["kind"] == "response" and line["api"] == "JoinGroup" and line["group_id"] == group
    ]


def check_trace(path: Path, must_have: set[str]) -> None:
    """The broker's trace is valid in the conformance trace format and replays into the reference's types."""
    assert validate_file(path) > 0
    apis = set()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] not in ("request", "response"):
            continue  # what the broker showed its coordinator: a consumer group's topics
        apis.add(record["api"])
        if record["kind"] == "request":
            decode_request(
                record["api"],
                record["api_version"],
                record["correlation_id"],
                record["t_ms"],
                record["fields"],
            )
        else:
            decode_response(record["api"], record["fields"])
    assert must_have <= apis


def test_static_member_rejoins_without_a_rebalance(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        create_topic(broker.bootstrap, "audit", 2)
        first = Member(
            consumer(broker.bootstrap, "static", **{"group.instance.id": "auditor-1"}), "audit"
        )
        wait_for(
            lambda: first.assigned() == {0, 1},
            poll_all(first),
            20,
            "the static member's assignment",
        )
        first.client.close()  # a static member does not leave the group on close

        second = Member(
            consumer(broker.bootstrap, "static", **{"group.instance.id": "auditor-1"}), "audit"
        )
        wait_for(
            lambda: second.assigned() == {0, 1},
            poll_all(second),
            20,
            "the restarted static member's assignment",
        )
        second.client.close()

    assert_trace_replays(tmp_path / "trace.jsonl")
    joins = [r for r in join_responses(tmp_path / "trace.jsonl", "static") if r["error_code"] == 0]
    assert len(joins) == 2
    # The rejoin with a known group.instance.id is answered from the Stable group: same generation.
    assert joins[0]["generation_id"] == joins[1]["generation_id"]
    assert joins[0]["member_id"] != joins[1]["member_id"]


def test_cooperative_sticky_moves_only_the_partitions_it_must(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        create_topic(broker.bootstrap, "events", PARTITIONS)
        sticky = {"partition.assignment.strategy": "cooperative-sticky"}
        a = Member(consumer(broker.bootstrap, "sticky", **sticky), "events")
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            poll_all(a),
            20,
            "the first member's assignment",
        )

        b = Member(consumer(broker.bootstrap, "sticky", **sticky), "events")
        both = poll_all(a, b)
        wait_for(
            lambda: len(a.assigned()) == 2 and len(b.assigned()) == 2,
            both,
            30,
            "an incremental rebalance",
        )
        assert a.assigned().isdisjoint(b.assigned())
        # Incremental: the first member gave up only the two partitions that moved, never all four.
        assert a.revoked and all(len(revoked) == 2 for revoked in a.revoked if revoked)
        assert a.revoked[-1] == b.assigned()
        b.client.close()
        a.client.close()
    assert_trace_replays(tmp_path / "trace.jsonl")
    chosen = {
        r["protocol_name"]
        for r in join_responses(tmp_path / "trace.jsonl", "sticky")
        if r["error_code"] == 0
    }
    assert chosen == {"cooperative-sticky"}


def test_admin_lists_describes_and_deletes_groups(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        create_topic(broker.bootstrap, "ledger", 2)
        member = Member(
            consumer(broker.bootstrap, "reporting", **{"client.id": "reporter"}), "ledger"
        )
        wait_for(lambda: member.assigned() == {0, 1}, poll_all(member), 20, "the assignment")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})

        listed = admin.list_consumer_groups(request_timeout=10).result(10)
        assert [(g.group_id, g.state.name) for g in listed.valid] == [("reporting", "STABLE")]
        described = admin.describe_consumer_groups(["reporting"], request_timeout=10)[
            "reporting"
        ].result(10)
        assert described.state.name == "STABLE" and described.partition_assignor == "range"
        (only,) = described.members
        assert only.client_id == "reporter" and only.host == "/127.0.0.1"
        assert {tp.partition for tp in only.assignment.topic_partitions} == {0, 1}

        # A group with members cannot be deleted (NON_EMPTY_GROUP); once empty, it can.
        refused = admin.delete_consumer_groups(["reporting"], request_timeout=10)["reporting"]
        assert "NON_EMPTY_GROUP" in str(refused.exception(10))
        member.client.close()
        admin.delete_consumer_groups(["reporting"], request_timeout=10)["reporting"].result(10)
        assert admin.list_consumer_groups(request_timeout=10).result(10).valid == []
    assert_trace_replays(tmp_path / "trace.jsonl")
    check_trace(tmp_path / "trace.jsonl", {"DescribeGroups", "ListGroups", "DeleteGroups"})


CRASHING_MEMBER = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "session.timeout.ms": 6000,
              "heartbeat.interval.ms": 300, "log_level": 0})
c.subscribe([sys.argv[3]], on_assign=lambda c, ps: print("assigned", len(ps), flush=True))
while True:
    c.poll(0.1)
"""


def test_a_member_that_dies_without_leaving_is_expired_after_its_session(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        create_topic(broker.bootstrap, "payments", PARTITIONS)
        a = Member(consumer(broker.bootstrap, "settlement"), "payments")
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            poll_all(a),
            20,
            "the first member's assignment",
        )
        doomed = subprocess.Popen(
            [sys.executable, "-c", CRASHING_MEMBER, broker.bootstrap, "settlement", "payments"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(
                lambda: len(a.assigned()) == 2, poll_all(a), 30, "a rebalance over two members"
            )
        finally:
            doomed.kill()  # no LeaveGroup: only the session timeout can remove it
            doomed.wait(10)
        killed_at = time.monotonic()
        wait_for(
            lambda: a.assigned() == set(range(PARTITIONS)),
            poll_all(a),
            20,
            "the dead member's partitions",
        )
        # The session is 6 s from the last heartbeat (every 0.3 s); the survivor then needs a
        # heartbeat and a rejoin.
        assert 5 < time.monotonic() - killed_at < 6 + 4
        a.client.close()
    assert_trace_replays(tmp_path / "trace.jsonl")


def test_create_topics_answers_kafkas_errors(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        outcomes = admin.create_topics(
            [
                NewTopic("fine", 2, 1),
                NewTopic("bad/name", 1, 1),
                NewTopic("replicated", 1, 3),
                NewTopic("configured", 1, 1, config={"cleanup.policy": "compact"}),
            ],
            request_timeout=10,
        )
        assert outcomes["fine"].result(10) is None
        errors = {
            name: outcomes[name].exception(10).args[0].code()
            for name in ("bad/name", "replicated", "configured")
        }
        # INVALID_TOPIC_EXCEPTION, INVALID_REPLICATION_FACTOR, INVALID_CONFIG
        assert errors == {"bad/name": 17, "replicated": 38, "configured": 40}
        again = admin.create_topics([NewTopic("fine", 2, 1)], request_timeout=10)["fine"].exception(
            10
        )
        assert again.args[0].code() == 36  # TOPIC_ALREADY_EXISTS
        assert sorted(admin.list_topics(timeout=10).topics) == ["__consumer_offsets", "fine"]


def test_offsets_for_times_finds_records_inside_batches(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        check_offsets_for_times(broker.bootstrap, tmp_path, "times", replicas=1)


def test_a_transactional_producer_fails_at_once(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        check_transactions_refused(broker.bootstrap, "idempotent", replicas=1)
