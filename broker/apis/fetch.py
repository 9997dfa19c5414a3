"""Fetch (1): whole batches from each partition's log, long-polling up to ``max_wait``.

No fetch sessions: every answer carries session id 0, which tells a client to send
full requests (KIP-227 allows a broker to decline sessions); a request naming a session
gets FETCH_SESSION_ID_NOT_FOUND, as Kafka answers for a session it does not have. Records are empty bytes,
never null, when a partition has nothing new: kafka-python fails on null.
"""

from __future__ import annotations

import asyncio
from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.reference.wire.entities import ms

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, FETCH_SESSION_ID_NOT_FOUND = 0, 1, 3, 70


def _read(ctx: BrokerContext, body: Any) -> tuple[list[dict[str, Any]], int, bool]:
    """The responses, the bytes of records in them, and whether any partition failed."""
    total = 0
    failed = False
    responses = []
    # No transactions here: no aborted ones, an empty list when read_committed asks (Kafka's shape).
    aborted = [] if getattr(body, "isolation_level", 0) == 1 else None
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            log = ctx.topics.log(topic.topic, p.partition)
            answer = {
                "partition_index": p.partition,
                "aborted_transactions": aborted,
                "preferred_read_replica": -1,
                "records": b"",
            }
            if log is None:
                partitions.append(
                    {**answer, "error_code": UNKNOWN_TOPIC_OR_PARTITION, "high_watermark": -1}
                )
                failed = True
                continue
            answer.update(
                high_watermark=log.high_watermark,
                last_stable_offset=log.high_watermark,
                log_start_offset=log.log_start_offset,
            )
            if not log.log_start_offset <= p.fetch_offset <= log.high_watermark:
                partitions.append({**answer, "error_code": OFFSET_OUT_OF_RANGE})
                failed = True
                continue
            # Until some data is in the response, one batch comes however large (KIP-74).
            limit = min(p.partition_max_bytes, body.max_bytes - total)
            records = log.read(p.fetch_offset, limit, at_least_one=total == 0)
            total += len(records)
            partitions.append({**answer, "error_code": NONE, "records": records})
        responses.append({"topic": topic.topic, "partitions": partitions})
    return responses, total, failed


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    if getattr(body, "session_id", 0) != 0:
        return {"error_code": FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(ms(body.max_wait), 0) / 1000
    asked = any(t.partitions for t in body.topics)
    while True:
        responses, total, failed = _read(ctx, body)
        remaining = deadline - loop.time()
        # As Kafka: answer at once when nothing was asked for or a partition failed.
        if total >= body.min_bytes or remaining <= 0 or failed or not asked:
            return {"error_code": NONE, "session_id": 0, "responses": responses}
        await ctx.topics.wait_for_append(remaining)
