"""ListOffsets (2): the earliest offset (-2), the latest (-1), or the first at a timestamp.

A timestamp is answered with the first record whose timestamp reaches it, and that
record's timestamp (:mod:`coordspec.broker.log.timestamps`); past the last record, offset
and timestamp -1. -3 (max timestamp) arrives with v7, which this broker does not advertise.
"""

from __future__ import annotations

from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.log.batches import InvalidBatch

NONE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 2, 3
LATEST, EARLIEST = -1, -2


def _partition(ctx: BrokerContext, topic: str, p: Any) -> dict[str, Any]:
    log = ctx.topics.log(topic, p.partition_index)
    if log is None:
        return {
            "partition_index": p.partition_index,
            "error_code": UNKNOWN_TOPIC_OR_PARTITION,
            "timestamp": -1,
            "offset": -1,
        }
    answer = {
        "partition_index": p.partition_index,
        "error_code": NONE,
        "timestamp": -1,
        "leader_epoch": 0,
    }
    if p.timestamp == LATEST:
        return {**answer, "offset": log.high_watermark}
    if p.timestamp == EARLIEST:
        return {**answer, "offset": log.log_start_offset}
    try:
        found = log.offset_for_timestamp(p.timestamp)
    except InvalidBatch:
        return {**answer, "error_code": CORRUPT_MESSAGE, "offset": -1, "leader_epoch": -1}
    if found is None:
        return {**answer, "offset": -1, "leader_epoch": -1}
    return {
        **answer,
        "offset": found.offset,
        "timestamp": found.timestamp,
        "leader_epoch": found.leader_epoch,
    }


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    return {
        "topics": [
            {"name": t.name, "partitions": [_partition(ctx, t.name, p) for p in t.partitions]}
            for t in body.topics
        ]
    }
