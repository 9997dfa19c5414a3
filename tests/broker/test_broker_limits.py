"""The broker's connection limits: the number of connections, the idle time between requests, and a
client that sends without reading its answers."""

from __future__ import annotations

import io
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import kio.index
import pytest
import raw_frames
from kio.serial import entity_writer

from coordspec.broker.testing import BrokerProcess
from coordspec.reference.wire.entities import build

pytestmark = pytest.mark.wire


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(
        tmp_path / "data",
        "--broker-config",
        "max.connections=2",
        "--broker-config",
        "connections.max.idle.ms=500",
    ) as process:
        yield process


def api_versions() -> bytes:
    cls = kio.index.load_request_schema(18, 3)
    buffer = io.BytesIO()
    entity_writer(cls.__header_schema__)(
        buffer,
        build(
            cls.__header_schema__,
            {
                "request_api_key": 18,
                "request_api_version": 3,
                "correlation_id": 1,
                "client_id": "t",
            },
        ),
    )
    entity_writer(cls)(
        buffer, build(cls, {"client_software_name": "t", "client_software_version": "1"})
    )
    return struct.pack(">i", buffer.tell()) + buffer.getvalue()


def answered(sock: socket.socket) -> bool:
    return raw_frames.answered(sock, api_versions())


def test_connections_beyond_the_maximum_are_closed(broker: BrokerProcess) -> None:
    first = socket.create_connection((broker.host, broker.port), timeout=5)
    second = socket.create_connection((broker.host, broker.port), timeout=5)
    with first, second:
        assert answered(first) and answered(second)
        with socket.create_connection((broker.host, broker.port), timeout=5) as third:
            assert not answered(third)
    # Once the broker has noticed the two closes, a new connection is served again.
    deadline = time.monotonic() + 10
    while True:
        with socket.create_connection((broker.host, broker.port), timeout=5) as again:
            if answered(again):
                break
        assert time.monotonic() < deadline, "connections are still refused after the others closed"
        time.sleep(0.1)


def test_an_idle_connection_is_closed(broker: BrokerProcess) -> None:
    with socket.create_connection((broker.host, broker.port), timeout=5) as sock:
        assert answered(sock)
        started = time.monotonic()
        assert sock.recv(1) == b""  # closed by the broker, not by the 5 s timeout
        assert 0.4 < time.monotonic() - started < 4


def test_a_client_that_never_reads_is_no_longer_read_and_holds_up_no_one(
    broker: BrokerProcess,
) -> None:
    with socket.create_connection((broker.host, broker.port), timeout=5) as flood:
        read = raw_frames.read_from_a_client_that_never_reads(flood, api_versions())
        assert read < 1024 * 1024, (
            f"the broker read {read} more bytes from a client that reads nothing"
        )
        with socket.create_connection((broker.host, broker.port), timeout=5) as other:
            assert answered(other)
