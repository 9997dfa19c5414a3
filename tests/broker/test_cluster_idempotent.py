"""Idempotent producers on the 3-broker cluster on a real ZooKeeper.

- kafka-python's default producer (idempotent) and librdkafka with enable.idempotence
  write to topics of 3 replicas with acks=all; a consumer reads every record exactly once,
  and the leaders' logs hold the batches with one producer id and consecutive sequences;
- InitProducerId sent to each broker: ids come from blocks of 1000 reserved in
  ``/latest_producer_id_block`` (Kafka's JSON), never the same id from two brokers, a
  new block once one is used up;
- the leader's sequence checks, batch by batch: a retried batch gets its first offset back
  and is not appended again, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER;
- kill -9 of a partition's leader while idempotent producers (kafka-python, librdkafka)
  send: they carry on with the new leader, and the partition holds every record once;
  the new leader of another partition knows the sequences its log holds (a retry of the
  last batch the dead leader acknowledged gets its offset back, a gap is refused).

And CreateTopics with a topic config answers INVALID_CONFIG, as the single broker does.

One cluster serves the module (cluster_fixtures); the kill comes last. Every wait is bounded.
"""

from __future__ import annotations

import datetime
import io
import json
import threading
import time

import pytest
from cluster_fixtures import (  # noqa: F401 - the two fixtures are used by name
    assert_no_errors,
    cluster_fixture,
    partition_of,
    values,
    wait_for,
    wait_replicated,
    zookeeper_fixture,
)
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPartition
from kazoo.client import KazooClient
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros

from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.cluster.producer_ids import BLOCK_SIZE, PATH, ProducerIdBlock, reserve_block
from coordspec.broker.log.batches import BatchHeader, read_header
from coordspec.broker.testing import Connection
from coordspec.reference.replication.znodes import TopicPartition

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

PARTITIONS = 3
NONE, NOT_LEADER_OR_FOLLOWER, OUT_OF_ORDER_SEQUENCE_NUMBER = 0, 6, 45
CLUSTER_AUTHORIZATION_FAILED = 31  # the answer to a transactional id: no transactions here


def create_topic(cluster: Cluster, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 3)]).values():
        future.result(15)
    wait_replicated(cluster, name, partitions)


def read_all(
    cluster: Cluster, topic: str, partitions: int = PARTITIONS, timeout_s: float = 30
) -> list[bytes]:
    """Every record of ``topic`` up to the partitions' ends (their high watermarks)."""
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        tps = [KafkaPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        received: list[bytes] = []
        wait_for(
            lambda: all(consumer.position(tp) >= ends[tp] for tp in tps),
            timeout_s,
            f"every record of {topic}",
            poll=lambda: received.extend(
                r.value for records in consumer.poll(200).values() for r in records
            ),
        )
        return received
    finally:
        consumer.close()


def leader_of(cluster: Cluster, topic: str, partition: int) -> int:
    assert cluster.view is not None
    return cluster.view.leader(TopicPartition(topic, partition))


def connect(cluster: Cluster, broker: int) -> Connection:
    return Connection(*cluster.peers[broker], timeout_s=20)


def batch_headers(cluster: Cluster, topic: str, partition: int) -> list[BatchHeader]:
    """The headers of the batches in the partition's leader's log, up to its high watermark."""
    connection = connect(cluster, leader_of(cluster, topic, partition))
    try:
        body = connection.request(
            1,
            12,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 22,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": partition,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 22,
                            }
                        ],
                    }
                ],
            },
        )
    finally:
        connection.close()
    answer = body.responses[0].partitions[0]
    assert answer.error_code == NONE
    data, headers, position = bytes(answer.records or b""), [], 0
    while (header := read_header(data, position)) is not None:
        headers.append(header)
        position += header.size
    return headers


def assert_sequenced(cluster: Cluster, topic: str, partitions: int = PARTITIONS) -> set[int]:
    """Each partition's batches come from idempotent producers, each producer's sequences
    consecutive from 0; the producer ids."""
    producers: set[int] = set()
    for partition in range(partitions):
        next_sequence: dict[int, int] = {}
        for header in batch_headers(cluster, topic, partition):
            assert header.producer_id >= 0 and header.producer_epoch == 0, header
            assert header.base_sequence == next_sequence.get(header.producer_id, 0), header
            next_sequence[header.producer_id] = header.base_sequence + header.record_count
        producers |= set(next_sequence)
    return producers


def init_producer_id(
    connection: Connection, transactional_id: str | None = None
) -> tuple[int, int, int]:
    body = connection.request(
        22,
        4,
        {
            "transactional_id": transactional_id,
            "transaction_timeout": 60_000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    return int(body.error_code), int(body.producer_id), int(body.producer_epoch)


def idempotent_batch(producer_id: int, sequence: int, *records: bytes) -> bytes:
    stamp = TZAwareMicros.parse(datetime.datetime.now(datetime.UTC))
    buffer = io.BytesIO()
    batch = tuple(
        Record(attributes=0, timestamp=stamp, offset=i, key=None, value=v, headers=())
        for i, v in enumerate(records)
    )
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=sequence,
            records=batch,
            attributes=0,
        ),
    )
    return buffer.getvalue()


def produce(connection: Connection, topic: str, batch: bytes) -> tuple[int, int]:
    """One batch to partition 0 with acks=all: (error code, base offset)."""
    body = connection.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    answer = body.responses[0].partition_responses[0]
    return int(answer.error_code), int(answer.base_offset)


def test_kafka_python_default_producer_writes_each_record_once(cluster: Cluster) -> None:
    topic = "idempotent-kafka-python"
    create_topic(cluster, topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        assert producer.config["enable_idempotence"]  # kafka-python's default
        batch = values(0, 90)
        futures = [
            producer.send(topic, value=value, partition=partition_of(value, PARTITIONS))
            for value in batch
        ]
        producer.flush(30)
        offsets = [(f.get(10).partition, f.get(10).offset) for f in futures]
    finally:
        producer.close(10)
    assert sorted(offsets) == [(p, o) for p in range(PARTITIONS) for o in range(30)]
    assert sorted(read_all(cluster, topic)) == sorted(batch)
    assert len(assert_sequenced(cluster, topic)) == 1
    assert_no_errors(cluster)


def test_librdkafka_idempotent_producer_writes_each_record_once(cluster: Cluster) -> None:
    topic = "idempotent-librdkafka"
    create_topic(cluster, topic)
    errors: list[KafkaError] = []
    delivered: list[tuple[int, int]] = []

    def on_delivery(error: KafkaError | None, message) -> None:
        if error is not None:
            errors.append(error)
        else:
            delivered.append((message.partition(), message.offset()))

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "log_level": 3,
            "error_cb": errors.append,
            "linger.ms": 5,
        }
    )
    batch = values(0, 90)
    for value in batch:
        producer.produce(
            topic, value=value, partition=partition_of(value, PARTITIONS), on_delivery=on_delivery
        )
    assert producer.flush(30) == 0
    assert errors == []
    assert sorted(delivered) == [(p, o) for p in range(PARTITIONS) for o in range(30)]
    assert sorted(read_all(cluster, topic)) == sorted(batch)
    assert len(assert_sequenced(cluster, topic)) == 1
    assert_no_errors(cluster)


def test_producer_ids_come_from_blocks_unique_across_brokers(cluster: Cluster) -> None:
    connections = {broker: connect(cluster, broker) for broker in cluster.broker_ids}
    try:
        ids = {
            broker: [init_producer_id(c)[1] for _ in range(3)] for broker, c in connections.items()
        }
        # Enough from one broker to use up its block: the next comes from a block after every other.
        first = cluster.broker_ids[0]
        for _ in range(BLOCK_SIZE):
            connections[first].send(
                22,
                4,
                {
                    "transactional_id": None,
                    "transaction_timeout": 60_000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
        answers = [connections[first].receive()[1] for _ in range(BLOCK_SIZE)]
        assert {(int(a.error_code), int(a.producer_epoch)) for a in answers} == {(NONE, 0)}
        ids[first] += [int(a.producer_id) for a in answers]
        transactional = init_producer_id(connections[first], "a-transaction")
    finally:
        for connection in connections.values():
            connection.close()

    assert transactional == (CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    every = [i for broker_ids in ids.values() for i in broker_ids]
    assert len(set(every)) == len(every), "an id handed out twice"
    blocks = {broker: {i // BLOCK_SIZE for i in broker_ids} for broker, broker_ids in ids.items()}
    for broker, broker_ids in ids.items():
        assert broker_ids == sorted(broker_ids), broker_ids  # in order within a broker's blocks
        assert all(not blocks[broker] & blocks[other] for other in ids if other != broker), blocks
    assert len(blocks[first]) == 2, blocks[first]

    assert cluster.view is not None
    data, _ = cluster.view.client.get(PATH)
    latest = max(blocks[first])  # the block reserved last
    assert json.loads(data) == {
        "version": 1,
        "broker": first,
        "block_start": str(latest * BLOCK_SIZE),
        "block_end": str(latest * BLOCK_SIZE + BLOCK_SIZE - 1),
    }
    assert_no_errors(cluster)


def test_brokers_reserving_at_once_get_distinct_consecutive_blocks(zookeeper_connect: str) -> None:
    """The versioned write, raced: two brokers' sessions reserve 15 blocks each at the same
    time, starting from the empty node Kafka creates (read as no block yet)."""
    root = KazooClient(zookeeper_connect)
    root.start(timeout=10)
    root.ensure_path("/reserving")  # the brokers' chroot
    root.stop()
    root.close()
    clients = [KazooClient(f"{zookeeper_connect}/reserving") for _ in range(2)]
    for client in clients:
        client.start(timeout=10)
    try:
        clients[0].create(PATH, b"")
        reserved: dict[int, list[ProducerIdBlock]] = {1: [], 2: []}

        def reserve(broker: int) -> None:
            for _ in range(15):
                reserved[broker].append(reserve_block(clients[broker - 1], broker))

        threads = [threading.Thread(target=reserve, args=(broker,)) for broker in reserved]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads)
        every = sorted(reserved[1] + reserved[2], key=lambda b: b.first)
        assert [(b.first, b.last) for b in every] == [
            (i * BLOCK_SIZE, i * BLOCK_SIZE + BLOCK_SIZE - 1) for i in range(30)
        ]
        assert all(b.broker == broker for broker, blocks in reserved.items() for b in blocks)
        data, stat = clients[0].get(PATH)
        assert ProducerIdBlock.decode(data) == every[-1] and stat.version == 30
    finally:
        for client in clients:
            client.stop()
            client.close()


def test_the_leader_checks_sequences(cluster: Cluster) -> None:
    topic = "sequences"
    create_topic(cluster, topic, partitions=1)
    leader = leader_of(cluster, topic, 0)
    follower = next(b for b in cluster.broker_ids if b != leader)
    connection = connect(cluster, leader)
    try:
        error, producer_id, _ = init_producer_id(connection)
        assert error == NONE
        first = idempotent_batch(producer_id, 0, b"a", b"b")
        assert produce(connection, topic, first) == (NONE, 0)
        assert produce(connection, topic, first) == (NONE, 0)  # a retry: the first append's offset
        assert (
            produce(connection, topic, idempotent_batch(producer_id, 3, b"d"))[0]
            == OUT_OF_ORDER_SEQUENCE_NUMBER
        )  # 2 is missing
        assert produce(connection, topic, idempotent_batch(producer_id, 2, b"c")) == (NONE, 2)
        assert produce(connection, topic, first) == (NONE, 0)  # still one of its last five batches
        _, stranger, _ = init_producer_id(connection)
        assert (
            produce(connection, topic, idempotent_batch(stranger, 1, b"x"))[0]
            == OUT_OF_ORDER_SEQUENCE_NUMBER
        )  # must start at 0
    finally:
        connection.close()
    elsewhere = connect(cluster, follower)
    try:
        assert (
            produce(elsewhere, topic, idempotent_batch(producer_id, 3, b"d"))[0]
            == NOT_LEADER_OR_FOLLOWER
        )
    finally:
        elsewhere.close()
    assert sorted(read_all(cluster, topic, partitions=1)) == [b"a", b"b", b"c"]
    assert [(h.base_offset, h.base_sequence) for h in batch_headers(cluster, topic, 0)] == [
        (0, 0),
        (2, 2),
    ]
    assert_no_errors(cluster)


def test_create_topics_with_a_config_is_invalid_config(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    future = admin.create_topics(
        [NewTopic("configured", 1, 3, config={"cleanup.policy": "compact"})]
    )["configured"]
    with pytest.raises(KafkaException) as refused:
        future.result(15)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG, refused.value
    assert cluster.view is not None and "configured" not in cluster.view.assignments


def test_idempotent_producers_carry_on_after_their_leader_is_killed(cluster: Cluster) -> None:
    topic, rdkafka_topic, retried = (
        "idempotent-failover",
        "idempotent-failover-librdkafka",
        "retried-after-failover",
    )
    for name in (topic, rdkafka_topic, retried):
        create_topic(cluster, name, partitions=1)
    victim = leader_of(cluster, topic, 0)
    assert (
        leader_of(cluster, rdkafka_topic, 0) == leader_of(cluster, retried, 0) == victim
    )  # the first live broker (Kafka's spread)

    # Two batches acknowledged by the leader about to die (so every replica has them).
    connection = connect(cluster, victim)
    try:
        _, producer_id, _ = init_producer_id(connection)
        second = idempotent_batch(producer_id, 2, b"c")
        assert produce(connection, retried, idempotent_batch(producer_id, 0, b"a", b"b")) == (
            NONE,
            0,
        )
        assert produce(connection, retried, second) == (NONE, 2)
    finally:
        connection.close()

    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=2, request_timeout_ms=10_000
    )
    rdkafka_errors: list[KafkaError] = []
    rdkafka_offsets: list[int] = []
    rdkafka = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "log_level": 0,
        }
    )
    batch = [f"record-{i}".encode() for i in range(400)]
    futures: list = []

    def delivered(error: KafkaError | None, message) -> None:
        if error is not None:
            rdkafka_errors.append(error)
        else:
            rdkafka_offsets.append(message.offset())

    def send_slowly() -> None:  # both producers, the same records
        for value in batch:
            futures.append(producer.send(topic, value=value, partition=0))
            rdkafka.produce(rdkafka_topic, value=value, partition=0, on_delivery=delivered)
            rdkafka.poll(0)
            time.sleep(0.01)

    sender = threading.Thread(target=send_slowly, daemon=True)
    try:
        sender.start()
        wait_for(lambda: len(futures) >= 100, 20, "a hundred records sent before the kill")
        cluster.kill(victim)
        sender.join(30)
        assert not sender.is_alive()
        producer.flush(90)
        offsets = [f.get(10).offset for f in futures]
        assert rdkafka.flush(90) == 0
    finally:
        producer.close(10)
    assert leader_of(cluster, topic, 0) not in (victim, -1)
    assert offsets == list(range(len(batch)))  # each record once, in the order sent
    assert (rdkafka_errors, rdkafka_offsets) == ([], list(range(len(batch))))
    for name in (topic, rdkafka_topic):
        assert read_all(cluster, name, partitions=1) == batch
        assert len(assert_sequenced(cluster, name, partitions=1)) == 1

    # The new leader read the sequences from its log: a retry of the last batch is not appended again.
    wait_for(
        lambda: leader_of(cluster, retried, 0) not in (victim, -1), 30, f"a new leader of {retried}"
    )
    connection = connect(cluster, leader_of(cluster, retried, 0))
    try:
        assert produce(connection, retried, second) == (NONE, 2)
        assert (
            produce(connection, retried, idempotent_batch(producer_id, 4, b"e"))[0]
            == OUT_OF_ORDER_SEQUENCE_NUMBER
        )
        assert produce(connection, retried, idempotent_batch(producer_id, 3, b"d")) == (NONE, 3)
    finally:
        connection.close()
    assert read_all(cluster, retried, partitions=1) == [b"a", b"b", b"c", b"d"]

    cluster.start_broker(victim)  # back for the module's last check
    cluster.wait(lambda view: victim in view.live_brokers, f"broker {victim} registered again", 30)
    assert_no_errors(cluster)
