"""InitProducerId (22): a fresh producer id, epoch 0, for an idempotent producer.

As Kafka does for a null transactional id, every request gets a new id, whatever id and
epoch it names (v3+). There is no transaction coordinator here, so a transactional id gets
the error FindCoordinator answers for its key (:mod:`coordspec.broker.apis.find_coordinator`),
fatal to the producer in librdkafka and in Kafka's Java client.
"""

from __future__ import annotations

from typing import Any

from coordspec.broker.apis.find_coordinator import TRANSACTIONS_NOT_SERVED
from coordspec.broker.context import BrokerContext, Client

NONE = 0


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    if body.transactional_id is not None:
        return {"error_code": TRANSACTIONS_NOT_SERVED, "producer_id": -1, "producer_epoch": -1}
    return {"error_code": NONE, "producer_id": ctx.producer_ids.allocate(), "producer_epoch": 0}
