"""SaslHandshake (17) and SaslAuthenticate (36) when they reach the API table.

A listener with SASL answers them before authentication (:mod:`coordspec.broker.security`);
they get here on a listener without SASL, or after authentication except for a
re-authentication, where Kafka's KafkaApis answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from coordspec.broker.context import Client

ILLEGAL_SASL_STATE = 34


async def handshake(ctx: Any, client: Client, version: int, body: Any) -> dict[str, Any]:
    return {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}


async def authenticate(ctx: Any, client: Client, version: int, body: Any) -> dict[str, Any]:
    return {
        "error_code": ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
    }
