"""Client checks both kinds of broker share: ListOffsets by timestamp as librdkafka and
kafka-python ask it, transactions refused at once while idempotent producers work, and
reading a partition back."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as Partition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPartition

from coordspec.broker.log.batches import read_header
from coordspec.broker.testing import Connection

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")  # partition i is written with CODECS[i]
BASE_MS = 1_700_000_000_000
TIMESTAMPS = (1000, 3000, 2000, 4000)  # after BASE_MS, one batch: not in order
# ms after BASE_MS asked -> the offset answered: the first record at or after it, not its batch
EXPECTED = {0: 0, 1500: 1, 2500: 1, 3500: 3, 4001: -1}
TRANSACTION_APIS = {24, 25, 26, 27, 28, 65, 66}  # AddPartitionsToTxn … ListTransactions


def create_topic(bootstrap: str, topic: str, partitions: int, replicas: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, replicas)]).values():
        future.result(10)


def _batch_sizes(segment: Path) -> list[int]:
    data, sizes, position = segment.read_bytes(), [], 0
    while (header := read_header(data, position)) is not None:
        sizes.append(header.record_count)
        position += header.size
    return sizes


def check_offsets_for_times(bootstrap: str, data_dir: Path, topic: str, replicas: int) -> None:
    """Four records in one batch per partition, one partition per codec; librdkafka's
    offsets_for_times finds each record inside its batch, and kafka-python gets its timestamp."""
    create_topic(bootstrap, topic, len(CODECS), replicas)
    for partition, codec in enumerate(CODECS):
        producer = Producer(
            {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 1000}
        )
        producer.list_topics(topic, timeout=10)  # records wait for no metadata, so none goes alone
        for ts in TIMESTAMPS:
            producer.produce(topic, b"v" * 200, partition=partition, timestamp=BASE_MS + ts)
        assert producer.flush(10) == 0
        segments = list(data_dir.glob(f"**/{topic}-{partition}/*.log"))
        assert len(segments) == replicas
        sizes = [_batch_sizes(s) for s in segments]
        assert sizes == [[len(TIMESTAMPS)]] * replicas, (codec, sizes)

    client = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-times"})
    try:
        for asked, offset in EXPECTED.items():
            answers = client.offsets_for_times(
                [Partition(topic, p, BASE_MS + asked) for p in range(len(CODECS))], timeout=10
            )
            assert [(a.error, a.offset) for a in answers] == [(None, offset)] * len(CODECS), asked
    finally:
        client.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","))
    try:
        tp = KafkaPartition(topic, CODECS.index("zstd"))
        found = consumer.offsets_for_times({tp: BASE_MS + 2500})[tp]
        assert (found.offset, found.timestamp) == (1, BASE_MS + 3000)
    finally:
        consumer.close()


def check_transactions_refused(bootstrap: str, topic: str, replicas: int) -> None:
    """A transactional producer fails at once, naming the cause; an idempotent one works;
    ApiVersions offers InitProducerId and none of the transaction APIs."""
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "refused"})
    start = time.monotonic()
    with pytest.raises(KafkaException) as caught:
        transactional.init_transactions(30)
    assert time.monotonic() - start < 5, "init_transactions waited out its timeout"
    error = caught.value.args[0]
    assert error.fatal() and error.name() == "CLUSTER_AUTHORIZATION_FAILED"
    assert "this broker serves no transactions" in error.str()

    create_topic(bootstrap, topic, 1, replicas)
    delivered: list[object] = []
    idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    idempotent.produce(topic, b"once", on_delivery=lambda err, msg: delivered.append(err))
    assert idempotent.flush(10) == 0 and delivered == [None]

    host, port = bootstrap.split(",")[0].split(":")
    connection = Connection(host, int(port))
    try:
        versions = connection.request(
            18, 3, {"client_software_name": "tests", "client_software_version": "1"}
        )
    finally:
        connection.close()
    keys = {int(k.api_key) for k in versions.api_keys}
    assert 22 in keys and not keys & TRANSACTION_APIS


def consume_partition_0(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    """The values of ``topic``'s partition 0 from its start, up to ``expected`` of them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "log_level": 3})
    try:
        consumer.assign([Partition(topic, 0, 0)])
        seen: list[bytes] = []
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message.value())
            if len(seen) >= expected:
                break
        return seen
    finally:
        consumer.close()
