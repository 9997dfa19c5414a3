"""The recording proxy (conformance/trace/proxy.py) with real clients behind it:
confluent-kafka against librdkafka's mock cluster, kafka-python against the project's
broker. Clients stay behind the proxy (Metadata and FindCoordinator name its listeners),
the group protocol is recorded as a trace, and the trace checker reads it."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.cli.trace import main
from coordspec.conformance.suite.mock_target import MockCluster
from coordspec.conformance.trace import proxy
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings

pytestmark = pytest.mark.wire

GROUP_APIS = {"JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup"}


class ProxyThread:
    """The proxy on its own event loop in a thread, as ``coordspec record`` runs it."""

    def __init__(self, upstream: str, out: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proxy = proxy.Proxy(
            ("127.0.0.1", self.port), proxy.address(upstream), proxy.Recorder(out)
        )
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        assert started.wait(10)

    def _run(self, started: threading.Event) -> None:
        self.loop.run_until_complete(self.proxy.start())
        started.set()
        self.loop.run_forever()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def records(path: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]


def wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.05)


def test_confluent_kafka_behind_the_proxy_against_librdkafkas_mock_cluster(tmp_path, capsys):
    cluster = MockCluster(3).start()
    trace = tmp_path / "mock.jsonl"
    behind = ProxyThread(cluster.addresses[0], trace)
    try:
        producer = Producer({"bootstrap.servers": behind.bootstrap})
        for i in range(10):
            producer.produce("orders", b"%d" % i)
        assert producer.flush(20) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": behind.bootstrap,
                "group.id": "billing",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "heartbeat.interval.ms": 100,
                "session.timeout.ms": 6000,
            }
        )
        brokers = consumer.list_topics(timeout=10).brokers.values()
        assert {(b.host, b.port) for b in brokers} <= {
            ("127.0.0.1", p) for p in behind.proxy.listeners.values()
        }
        consumer.subscribe(["orders"])
        got, deadline = 0, time.monotonic() + 40
        while got < 10 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            got += message is not None and not message.error()
        assert got == 10
        consumer.commit(asynchronous=False)
        consumer.close()
    finally:
        behind.stop()
        cluster.stop()
    assert len(behind.proxy.listeners) == 3  # one listener per mock broker, all named by the proxy
    announced = capsys.readouterr().err  # the two listeners opened for further brokers, each said
    for upstream, port in list(behind.proxy.listeners.items())[1:]:
        assert (
            f"also listening on 127.0.0.1:{port} for broker {upstream[0]}:{upstream[1]}"
            in announced
        )
    seen = records(trace)
    assert {r["api"] for r in seen} >= GROUP_APIS and {r["source"] for r in seen} == {"proxy"}
    commit = next(r for r in seen if r["api"] == "OffsetCommit" and r["kind"] == "request")
    assert commit["group_id"] == "billing" and commit["fields"]["generation_id"] >= 1
    findings = check_files(
        [trace], Settings()
    )  # the mock is a lenient fake: what it does differently is reported
    assert {v["kind"] for v in findings.violations} <= {"oracle"} and findings.totals.events == len(
        seen
    )
    print(
        f"librdkafka mock through the proxy: {len(seen)} events, {len(findings.violations)} violations",
        *(f"{v['rule']}: {v['message']}" for v in findings.violations),
        sep="\n  ",
    )


def test_kafka_python_behind_the_proxy_against_the_project_broker_passes_the_trace_check(tmp_path):
    trace = tmp_path / "broker.jsonl"
    with BrokerProcess(
        tmp_path / "data", "--broker-config", "group.initial.rebalance.delay.ms=0"
    ) as broker:
        behind = ProxyThread(broker.bootstrap, trace)
        try:
            admin = KafkaAdminClient(bootstrap_servers=behind.bootstrap)
            admin.create_topics([NewTopic("orders", 2, 1)])
            admin.close()
            producer = KafkaProducer(bootstrap_servers=behind.bootstrap)
            for i in range(10):
                producer.send("orders", b"%d" % i, partition=i % 2)
            producer.flush(10)
            producer.close()
            consumer = KafkaConsumer(
                bootstrap_servers=behind.bootstrap,
                group_id="billing",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=100,
                # A leader whose metadata lacks the topic assigns nothing and, with the default
                # 5-minute refresh, never rejoins (see test_broker_kafka_python's Member); on a
                # loaded machine the join can beat the metadata answer.
                metadata_max_age_ms=500,
            )
            wait_for(
                lambda: bool(consumer.partitions_for_topic("orders")), 20, "orders' partitions"
            )
            consumer.subscribe(["orders"])
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                for batch in consumer.poll(200).values():
                    got.extend(batch)
            assert len(got) == 10

            def polled_until_a_heartbeat() -> bool:
                # The records can all come before the first heartbeat is due: the consumer
                # polls on (staying in the group) until one has gone through the proxy.
                consumer.poll(50)
                return any(r["api"] == "Heartbeat" for r in records(trace))

            wait_for(polled_until_a_heartbeat, 10, "a heartbeat")
            consumer.commit()
            consumer.close()
        finally:
            behind.stop()
    seen = records(trace)
    assert {r["api"] for r in seen} >= GROUP_APIS
    findings = check_files([trace], Settings(config={"initial_rebalance_delay_ms": 0}))
    assert findings.violations == [] and findings.totals.keys >= 1
    assert (
        main(["check", str(trace), "--broker-setting", "group.initial.rebalance.delay.ms=0"]) == 0
    )


def test_bad_addresses_are_one_line(capsys):
    assert (
        main(["record", "--listen", "nowhere", "--upstream", "127.0.0.1:9092", "--out", "x.jsonl"])
        == 2
    )
    assert capsys.readouterr().err.strip().endswith("expected HOST:PORT, got 'nowhere'")


def test_an_unreachable_upstream_is_said_on_the_console(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # closed again: nothing listens there
    behind = ProxyThread(f"127.0.0.1:{dead}", tmp_path / "none.jsonl")
    try:
        for _ in range(2):  # said once, not once per client that tries
            with socket.create_connection(("127.0.0.1", behind.port), timeout=5) as client:
                client.settimeout(5)
                assert client.recv(1) == b""  # the proxy closes the client's connection
    finally:
        behind.stop()
    assert capsys.readouterr().err == (
        f"coordspec record: cannot reach upstream 127.0.0.1:{dead}: Connection refused "
        "(clients connecting meanwhile are closed)\n"
    )


@pytest.fixture(autouse=True)
def _bounded():
    started = time.monotonic()
    yield
    assert time.monotonic() - started < 120


def test_a_kip848_consumer_behind_the_proxy_is_recorded_and_passes_the_trace_check(
    tmp_path, capsys
):
    """ConsumerGroupHeartbeat names topics by id: the proxy reads them with the ids the
    Metadata answers it forwarded gave, and shows the group those topics first."""
    trace = tmp_path / "broker.jsonl"
    with BrokerProcess(tmp_path / "data") as broker:
        behind = ProxyThread(broker.bootstrap, trace)
        try:
            admin = KafkaAdminClient(bootstrap_servers=behind.bootstrap)
            admin.create_topics([NewTopic("orders", 2, 1)])
            admin.close()
            consumer = Consumer(
                {
                    "bootstrap.servers": behind.bootstrap,
                    "group.id": "billing",
                    "group.protocol": "consumer",
                    "log_level": 3,
                }
            )
            consumer.subscribe(["orders"])
            deadline = time.monotonic() + 30
            while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
                consumer.poll(0.1)
            assert {p.partition for p in consumer.assignment()} == {0, 1}
            consumer.close()
        finally:
            behind.stop()
    seen = records(trace)
    images = [r for r in seen if r["kind"] == "metadata_image"]
    assert {r["group_id"] for r in images} == {"billing"}
    assert images[-1]["topics"]["orders"] == 2  # shown once the client's Metadata named it
    assigned = [
        r
        for r in seen
        if r.get("api") == "ConsumerGroupHeartbeat"
        and r["kind"] == "response"
        and r["fields"]["assignment"]
    ]
    assert assigned and assigned[0]["fields"]["assignment"][0]["topic_id"] == "orders"
    findings = check_files([trace], Settings())
    assert findings.violations == [], findings.violations[0]["message"]
    assert findings.totals.events >= 4
    capsys.readouterr()
    assert main(["check", str(trace)]) == 0
    exercised = re.search(r"consumer group rules exercised: (\d+) of \d+", capsys.readouterr().out)
    assert exercised and int(exercised.group(1)) >= 1
