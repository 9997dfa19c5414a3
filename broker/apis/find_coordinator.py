"""FindCoordinator (10): this broker coordinates every group; v4+ answers a batch of keys.

There is no transaction or share coordinator here, so those keys get
COORDINATOR_NOT_AVAILABLE, the answer Kafka gives while it has none."""

from __future__ import annotations

from typing import Any

from coordspec.broker.context import BrokerContext, Client

NONE, COORDINATOR_NOT_AVAILABLE, INVALID_REQUEST = 0, 15, 42
GROUP_KEY_TYPE = 0


def _answer(ctx: BrokerContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type == GROUP_KEY_TYPE:
        return {
            "key": key,
            "error_code": NONE,
            "error_message": None,
            "node_id": ctx.node_id,
            "host": ctx.host,
            "port": ctx.port,
        }
    error = COORDINATOR_NOT_AVAILABLE if key_type in (1, 2) else INVALID_REQUEST
    return {
        "key": key,
        "error_code": error,
        "error_message": None,
        "node_id": -1,
        "host": "",
        "port": -1,
    }


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if version >= 4:
        return {"coordinators": [_answer(ctx, key, key_type) for key in body.coordinator_keys]}
    return _answer(ctx, body.key, key_type)
