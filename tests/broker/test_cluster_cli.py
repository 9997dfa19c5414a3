"""``coordspec cluster up`` (:func:`coordspec.broker.cluster.launcher.up`): it starts ZooKeeper and
three brokers, prints the bootstrap address and each broker's state, reports a broker
killed with kill -9 and keeps serving, and stops everything on Ctrl-C; a user's mistake is
one line, no traceback."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from coordspec.broker.testing import Connection
from coordspec.broker.zookeeper.process import free_ports

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

REPO = Path(__file__).resolve().parents[2]


def cluster_up(*args: str) -> subprocess.Popen:
    """``coordspec cluster up``, as a user runs it."""
    return subprocess.Popen(
        [sys.executable, "-m", "coordspec.conformance.cli", "cluster", "up", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def up(*args: str) -> subprocess.Popen:
    code = f"import sys; from pathlib import Path; from coordspec.broker.cluster.launcher import up; sys.exit(up({', '.join(args)}))"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(process: subprocess.Popen, marker: str, timeout_s: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while marker not in seen and time.monotonic() < deadline and process.poll() is None:
            if selector.select(0.1):
                seen += os.read(process.stdout.fileno(), 65536).decode()
    return seen


def test_cluster_up_serves_until_interrupted(tmp_path: Path) -> None:
    process = up("3", f"data_dir=Path({str(tmp_path / 'cluster')!r})")
    try:
        shown = read_until(process, "Ctrl-C stops", 60)
        assert "bootstrap: 127.0.0.1:" in shown, (
            shown + process.stderr.read() if process.poll() is not None else shown
        )
        brokers = [line for line in shown.splitlines() if line.strip().startswith("broker ")]
        assert len(brokers) == 3 and sum("controller" in line for line in brokers) == 1, shown
        led = [
            int(p)
            for line in brokers
            for p in re.findall(r"\d+", line.partition("partitions [")[2])
        ]
        assert sorted(led) == [0, 1, 2], shown  # every offsets partition has one leader
        # kill -9 of a broker is reported, and the others keep serving.
        victim = next(line for line in brokers if "controller" not in line)
        victim_id, victim_pid = int(victim.split()[1]), int(victim.split("pid ")[1].split()[0])
        os.kill(victim_pid, signal.SIGKILL)
        reported = read_until(process, f"broker {victim_id} exited with -9", 10)
        assert f"broker {victim_id} exited with -9" in reported and process.poll() is None, reported
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(
            timeout=60
        )  # every broker, then ZooKeeper: 10 s each at most
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "stopped every broker" in out
    assert "Traceback" not in err
    assert all((tmp_path / "cluster" / f"broker-{b}").is_dir() for b in (1, 2, 3))


def test_cluster_up_mistakes_are_one_line() -> None:
    process = up("0")
    _, err = process.communicate(timeout=30)
    assert (
        process.returncode == 2 and err.strip() == "cluster up: --brokers must be at least 1, got 0"
    ), err
    process = up("3", "broker_config=['offsets.topic.num.partitions=0']")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2 and err.splitlines() == [
        "cluster up: --broker-config offsets.topic.num.partitions: expected an integer >= 1, got '0'"
    ], err
    closed = free_ports(1)[0]
    process = up("3", f"zookeeper_connect='127.0.0.1:{closed}'")
    _, err = process.communicate(timeout=30)
    assert (
        process.returncode == 2
        and len(err.strip().splitlines()) == 1
        and "cannot reach ZooKeeper" in err
    ), err
    assert not (
        REPO / f"coordspec-cluster-{process.pid}"
    ).exists()  # its default data directory, unused, is gone


def test_a_bad_setting_stops_cluster_up_before_it_starts(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=2\nbroker.id=1\n")
    process = cluster_up("--data", str(tmp_path / "cluster"), "--broker-config-file", str(config))
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2 and err.splitlines() == [
        (
            f"cluster up: --broker-config-file {config}:2 broker.id: not a broker setting coordspec "
            "honours (coordspec broker --help lists them)"
        )
    ], err
    assert not (tmp_path / "cluster").exists()


def serving(process: subprocess.Popen) -> tuple[str, dict[int, int]]:
    """What ``cluster up`` showed once it serves, and each broker's pid."""
    shown = read_until(process, "Ctrl-C stops", 60)
    assert "bootstrap: 127.0.0.1:" in shown, (
        shown + process.stderr.read() if process.poll() is not None else shown
    )
    pids = {
        int(line.split()[1]): int(line.split("pid ")[1].split()[0])
        for line in shown.splitlines()
        if line.strip().startswith("broker ")
    }
    return shown, pids


def interrupt(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err, err


def metadata(bootstrap: str, topic: str) -> Any:
    host, port = bootstrap.split(",")[0].split(":")
    with contextlib.closing(Connection(host, int(port))) as connection:
        ask = {"topics": [{"name": topic}], "allow_auto_topic_creation": True}
        return connection.request(3, 12, ask)


def test_cluster_up_with_kafkas_defaults_takes_acks_all_on_one_replica(tmp_path: Path) -> None:
    """min.insync.replicas is Kafka's 1: an auto-created topic (default.replication.factor 1)
    takes acks=all produces; num.partitions comes from the file, a flag goes over it."""
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=3\ngroup.initial.rebalance.delay.ms=0\n")
    process = cluster_up(
        "--data",
        str(tmp_path / "cluster"),
        "--broker-config-file",
        str(config),
        "--broker-config",
        "num.partitions=2",
    )
    try:
        shown, _ = serving(process)
        assert (
            "settings other than Kafka's defaults: num.partitions=2 (Kafka: 1), "
            "offsets.topic.num.partitions=3 (Kafka: 50), "
            "group.initial.rebalance.delay.ms=0 (Kafka: 3000), "
            "zookeeper.session.timeout.ms=6000 (Kafka: 18000), "
            "max.connections=1000 (Kafka: 2147483647)"
        ) in shown, shown
        bootstrap = shown.split("bootstrap: ")[1].split()[0]
        producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30_000}
        )
        delivered: list[tuple[Any, int]] = []
        for i in range(4):
            producer.produce(
                "auto-created",
                f"value-{i}".encode(),
                partition=i % 2,
                on_delivery=lambda err, msg: delivered.append((err, msg.partition())),
            )
        assert producer.flush(40) == 0
        assert sorted(delivered) == [(None, 0), (None, 0), (None, 1), (None, 1)], delivered
        (topic,) = metadata(bootstrap, "auto-created").topics
        assert topic.error_code == 0
        assert [len(p.replica_nodes) for p in topic.partitions] == [1, 1]
    finally:
        interrupt(process)


def test_cluster_up_places_default_replication_factor_or_refuses_it(tmp_path: Path) -> None:
    """default.replication.factor 2 on two brokers: CreateTopics with -1 and auto-creation
    place two replicas; with one broker left, both are INVALID_REPLICATION_FACTOR, as on
    Kafka's ZooKeeper brokers."""
    process = cluster_up(
        "--brokers",
        "2",
        "--data",
        str(tmp_path / "cluster"),
        "--broker-config",
        "default.replication.factor=2",
    )
    try:
        shown, pids = serving(process)
        bootstrap = shown.split("bootstrap: ")[1].split()[0]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("made")])["made"].result(20)
        assert metadata(bootstrap, "auto-created").topics[0].error_code == 5  # LEADER_NOT_AVAILABLE
        deadline = time.monotonic() + 20
        while True:
            answer = metadata(bootstrap, "auto-created").topics + metadata(bootstrap, "made").topics
            if all(t.error_code == 0 for t in answer) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert [[len(p.replica_nodes) for p in t.partitions] for t in answer] == [[2], [2]]
        # SIGTERM closes the broker's ZooKeeper session: it leaves the cluster at once.
        os.kill(pids[2], signal.SIGTERM)
        read_until(process, "broker 2 exited", 20)
        deadline = time.monotonic() + 20
        while len(metadata(bootstrap, "made").brokers) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert metadata(bootstrap, "too-many").topics[0].error_code == 38
        refused = admin.create_topics([NewTopic("refused")])["refused"]
        with pytest.raises(KafkaException) as raised:
            refused.result(20)
        assert raised.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
        assert "Replication factor: 2 larger than available brokers: 1." in str(raised.value)
    finally:
        interrupt(process)
