"""``python -m coordspec.broker.server``: one clear line for the errors a user can hit, and a clean
stop on SIGTERM and Ctrl-C (SIGINT)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from coordspec.broker.testing import BrokerProcess

pytestmark = pytest.mark.wire

ROOT = Path(__file__).resolve().parents[2]


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
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_a_data_directory_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    result = run_server("--port", "0", "--data", str(tmp_path / "file"))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(
        f"error: data directory {tmp_path / 'file'}"
    )


def test_an_unreadable_topic_list_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "topics.json").write_text("{ not json")
    result = run_server("--port", "0", "--data", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'topics.json'}: cannot read the topic list (ValidationError)"
    ]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (("--min-session-timeout-ms", "-1"), "error: GroupConfig.min_session_timeout_ms"),
        (("--max-frame-bytes", "4"), "error: limits must be positive"),
    ],
    ids=["session", "frame"],
)
def test_a_bad_setting_is_one_line(tmp_path: Path, setting: tuple[str, str], message: str) -> None:
    result = run_server("--port", "0", "--data", str(tmp_path), *setting)
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message)


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
        f"error: data directory {tmp_path / 'data'} is in use by another broker"
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
    assert result.stderr.startswith(f"error: {segment}: batch 0 cannot be read")
