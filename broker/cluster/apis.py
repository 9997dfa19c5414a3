"""The APIs a cluster broker serves, over the same wire code as the single broker.

The group APIs are the single broker's handlers (:mod:`coordspec.broker.apis.groups`), with the
node's coordinator host behind ``ctx.groups``. Metadata and FindCoordinator answer from
what ZooKeeper publishes (:mod:`coordspec.broker.cluster.published`); Produce, Fetch and ListOffsets
go to the partition's leader replica, and a Fetch with ``replica_id`` set is a follower's.
InitProducerId hands out ids from blocks reserved in ZooKeeper (:mod:`coordspec.broker.cluster.producer_ids`)
and a leader checks idempotent batches' sequences (:mod:`coordspec.broker.cluster.producer_state`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from coordspec.broker.apis import registry
from coordspec.broker.apis.create_topics import MAX_RECORDS_PER_USER_OP, POLICY_VIOLATION
from coordspec.broker.apis.delete_topics import ZERO_ID
from coordspec.broker.apis.find_coordinator import (
    GROUP_KEY_TYPE,
    TRANSACTIONS_NOT_SERVED,
    no_coordinator,
)
from coordspec.broker.apis.metadata import by_id
from coordspec.broker.apis.registry import Api, with_handlers
from coordspec.broker.cluster import create_partitions, delete_topics
from coordspec.broker.cluster.node import ClusterNode
from coordspec.broker.cluster.peer_wire import ERROR_CODES
from coordspec.broker.cluster.producer_ids import ProducerIds, ProducerIdsUnavailable
from coordspec.broker.cluster.producer_state import LeaderProducers, committed
from coordspec.broker.cluster.published import PublishedView
from coordspec.broker.cluster.replica_logs import index_holding, kafka_offset
from coordspec.broker.context import Client
from coordspec.broker.log.batches import InvalidBatch, check_single_batch
from coordspec.broker.log.producers import SequenceError
from coordspec.broker.log.timestamps import search_for_timestamp
from coordspec.broker.log.topics import topic_name_error
from coordspec.broker.settings import TopicDefaults
from coordspec.broker.wire.protocol import response_class
from coordspec.reference.failover.placement import OFFSETS_TOPIC, partition_for
from coordspec.reference.replication.effects import ProduceFailed
from coordspec.reference.replication.znodes import TopicPartition
from coordspec.reference.wire.entities import build, ms, type_hints

NONE, OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE = (
    0,
    1,
    2,
    3,
    5,
)
(
    NOT_LEADER_OR_FOLLOWER,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_TOPIC_EXCEPTION,
    INVALID_REQUIRED_ACKS,
) = 6, 15, 17, 21
(
    TOPIC_ALREADY_EXISTS,
    INVALID_PARTITIONS,
    INVALID_REPLICATION_FACTOR,
    INVALID_CONFIG,
    INVALID_REQUEST,
) = 36, 37, 38, 40, 42
UNKNOWN_SERVER_ERROR = -1
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_RECORD, FETCH_SESSION_ID_NOT_FOUND = 53, 87, 70


@dataclass
class ClusterContext:
    """What the handlers see; ``groups`` and ``topics`` are what coordspec.broker.apis.groups uses."""

    node_id: int
    host: str
    port: int
    node: ClusterNode
    view: PublishedView
    topic_defaults: TopicDefaults
    # Set once the node has started and ``view`` is there. The broker listens before (peers
    # reach it while it starts); as Kafka's, it handles clients' requests only after.
    serving: asyncio.Event = field(default_factory=asyncio.Event)
    cluster_id: str = "coordspec"
    producer_ids: ProducerIds = field(default_factory=ProducerIds)
    producers: LeaderProducers = field(default_factory=LeaderProducers)
    # The brokers' addresses on the listener this context serves, when not --peers' (the
    # secured client listener's: coordspec.broker.cluster.server).
    addresses: dict[int, tuple[str, int]] | None = None

    @property
    def groups(self) -> ClusterNode:
        return self.node

    @property
    def topics(self) -> PublishedView:
        return self.view


def _not_led(ctx: ClusterContext, tp: TopicPartition) -> int:
    """The error for a partition this broker does not lead, as ReplicaManager's
    getPartitionOrError: a partition the metadata does not know (a deleted topic's) is unknown."""
    known = tp.partition in ctx.view.assignments.get(tp.topic, {})
    return NOT_LEADER_OR_FOLLOWER if known else UNKNOWN_TOPIC_OR_PARTITION


def _address(ctx: ClusterContext, broker_id: int) -> tuple[str, int]:
    return (ctx.addresses or ctx.node.config.peers)[broker_id]


def _live(ctx: ClusterContext) -> list[int]:
    return sorted(b for b in ctx.view.live_brokers if b in ctx.node.config.peers)


# -- Metadata, FindCoordinator, CreateTopics ----------------------------------


def _topic_metadata(ctx: ClusterContext, name: str) -> dict[str, Any]:
    partitions = []
    for number, replicas in sorted(ctx.view.assignments[name].items()):
        state = ctx.view.states.get(TopicPartition(name, number))
        if state is None or state.leader < 0:
            partitions.append(
                {
                    "error_code": LEADER_NOT_AVAILABLE,
                    "partition_index": number,
                    "leader_id": -1,
                    "leader_epoch": -1,
                    "replica_nodes": list(replicas),
                    "isr_nodes": [],
                    "offline_replicas": [],
                }
            )
            continue
        offline = [r for r in replicas if r not in ctx.view.live_brokers]
        partitions.append(
            {
                "error_code": NONE,
                "partition_index": number,
                "leader_id": state.leader,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": list(replicas),
                "isr_nodes": list(state.isr),
                "offline_replicas": offline,
            }
        )
    return {
        "error_code": NONE,
        "name": name,
        "topic_id": ctx.view.topic_ids.get(name, ZERO_ID),  # none in a znode written without
        "is_internal": name == OFFSETS_TOPIC,
        "partitions": partitions,
        "topic_authorized_operations": -2147483648,
    }


def _assignment(
    ctx: ClusterContext, partitions: int, factor: int
) -> dict[int, tuple[int, ...]] | None:
    """Kafka's spread: replicas round-robin over the live brokers, from each partition on."""
    live = _live(ctx)
    if factor > len(live):
        return None
    return {p: tuple(live[(p + i) % len(live)] for i in range(factor)) for p in range(partitions)}


async def metadata_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    requested = body.topics
    topics: list[dict[str, Any]] = []
    ids = {topic_id: name for name, topic_id in ctx.view.topic_ids.items()}
    if requested is None or (version == 0 and not requested):  # v0: an empty list means all
        names = sorted(ctx.view.assignments)
    elif (found := by_id(requested, ids.get)) is not None:
        names, topics = found
    else:
        names = [t.name for t in requested]
    defaults = ctx.topic_defaults
    allow_create = getattr(body, "allow_auto_topic_creation", True) and defaults.auto_create
    for name in names:
        if name is None or topic_name_error(name):
            topics.append(
                {
                    "error_code": INVALID_TOPIC_EXCEPTION,
                    "name": name,
                    "is_internal": False,
                    "partitions": [],
                }
            )
        elif name in ctx.view.assignments:
            topics.append(_topic_metadata(ctx, name))
        else:
            # As Kafka's broker on ZooKeeper: a topic it cannot place is INVALID_REPLICATION_FACTOR.
            assignment = _assignment(ctx, defaults.partitions, defaults.replication_factor)
            if not allow_create:
                error = UNKNOWN_TOPIC_OR_PARTITION
            elif assignment is None:
                error = INVALID_REPLICATION_FACTOR
            else:
                error = LEADER_NOT_AVAILABLE
                await asyncio.to_thread(ctx.node.create_topic, name, assignment, uuid.uuid4())
            topics.append(
                {"error_code": error, "name": name, "is_internal": False, "partitions": []}
            )
    brokers = [
        {"node_id": b, "host": _address(ctx, b)[0], "port": _address(ctx, b)[1], "rack": None}
        for b in _live(ctx)
    ]
    return {
        "brokers": brokers,
        "cluster_id": ctx.cluster_id,
        "controller_id": ctx.view.controller,
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
    }


def _coordinator(ctx: ClusterContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type != GROUP_KEY_TYPE:
        return no_coordinator(key, key_type)
    leader = ctx.view.leader(
        TopicPartition(OFFSETS_TOPIC, partition_for(key, ctx.node.config.offsets_partitions))
    )
    if leader < 0 or leader not in ctx.node.config.peers:
        return {
            "key": key,
            "error_code": COORDINATOR_NOT_AVAILABLE,
            "error_message": None,
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    host, port = _address(ctx, leader)
    return {
        "key": key,
        "error_code": NONE,
        "error_message": None,
        "node_id": leader,
        "host": host,
        "port": port,
    }


async def find_coordinator_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if version >= 4:
        return {"coordinators": [_coordinator(ctx, key, key_type) for key in body.coordinator_keys]}
    return _coordinator(ctx, body.key, key_type)


async def create_topics_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    counts = Counter(t.name for t in body.topics)
    results = []

    def partitions_of(topic: Any) -> int:
        return ctx.topic_defaults.partitions if topic.num_partitions == -1 else topic.num_partitions

    # As the single broker (KRaft's limit): a request for more than that many topics and
    # partitions is refused whole, before any assignment is built or written to ZooKeeper.
    if sum(1 + max(partitions_of(t), 0) for t in body.topics) > MAX_RECORDS_PER_USER_OP:
        return {
            "topics": [
                {
                    "name": t.name,
                    "error_code": POLICY_VIOLATION,
                    "error_message": "Unable to perform excessively large batch operation.",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": None,
                }
                for t in body.topics
            ]
        }
    for topic in body.topics:
        answer = {
            "name": topic.name,
            "topic_id": ZERO_ID,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": None,
        }
        topic_id = uuid.uuid4()
        partitions = partitions_of(topic)
        factor = (
            ctx.topic_defaults.replication_factor
            if topic.replication_factor == -1
            else topic.replication_factor
        )
        assignment = (
            _assignment(ctx, partitions, factor) if partitions >= 1 and factor >= 1 else None
        )
        if counts[topic.name] > 1 or topic.assignments:
            error, message = (
                INVALID_REQUEST,
                "duplicate names and manual assignments are not supported",
            )
        elif topic.configs:  # Kafka's answer to a config it refuses, as the single broker's
            error, message = (
                INVALID_CONFIG,
                f"topic configs are not supported here ({', '.join(c.name for c in topic.configs)})",
            )
        elif (why := topic_name_error(topic.name)) is not None:
            error, message = INVALID_TOPIC_EXCEPTION, why
        elif topic.name in ctx.view.assignments:
            error, message = TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists."
        elif partitions < 1:
            error, message = INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        elif assignment is None:
            error, message = (
                INVALID_REPLICATION_FACTOR,
                f"Replication factor: {factor} larger than available brokers: {len(_live(ctx))}.",
            )
        elif (
            body.validate_only
            or (
                created := await asyncio.to_thread(
                    ctx.node.create_topic, topic.name, assignment, topic_id
                )
            )
            is True
        ):
            error, message = NONE, None
        elif created is False:
            error, message = TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists."
        else:
            error, message = UNKNOWN_SERVER_ERROR, created
        if error == NONE:
            answer.update(num_partitions=partitions, replication_factor=factor, configs=[])
            if not body.validate_only:
                answer["topic_id"] = topic_id
        results.append({**answer, "error_code": error, "error_message": message})
    return {"topics": results}


# -- Produce, Fetch, ListOffsets ----------------------------------------------------------------


async def _produce_partition(
    ctx: ClusterContext, topic: str, data: Any, acks: int, timeout_ms: int
) -> dict[str, Any]:
    answer = {
        "index": data.index,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
    }
    if acks not in (-1, 0, 1):
        return {**answer, "error_code": INVALID_REQUIRED_ACKS}
    if topic == OFFSETS_TOPIC:  # internal topics take no client writes
        return {**answer, "error_code": INVALID_TOPIC_EXCEPTION}
    records = bytes(data.records or b"")
    try:
        header = check_single_batch(records)
    except InvalidBatch as e:
        return {
            **answer,
            "error_code": CORRUPT_MESSAGE if e.corrupt else INVALID_RECORD,
            "error_message": str(e),
        }
    tp = TopicPartition(topic, data.index)
    replica_log = ctx.node.leader_log(tp)
    if replica_log is not None:  # no await from this check to node.produce's append
        try:
            earlier = ctx.producers.check(tp, replica_log, header)
        except SequenceError as e:
            return {**answer, "error_code": e.error_code, "error_message": str(e)}
        if earlier is not None:  # a retry: the first append's offset, once committed for acks=all
            base = replica_log.records[earlier].payload_id
            error = (
                await committed(ctx.node, tp, replica_log, earlier, timeout_ms)
                if acks == -1
                else NONE
            )
            return {
                **answer,
                "error_code": error,
                "base_offset": base if error == NONE else -1,
                "log_start_offset": 0 if error == NONE else -1,
            }
    else:
        return {**answer, "error_code": _not_led(ctx, tp)}
    outcome = await ctx.node.produce(tp, records, acks)
    if isinstance(outcome, ProduceFailed):
        return {**answer, "error_code": ERROR_CODES.get(outcome.error, NOT_LEADER_OR_FOLLOWER)}
    return {**answer, "error_code": NONE, "base_offset": outcome.payload_id, "log_start_offset": 0}


async def produce_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any] | None:
    if body.transactional_id is not None:  # no transaction coordinator here
        responses = [
            {
                "name": t.name,
                "partition_responses": [
                    {
                        "index": p.index,
                        "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        "base_offset": -1,
                    }
                    for p in t.partition_data
                ],
            }
            for t in body.topic_data
        ]
    else:
        responses = []
        for t in body.topic_data:
            answers = await asyncio.gather(
                *(
                    _produce_partition(ctx, t.name, p, body.acks, ms(body.timeout))
                    for p in t.partition_data
                )
            )
            responses.append({"name": t.name, "partition_responses": list(answers)})
    return None if body.acks == 0 else {"responses": responses}


async def init_producer_id_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    """A fresh id at epoch 0 for an idempotent producer, as the single broker's
    (coordspec.broker.apis.init_producer_id); no transaction coordinator, so none for a transactional id."""
    unavailable = {"error_code": COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
    if body.transactional_id is not None:
        return {**unavailable, "error_code": TRANSACTIONS_NOT_SERVED}
    if ctx.node.zk is None:
        return unavailable
    try:
        producer_id = await ctx.producer_ids.allocate(ctx.node.zk.client, ctx.node_id)
    except ProducerIdsUnavailable:
        return unavailable  # clients retry it
    return {"error_code": NONE, "producer_id": producer_id, "producer_epoch": 0}


def _consumer_read(
    ctx: ClusterContext, topic: str, p: Any, budget: int
) -> tuple[dict[str, Any], int]:
    """One partition of a consumer's fetch: whole batches below the high watermark."""
    answer = {
        "partition_index": p.partition,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"",
        "high_watermark": -1,
    }
    tp = TopicPartition(topic, p.partition)
    replica_log = ctx.node.leader_log(tp)
    if replica_log is None:
        return {**answer, "error_code": _not_led(ctx, tp)}, -1
    hw = kafka_offset(replica_log, replica_log.high_watermark)
    answer.update(high_watermark=hw, last_stable_offset=hw, log_start_offset=0)
    if not 0 <= p.fetch_offset <= kafka_offset(replica_log, replica_log.log_end_offset):
        return {**answer, "error_code": OFFSET_OUT_OF_RANGE}, -1
    out, size = [], 0
    for record in replica_log.records[
        index_holding(replica_log, p.fetch_offset) : replica_log.high_watermark
    ]:
        if out and size + len(record.value) > min(budget, p.partition_max_bytes):
            break
        out.append(record.value)
        size += len(record.value)
    return {**answer, "error_code": NONE, "records": b"".join(out)}, size


async def fetch_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    if getattr(body, "session_id", 0) != 0:
        return {"error_code": FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    if body.replica_id >= 0:
        return await _replica_fetch(ctx, version, body)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(ms(body.max_wait), 0) / 1000
    if getattr(body, "isolation_level", 0) == 1:
        aborted: (
            list | None
        ) = []  # no transactions, so none aborted (Kafka's shape for read_committed)
    else:
        aborted = None
    while True:
        progress = ctx.node.progress
        responses, total, failed = [], 0, False
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                answer, size = _consumer_read(ctx, topic.topic, p, body.max_bytes - total)
                partitions.append({**answer, "aborted_transactions": aborted})
                failed |= size < 0
                total += max(size, 0)
            responses.append({"topic": topic.topic, "partitions": partitions})
        remaining = deadline - loop.time()
        if (
            total >= body.min_bytes
            or remaining <= 0
            or failed
            or not any(t.partitions for t in body.topics)
        ):
            return {"error_code": NONE, "session_id": 0, "responses": responses}
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(progress.wait(), remaining)


async def _replica_fetch(ctx: ClusterContext, version: int, body: Any) -> dict[str, Any]:
    partition_class = type_hints(type_hints(response_class(1, version))["responses"].__args__[0])[
        "partitions"
    ].__args__[0]
    diverging_class = type_hints(partition_class).get("diverging_epoch")
    responses = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            answer = await ctx.node.serve_replica_fetch(
                body.replica_id,
                topic.topic,
                p.partition,
                p.current_leader_epoch,
                p.fetch_offset,
                getattr(p, "last_fetched_epoch", -1),
                ms(body.max_wait),
                min(body.max_bytes, p.partition_max_bytes),
            )
            if (
                "diverging_epoch" in answer
            ):  # a tagged field (v12+): the builder does not make it from a mapping
                answer["diverging_epoch"] = (
                    build(diverging_class, answer["diverging_epoch"]) if diverging_class else None
                )
            partitions.append(answer)
        responses.append({"topic": topic.topic, "partitions": partitions})
    return {"error_code": NONE, "session_id": 0, "responses": responses}


def _list_offset(ctx: ClusterContext, topic: str, p: Any) -> dict[str, Any]:
    answer = {
        "partition_index": p.partition_index,
        "error_code": NONE,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
    }
    replica_log = ctx.node.leader_log(TopicPartition(topic, p.partition_index))
    if replica_log is None:
        return {**answer, "error_code": NOT_LEADER_OR_FOLLOWER}
    if p.timestamp == -1:  # latest: what a consumer can read
        return {**answer, "offset": kafka_offset(replica_log, replica_log.high_watermark)}
    if p.timestamp == -2:  # earliest
        return {**answer, "offset": 0}
    try:
        found = search_for_timestamp(
            (record.value for record in replica_log.records[: replica_log.high_watermark]),
            p.timestamp,
        )
    except InvalidBatch:
        return {**answer, "error_code": CORRUPT_MESSAGE}
    if found is None:
        return answer
    return {
        **answer,
        "offset": found.offset,
        "timestamp": found.timestamp,
        "leader_epoch": found.leader_epoch,
    }


async def list_offsets_handle(
    ctx: ClusterContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return {
        "topics": [
            {"name": t.name, "partitions": [_list_offset(ctx, t.name, p) for p in t.partitions]}
            for t in body.topics
        ]
    }


# The single broker's table with the cluster's handlers: the group APIs (and ApiVersions) are
# the same, with the node's coordinator host behind ``ctx.groups``.
APIS: dict[int, Api] = with_handlers(
    registry.APIS,
    {
        0: produce_handle,
        1: fetch_handle,
        2: list_offsets_handle,
        3: metadata_handle,
        10: find_coordinator_handle,
        19: create_topics_handle,
        20: delete_topics.handle,
        22: init_producer_id_handle,
        37: create_partitions.handle,
    },
)
