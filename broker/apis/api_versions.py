"""ApiVersions (18): the table of APIs and versions this broker serves.

Kafka's answers: a version above the range gets UNSUPPORTED_VERSION with only
ApiVersions' own range, in v0's shape (KIP-511); from v3, a client software name or
version outside Kafka's pattern gets INVALID_REQUEST.
"""

from __future__ import annotations

import re
from typing import Any

from coordspec.broker.context import Client
from coordspec.broker.wire.protocol import API_VERSIONS_KEY

UNSUPPORTED_VERSION, INVALID_REQUEST = 35, 42
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def version_table(apis: dict[int, Any]) -> list[dict[str, int]]:
    return [
        {"api_key": key, "min_version": api.versions.start, "max_version": api.versions.stop - 1}
        for key, api in sorted(apis.items())
    ]


def unsupported(apis: dict[int, Any]) -> dict[str, Any]:
    return {
        "error_code": UNSUPPORTED_VERSION,
        "api_keys": version_table({API_VERSIONS_KEY: apis[API_VERSIONS_KEY]}),
    }


async def handle(
    apis: dict[int, Any], ctx: Any, client: Client, version: int, body: Any
) -> dict[str, Any]:
    """``apis``: the broker's table (coordspec.broker.apis.registry), this handler among them."""
    if version >= 3 and not (
        _SOFTWARE.fullmatch(body.client_software_name)
        and _SOFTWARE.fullmatch(body.client_software_version)
    ):
        return {"error_code": INVALID_REQUEST, "api_keys": []}
    return {
        "error_code": 0,
        "api_keys": version_table(apis),
        "supported_features": [],
        "finalized_features": [],
        "finalized_features_epoch": -1,
        "zk_migration_ready": False,
    }
