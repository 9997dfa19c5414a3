"""FindCoordinator (10): this broker coordinates every group; v4+ answers a batch of keys.

There is no transaction coordinator here: a transactional id (key type 1) gets
CLUSTER_AUTHORIZATION_FAILED with a message saying so. It is the one code both clients
treat as fatal at this step while showing the broker's message: librdkafka 2.0.2 to 2.16
(``rd_kafka_txn_handle_FindCoordinator``) retries every other error until its timeout, and
Kafka 4.0's Java client (``TransactionManager``) retries the retriable ones and drops the
message of TRANSACTIONAL_ID_AUTHORIZATION_FAILED. So ``init_transactions`` fails at once.
A share group (key type 2) gets COORDINATOR_NOT_AVAILABLE, any other key type INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from coordspec.broker.context import BrokerContext, Client

NONE, COORDINATOR_NOT_AVAILABLE, CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST = 0, 15, 31, 42
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE = 0, 1, 2
TRANSACTIONS_NOT_SERVED = CLUSTER_AUTHORIZATION_FAILED
NOT_SERVED_MESSAGE = "this broker serves no transactions: it has no transaction coordinator"


def no_coordinator(key: str, key_type: int) -> dict[str, Any]:
    """The answer for a key this broker has no coordinator for, by key type."""
    if key_type == TRANSACTION_KEY_TYPE:
        error, message = TRANSACTIONS_NOT_SERVED, NOT_SERVED_MESSAGE
    else:
        error = COORDINATOR_NOT_AVAILABLE if key_type == SHARE_KEY_TYPE else INVALID_REQUEST
        message = None
    return {
        "key": key,
        "error_code": error,
        "error_message": message,
        "node_id": -1,
        "host": "",
        "port": -1,
    }


def _answer(ctx: BrokerContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type != GROUP_KEY_TYPE:
        return no_coordinator(key, key_type)
    return {
        "key": key,
        "error_code": NONE,
        "error_message": None,
        "node_id": ctx.node_id,
        "host": ctx.host,
        "port": ctx.port,
    }


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if version >= 4:
        return {"coordinators": [_answer(ctx, key, key_type) for key in body.coordinator_keys]}
    return _answer(ctx, body.key, key_type)
