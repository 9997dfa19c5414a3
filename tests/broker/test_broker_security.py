"""``coordspec broker`` with a SASL_SSL listener (SCRAM-SHA-512), reached by confluent-kafka,
kafka-python and aiokafka consumers with their usual security settings; a request before
authentication closes the connection, as Kafka's does; sessions with a lifetime are
re-authenticated by the conformance client; a listener beyond loopback says where it binds
and warns when it asks for no authentication."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import tls_files
from confluent_kafka import Consumer, Producer

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.security import load
from coordspec.conformance.suite.kafka_wire import Connection

pytestmark = pytest.mark.wire

USER, PASSWORD = "alice", "alice-secret"
RECORDS = 5
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", name="tls")
def tls_fixture(tmp_path_factory: pytest.TempPathFactory) -> tls_files.TlsFiles:
    return tls_files.make(tmp_path_factory.mktemp("tls"))


def _secured_args(directory: Path, tls: tls_files.TlsFiles, *extra: str) -> tuple[str, ...]:
    config, users = directory / "security.properties", directory / "users.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.keystore.location={tls.server}\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN\n" + "".join(extra)
    )
    users.write_text(f"{USER}={PASSWORD}\n")
    return ("--security-config", str(config), "--users", str(users))


@pytest.fixture(scope="module", name="broker")
def broker_fixture(tmp_path_factory: pytest.TempPathFactory, tls: tls_files.TlsFiles):
    directory = tmp_path_factory.mktemp("secured")
    args = _secured_args(directory, tls)
    with BrokerProcess(
        directory / "data", *args, "--broker-config", "group.initial.rebalance.delay.ms=0"
    ) as started:
        yield started


def _confluent(tls: tls_files.TlsFiles) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(tls.ca),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": USER,
        "sasl.password": PASSWORD,
    }


@pytest.fixture(scope="module", name="topic")
def topic_fixture(broker: BrokerProcess, tls: tls_files.TlsFiles) -> str:
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, **_confluent(tls)})
    for i in range(RECORDS):
        producer.produce(topic, f"value-{i}".encode(), partition=0)
    assert producer.flush(20) == 0
    return topic


def test_confluent_kafka_consumes_over_sasl_ssl(broker, tls, topic):
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            **_confluent(tls),
        }
    )
    consumer.subscribe([topic])
    values, deadline = [], time.monotonic() + 30
    while len(values) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [f"value-{i}".encode() for i in range(RECORDS)]


def test_kafka_python_consumes_over_sasl_ssl(broker, tls, topic):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        security_protocol="SASL_SSL",
        ssl_cafile=str(tls.ca),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=USER,
        sasl_plain_password=PASSWORD,
        consumer_timeout_ms=20_000,
    )
    values = []
    for record in consumer:
        values.append(record.value)
        if len(values) == RECORDS:
            break
    consumer.close()
    assert values == [f"value-{i}".encode() for i in range(RECORDS)]


def test_aiokafka_consumes_over_sasl_ssl(broker, tls, topic):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.helpers import create_ssl_context

    async def consume() -> list[bytes]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id=f"g-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest",
            security_protocol="SASL_SSL",
            ssl_context=create_ssl_context(cafile=str(tls.ca)),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=USER,
            sasl_plain_password=PASSWORD,
        )
        await consumer.start()
        try:
            values = []
            async with asyncio.timeout(30):
                async for record in consumer:
                    values.append(record.value)
                    if len(values) == RECORDS:
                        return values
        finally:
            await consumer.stop()
        return values

    assert asyncio.run(consume()) == [f"value-{i}".encode() for i in range(RECORDS)]


def test_a_request_before_authentication_closes_the_connection(broker, tls):
    """As Kafka's SaslServerAuthenticator: only ApiVersions and SaslHandshake come first."""
    context = ssl.create_default_context(cafile=tls.ca)
    with (
        socket.create_connection((broker.host, broker.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=broker.host) as tls_socket,
    ):
        metadata_v0 = struct.pack(">hhih", 3, 0, 1, -1) + struct.pack(">i", 0)
        tls_socket.sendall(struct.pack(">i", len(metadata_v0)) + metadata_v0)
        assert tls_socket.recv(4) == b""


def test_the_client_re_authenticates_before_the_session_ends(tmp_path, tls):
    """connections.max.reauth.ms=800: the broker tells the session's lifetime (KIP-368) and
    closes a connection that goes on past it; the client re-authenticates in time, so four
    seconds of requests on one connection are all answered."""
    args = _secured_args(tmp_path, tls, "connections.max.reauth.ms=800\n")
    security = load(
        None,
        [
            "security.protocol=SASL_SSL",
            f"ssl.ca.location={tls.ca}",
            "sasl.mechanism=SCRAM-SHA-512",
            f"sasl.username={USER}",
            f"sasl.password={PASSWORD}",
        ],
    )

    async def requests(host: str, port: int) -> int:
        connection = await Connection.open(host, port, 10, security)
        answered, start = 0, time.monotonic()
        try:
            while time.monotonic() - start < 4:
                await connection.call(3, 12, {"topics": []}, 10)
                answered += 1
                await asyncio.sleep(0.05)
        finally:
            await connection.close()
        return answered

    with BrokerProcess(tmp_path / "data", *args) as broker:
        assert asyncio.run(requests(broker.host, broker.port)) > 20


def test_a_wildcard_listener_says_where_it_binds_and_warns_without_authentication(tmp_path):
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "coordspec.broker.server"),
            *("--host", "0.0.0.0", "--port", "0", "--data", str(tmp_path / "data")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = process.stdout.readline()
    finally:
        process.terminate()
        _, err = process.communicate(timeout=20)
    assert line.startswith("broker 1 serving on 0.0.0.0:"), line
    assert "advertised as 127.0.0.1" in line
    assert "beyond loopback, without authentication" in err
    assert "Traceback" not in err
