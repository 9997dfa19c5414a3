"""CreateTopics (19): topics with one replica on this broker.

Errors follow Kafka: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION for a bad name,
INVALID_PARTITIONS for a count below 1, INVALID_REPLICATION_FACTOR for anything but 1
(or -1, the broker default) on a one-broker cluster, INVALID_REQUEST for a name given
twice. Not supported here, and refused rather than ignored: manual assignments
(INVALID_REQUEST) and topic configs (INVALID_CONFIG; no retention, compaction or
timestamp type is applied by this broker).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker.context import BrokerContext, Client
from broker.log.topics import topic_name_error

NONE, INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS = 0, 17, 36
INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_REQUEST = 37, 38, 40, 42


def _create(ctx: BrokerContext, topic: Any, validate_only: bool, duplicated: bool) -> dict[str, Any]:
    answer = {"name": topic.name, "error_message": None, "num_partitions": -1, "replication_factor": -1, "configs": None}
    partitions = ctx.default_partitions if topic.num_partitions == -1 else topic.num_partitions
    if duplicated:
        return {**answer, "error_code": INVALID_REQUEST, "error_message": f"topic {topic.name!r} appears more than once"}
    if (why := topic_name_error(topic.name)) is not None:
        return {**answer, "error_code": INVALID_TOPIC_EXCEPTION, "error_message": why}
    if topic.name in ctx.topics:
        return {**answer, "error_code": TOPIC_ALREADY_EXISTS, "error_message": f"Topic '{topic.name}' already exists."}
    if topic.assignments:
        return {**answer, "error_code": INVALID_REQUEST, "error_message": "manual replica assignments are not supported"}
    if topic.configs:
        names = ", ".join(c.name for c in topic.configs)
        return {**answer, "error_code": INVALID_CONFIG, "error_message": f"topic configs are not supported here ({names})"}
    if partitions < 1:
        return {**answer, "error_code": INVALID_PARTITIONS, "error_message": "Number of partitions must be larger than 0."}
    if topic.replication_factor not in (-1, 1):
        return {**answer, "error_code": INVALID_REPLICATION_FACTOR,
                "error_message": f"Replication factor: {topic.replication_factor} larger than available brokers: 1."}
    if validate_only:
        return {**answer, "error_code": NONE, "num_partitions": partitions, "replication_factor": 1, "configs": []}
    entry = ctx.topics.create(topic.name, partitions)
    return {**answer, "error_code": NONE, "topic_id": entry.topic_id, "num_partitions": partitions, "replication_factor": 1, "configs": []}


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    counts = Counter(t.name for t in body.topics)
    return {"topics": [_create(ctx, t, body.validate_only, counts[t.name] > 1) for t in body.topics]}
