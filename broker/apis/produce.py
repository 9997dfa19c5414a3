"""Produce (0): one checked record batch per partition appended to its log.

acks=0 gets no response at all, as in Kafka. With one replica, acks=1 and acks=-1 are
the same: the batch is in the log before the response goes out.
"""

from __future__ import annotations

from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.log.batches import InvalidBatch, check_single_batch
from coordspec.broker.log.producers import SequenceError
from coordspec.broker.log.topics import OFFSETS_TOPIC

NONE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION = 0, 2, 3, 17
INVALID_REQUIRED_ACKS, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_RECORD = 21, 53, 87


def _partition(ctx: BrokerContext, topic: str, data: Any, acks: int) -> dict[str, Any]:
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
    log = ctx.topics.log(topic, data.index)
    if log is None:
        return {**answer, "error_code": UNKNOWN_TOPIC_OR_PARTITION}
    records = bytes(data.records or b"")
    try:
        header = check_single_batch(records)
    except InvalidBatch as e:
        return {
            **answer,
            "error_code": CORRUPT_MESSAGE if e.corrupt else INVALID_RECORD,
            "error_message": str(e),
        }
    try:
        base = log.append(records, header)
    except SequenceError as e:
        return {**answer, "error_code": e.error_code, "error_message": str(e)}
    return {
        **answer,
        "error_code": NONE,
        "base_offset": base,
        "log_start_offset": log.log_start_offset,
    }


async def handle(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any] | None:
    if body.transactional_id is not None:
        # No transaction coordinator: Kafka refuses transactional writes it cannot authorise.
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
        responses = [
            {
                "name": t.name,
                "partition_responses": [
                    _partition(ctx, t.name, p, body.acks) for p in t.partition_data
                ],
            }
            for t in body.topic_data
        ]
        ctx.topics.notify_appended()
    return None if body.acks == 0 else {"responses": responses}
