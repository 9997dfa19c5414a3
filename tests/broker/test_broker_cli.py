"""``python -m coordspec.broker.server``: one clear line for the errors a user can hit, and a clean
stop on SIGTERM and Ctrl-C (SIGINT)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from coordspec.broker.testing import BrokerProcess, Connection

pytestmark = pytest.mark.wire

ROOT = Path(__file__).resolve().parents[2]
PROG = "python -m coordspec.broker.server"  # the prefix of its error lines


def run_server(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "coordspec.broker.server", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_server("--port", str(port), "--data", str(tmp_path / "data"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{PROG}: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_a_data_directory_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    result = run_server("--port", "0", "--data", str(tmp_path / "file"))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(
        f"{PROG}: data directory {tmp_path / 'file'}"
    )


def test_an_unreadable_topic_list_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "topics.json").write_text("{ not json")
    result = run_server("--port", "0", "--data", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{PROG}: {tmp_path / 'topics.json'}: cannot read the topic list (ValidationError)"
    ]


def test_a_host_that_does_not_resolve_is_one_line(tmp_path: Path) -> None:
    result = run_server("--host", "nosuch.invalid", "--port", "0", "--data", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{PROG}: cannot listen on nosuch.invalid: the host does not resolve"
    ]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "group.min.session.timeout.ms=-1",
            "--broker-config group.min.session.timeout.ms: expected an integer >= 0, got '-1'",
        ),
        (
            "socket.request.max.bytes=4",
            "--broker-config socket.request.max.bytes: expected an integer >= 8, got '4'",
        ),
        (
            "min.insync.replicas=2",
            (
                "--broker-config min.insync.replicas: not honoured by coordspec broker "
                "(one broker, one replica)"
            ),
        ),
        (
            "log.dirs=/tmp",
            (
                "--broker-config log.dirs: not a broker setting coordspec honours "
                "(coordspec broker --help lists them)"
            ),
        ),
    ],
    ids=["session", "frame", "cluster-only", "unknown"],
)
def test_a_bad_setting_is_one_line(tmp_path: Path, setting: str, message: str) -> None:
    result = run_server("--port", "0", "--data", str(tmp_path), "--broker-config", setting)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"{PROG}: {message}"]


def test_a_bad_line_of_the_settings_file_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("# as Kafka's\nnum.partitions=2\nauto.create.topics.enable=maybe\n")
    result = run_server("--port", "0", "--data", str(tmp_path), "--broker-config-file", str(config))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        (
            f"{PROG}: --broker-config-file {config}:3 auto.create.topics.enable: "
            "expected true or false, got 'maybe'"
        )
    ]


def metadata(connection: Connection, topic: str) -> Any:
    ask = {"topics": [{"name": topic}], "allow_auto_topic_creation": True}
    return connection.request(3, 12, ask).topics[0]


def create_with_defaults(connection: Connection, topic: str) -> Any:
    """CreateTopics with -1 partitions and -1 replicas: the broker's defaults."""
    ask = {"name": topic, "num_partitions": -1, "replication_factor": -1}
    return connection.request(19, 7, {"topics": [ask], "timeout": 10_000}).topics[0]


def test_num_partitions_and_default_replication_factor_make_the_topics(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=3\ndefault.replication.factor=2\n")
    # The flag's factor of 1 goes over the file's 2, which one broker could not place.
    flag = ("--broker-config", "default.replication.factor=1")
    with BrokerProcess(tmp_path / "one", "--broker-config-file", str(config), *flag) as broker:
        connection = Connection(broker.host, broker.port)
        metadata(connection, "auto")  # created for the next request, as Kafka 4's broker
        auto = metadata(connection, "auto")
        assert auto.error_code == 0
        assert [p.replica_nodes for p in auto.partitions] == [(1,), (1,), (1,)]
        made = create_with_defaults(connection, "made")
        assert (made.error_code, made.num_partitions, made.replication_factor) == (0, 3, 1)
        connection.close()
    with BrokerProcess(tmp_path / "two", "--broker-config-file", str(config)) as broker:
        connection = Connection(broker.host, broker.port)
        refused = create_with_defaults(connection, "made")
        assert (refused.error_code, refused.error_message) == (
            38,  # INVALID_REPLICATION_FACTOR
            "Replication factor: 2 larger than available brokers: 1.",
        )
        assert [metadata(connection, "auto").error_code for _ in range(2)] == [3, 3]
        connection.close()


def test_a_wildcard_listener_advertises_a_dialable_address(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", "--host", "0.0.0.0") as broker:
        assert broker.host == "127.0.0.1"
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [("127.0.0.1", broker.port)]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_broker_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    assert broker.process is not None
    process = broker.process
    process.send_signal(stop)
    assert process.wait(15) == 0
    assert process.stdout.read().decode().strip().endswith("broker stopped")
    assert "Traceback" not in broker.stderr()
    broker.stop()


def test_a_second_broker_on_the_same_data_directory_is_one_line(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data"):
        result = run_server("--port", "0", "--data", str(tmp_path / "data"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{PROG}: data directory {tmp_path / 'data'} is in use by another broker"
    ]


def test_a_corrupt_offsets_log_is_one_line(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    broker.stop()
    segment = tmp_path / "data" / "__consumer_offsets-0" / "00000000000000000000.log"
    segment.write_bytes(
        struct.pack(">qiibI", 0, 49, 0, 2, 12345) + b"\x00" * 49
    )  # a whole batch, wrong CRC
    result = run_server("--port", "0", "--data", str(tmp_path / "data"))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"{PROG}: {segment}: batch 0 cannot be read")
