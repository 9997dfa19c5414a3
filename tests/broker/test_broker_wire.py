"""Kafka's answers on the wire, checked with raw requests (kio) where clients hide them:
acks=0, Fetch's long poll, ListOffsets, Produce's errors, batched FindCoordinator, Metadata v0, and
pipelined requests answered in order behind a parked JoinGroup, and response frames (one body
encoded once for many) as kio writes them."""

from __future__ import annotations

import datetime
import io
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import kio.index
import pytest
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import TZAwareMicros

from coordspec.broker import testing
from coordspec.broker.testing import BrokerProcess
from coordspec.reference.wire.entities import build

pytestmark = pytest.mark.wire


class Connection:
    def __init__(self, broker: BrokerProcess) -> None:
        self.sock = socket.create_connection((broker.host, broker.port), timeout=10)
        self.correlation_id = 0

    def send(self, api_key: int, version: int, values: dict[str, Any]) -> int:
        self.correlation_id += 1
        cls = kio.index.load_request_schema(api_key, version)
        buffer = io.BytesIO()
        entity_writer(cls.__header_schema__)(
            buffer,
            build(
                cls.__header_schema__,
                {
                    "request_api_key": api_key,
                    "request_api_version": version,
                    "correlation_id": self.correlation_id,
                    "client_id": "t",
                },
            ),
        )
        entity_writer(cls)(buffer, build(cls, values))
        self.sock.sendall(struct.pack(">i", buffer.tell()) + buffer.getvalue())
        return self.correlation_id

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        (length,) = struct.unpack(">i", self._exactly(4))
        payload = self._exactly(length)
        cls = kio.index.load_response_schema(api_key, version)
        header, offset = entity_reader(cls.__header_schema__)(payload, 0)
        body, _ = entity_reader(cls)(payload, offset)
        return header.correlation_id, body

    def call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        sent = self.send(api_key, version, values)
        correlation_id, body = self.receive(api_key, version)
        assert correlation_id == sent
        return body

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            assert chunk, "the broker closed the connection"
            data += chunk
        return data


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("wire")) as process:
        connection = Connection(process)
        created = connection.call(
            19,
            7,
            {
                "topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}],
                "timeout": 5000,
            },
        )
        assert created.topics[0].error_code == 0
        yield process


def batch(value: bytes) -> bytes:
    stamp = TZAwareMicros.parse(datetime.datetime.now(datetime.UTC))
    record = Record(attributes=0, timestamp=stamp, offset=0, key=None, value=value, headers=())
    buffer = io.BytesIO()
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=-1, producer_epoch=-1, base_sequence=-1, records=(record,), attributes=0
        ),
    )
    return buffer.getvalue()


def produce(topic: str, records: bytes, acks: int = 1) -> dict[str, Any]:
    return {
        "acks": acks,
        "timeout": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }


def latest(connection: Connection) -> int:
    body = connection.call(
        2,
        6,
        {
            "replica_id": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    return body.topics[0].partitions[0].offset


def test_acks_zero_gets_no_response_and_the_next_request_is_answered(broker: BrokerProcess) -> None:
    connection = Connection(broker)
    before = latest(connection)
    connection.send(0, 9, produce("t", batch(b"fire-and-forget"), acks=0))
    assert latest(connection) == before + 1  # the reply on the wire is ListOffsets', not Produce's


def test_list_offsets_earliest_and_latest(broker: BrokerProcess) -> None:
    connection = Connection(broker)
    base = (
        connection.call(0, 9, produce("t", batch(b"x")))
        .responses[0]
        .partition_responses[0]
        .base_offset
    )
    earliest = connection.call(
        2,
        6,
        {
            "replica_id": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2}]}],
        },
    )
    assert earliest.topics[0].partitions[0].offset == 0
    assert latest(connection) == base + 1


def test_fetch_waits_up_to_max_wait_then_answers_empty_records(broker: BrokerProcess) -> None:
    connection = Connection(broker)
    end = latest(connection)
    started = time.monotonic()
    body = connection.call(
        1,
        12,
        {
            "max_wait": 400,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "fetch_offset": end, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        },
    )
    assert 0.35 < time.monotonic() - started < 3
    partition = body.responses[0].partitions[0]
    assert (
        partition.error_code == 0 and partition.records == b"" and partition.high_watermark == end
    )
    assert body.session_id == 0


def test_fetch_naming_a_session_is_told_it_does_not_exist(broker: BrokerProcess) -> None:
    body = Connection(broker).call(
        1,
        12,
        {
            "max_wait": 100,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_id": 7,
            "session_epoch": 1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}],
                }
            ],
        },
    )
    assert body.error_code == 70 and body.responses == ()  # FETCH_SESSION_ID_NOT_FOUND


def test_fetch_wakes_when_a_record_arrives(broker: BrokerProcess) -> None:
    waiting, producing = Connection(broker), Connection(broker)
    end = latest(producing)
    waiting.send(
        1,
        12,
        {
            "max_wait": 5000,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "fetch_offset": end, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        },
    )
    time.sleep(0.2)
    started = time.monotonic()
    producing.call(0, 9, produce("t", batch(b"wake up")))
    _, body = waiting.receive(1, 12)
    assert time.monotonic() - started < 2
    assert b"wake up" in bytes(body.responses[0].partitions[0].records)


def test_produce_errors(broker: BrokerProcess) -> None:
    connection = Connection(broker)
    corrupt = bytearray(batch(b"x"))
    corrupt[-1] ^= 0xFF

    def error(topic: str, records: bytes) -> int:
        return (
            connection.call(0, 9, produce(topic, records))
            .responses[0]
            .partition_responses[0]
            .error_code
        )

    assert error("t", bytes(corrupt)) == 2  # CORRUPT_MESSAGE
    assert error("t", batch(b"a") + batch(b"b")) == 87  # INVALID_RECORD: one batch per partition
    assert (
        error("missing", batch(b"x")) == 3
    )  # UNKNOWN_TOPIC_OR_PARTITION: Produce never creates topics
    assert error("__consumer_offsets", batch(b"x")) == 17  # INVALID_TOPIC_EXCEPTION: internal


def test_find_coordinator_batched_keys(broker: BrokerProcess) -> None:
    connection = Connection(broker)
    groups = connection.call(10, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c.key, c.error_code, c.node_id, c.port) for c in groups.coordinators] == [
        ("a", 0, 1, broker.port),
        ("b", 0, 1, broker.port),
    ]
    transactions = connection.call(10, 4, {"key_type": 1, "coordinator_keys": ["tx"]})
    refused = transactions.coordinators[0]
    # CLUSTER_AUTHORIZATION_FAILED, fatal to a transactional producer: no transaction coordinator
    assert (refused.error_code, refused.node_id) == (31, -1)
    assert (
        refused.error_message
        == "this broker serves no transactions: it has no transaction coordinator"
    )


def test_metadata_v0_with_no_topics_lists_them_all(broker: BrokerProcess) -> None:
    connection = Connection(broker)
    everything = connection.call(3, 0, {"topics": []})
    assert {t.name for t in everything.topics} >= {"t", "__consumer_offsets"}
    none = connection.call(3, 12, {"topics": [], "allow_auto_topic_creation": False})
    assert none.topics == () and none.brokers[0].port == broker.port
    unknown = connection.call(
        3, 12, {"topics": [{"name": "nope"}], "allow_auto_topic_creation": False}
    )
    assert unknown.topics[0].error_code == 3


def test_metadata_creates_a_topic_for_the_next_request_as_kafka_4_does(
    broker: BrokerProcess,
) -> None:
    connection = Connection(broker)
    ask = {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True}
    assert connection.call(3, 12, ask).topics[0].error_code == 3  # being created
    (created,) = connection.call(3, 12, ask).topics
    assert created.error_code == 0 and [p.leader_id for p in created.partitions] == [1]


def test_pipelined_requests_are_answered_in_order_behind_a_parked_join(
    broker: BrokerProcess,
) -> None:
    join = {
        "group_id": "pipelined",
        "session_timeout": 10000,
        "rebalance_timeout": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    parked, other = (
        testing.Connection(broker.host, broker.port),
        testing.Connection(broker.host, broker.port),
    )
    member_id = parked.request(
        11, 5, join
    ).member_id  # MEMBER_ID_REQUIRED, with the id to join with
    started = time.monotonic()
    parked.send(
        11, 5, {**join, "member_id": member_id}
    )  # parks for the initial rebalance delay (3 s)
    parked.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    parked.send(12, 4, {"group_id": "pipelined", "generation_id": 1, "member_id": member_id})
    # Another connection is not held up by the parked one.
    assert (
        other.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        ).error_code
        == 0
    )
    assert time.monotonic() - started < 2
    answers = [parked.receive() for _ in range(3)]
    assert time.monotonic() - started > 2  # the first answer, the join's, came after the delay
    assert [correlation_id for correlation_id, _ in answers] == [2, 3, 4]
    assert (
        answers[0][1].error_code == 0
        and answers[0][1].member_id == member_id
        and answers[1][1].error_code == 0
    )
    parked.close()
    other.close()


@pytest.mark.parametrize(
    ("api_key", "versions", "values"),
    [
        (12, range(5), {"error_code": 0}),  # Heartbeat: numbers only, so its body is encoded once
        (12, range(5), {"error_code": 27}),
        (13, range(1), {"error_code": 25}),  # LeaveGroup v0
        (
            14,
            range(6),
            {
                "error_code": 0,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignment": b"\x00\x01",
            },
        ),
    ],
)
def test_a_response_frame_is_what_kio_writes_for_its_values(api_key, versions, values) -> None:
    from coordspec.broker.wire.protocol import response_frame

    for version in versions:
        cls = kio.index.load_response_schema(api_key, version)
        for correlation_id in (1, 7, 2**31 - 1):  # the same body under another header each time
            buffer = io.BytesIO()
            entity_writer(cls.__header_schema__)(
                buffer, build(cls.__header_schema__, {"correlation_id": correlation_id})
            )
            entity_writer(cls)(buffer, build(cls, values))
            expected = struct.pack(">i", buffer.tell()) + buffer.getvalue()
            assert response_frame(api_key, version, correlation_id, values) == expected
