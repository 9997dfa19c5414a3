"""CreateTopics (19): topics with one replica on this broker.

Errors follow Kafka: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION for a bad name,
INVALID_PARTITIONS for a count below 1, INVALID_REPLICATION_FACTOR for a factor other than
1 on a one-broker cluster (-1 is ``default.replication.factor``, as ``num.partitions`` stands
for a count of -1), INVALID_REQUEST for a name given twice, and, as KRaft's controller, POLICY_VIOLATION for the whole request when its new
topics would take more than 10,000 metadata records (one per topic and per partition).
Not supported here, and refused rather than ignored: manual assignments
(INVALID_REQUEST) and topic configs (INVALID_CONFIG; no retention, compaction or
timestamp type is applied by this broker).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.log.topics import topic_name_error

NONE, INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS = 0, 17, 36
(
    INVALID_PARTITIONS,
    INVALID_REPLICATION_FACTOR,
    INVALID_CONFIG,
    INVALID_REQUEST,
    POLICY_VIOLATION,
) = 37, 38, 40, 42, 44
MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController


def _check(ctx: BrokerContext, topic: Any, duplicated: bool) -> dict[str, Any]:
    """The topic's answer: an error, or NONE with the partition count it would get."""
    answer = {
        "name": topic.name,
        "error_message": None,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }
    defaults = ctx.topic_defaults
    partitions = defaults.partitions if topic.num_partitions == -1 else topic.num_partitions
    factor = (
        defaults.replication_factor if topic.replication_factor == -1 else topic.replication_factor
    )
    if duplicated:
        return {
            **answer,
            "error_code": INVALID_REQUEST,
            "error_message": f"topic {topic.name!r} appears more than once",
        }
    if (why := topic_name_error(topic.name)) is not None:
        return {**answer, "error_code": INVALID_TOPIC_EXCEPTION, "error_message": why}
    if topic.name in ctx.topics:
        return {
            **answer,
            "error_code": TOPIC_ALREADY_EXISTS,
            "error_message": f"Topic '{topic.name}' already exists.",
        }
    if topic.assignments:
        return {
            **answer,
            "error_code": INVALID_REQUEST,
            "error_message": "manual replica assignments are not supported",
        }
    if topic.configs:
        names = ", ".join(c.name for c in topic.configs)
        return {
            **answer,
            "error_code": INVALID_CONFIG,
            "error_message": f"topic configs are not supported here ({names})",
        }
    if partitions < 1:
        return {
            **answer,
            "error_code": INVALID_PARTITIONS,
            "error_message": "Number of partitions must be larger than 0.",
        }
    if factor != 1:
        return {
            **answer,
            "error_code": INVALID_REPLICATION_FACTOR,
            "error_message": f"Replication factor: {factor} larger than available brokers: 1.",
        }
    return {
        **answer,
        "error_code": NONE,
        "num_partitions": partitions,
        "replication_factor": 1,
        "configs": [],
    }


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    counts = Counter(t.name for t in body.topics)
    answers = [_check(ctx, t, counts[t.name] > 1) for t in body.topics]
    creating = [a for a in answers if a["error_code"] == NONE]
    # KRaft's controller writes a TopicRecord and a PartitionRecord per partition, at most
    # MAX_RECORDS_PER_USER_OP in one operation; beyond, the whole request is refused.
    if sum(1 + a["num_partitions"] for a in creating) > MAX_RECORDS_PER_USER_OP:
        return {
            "topics": [
                {
                    **a,
                    "error_code": POLICY_VIOLATION,
                    "error_message": "Unable to perform excessively large batch operation.",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": None,
                }
                for a in answers
            ]
        }
    if not body.validate_only:
        for answer in creating:
            answer["topic_id"] = ctx.topics.create(
                answer["name"], answer["num_partitions"]
            ).topic_id
    return {"topics": answers}
