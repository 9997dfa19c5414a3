"""ApiVersions (18): the table of APIs and versions this broker serves."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext, Client

UNSUPPORTED_VERSION = 35


def version_table(apis: dict[int, Any]) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": api.versions.start, "max_version": api.versions.stop - 1} for key, api in sorted(apis.items())]


def unsupported(apis: dict[int, Any]) -> dict[str, Any]:
    """KIP-511: a version the broker does not know gets error 35 and the table, in v0's shape."""
    return {"error_code": UNSUPPORTED_VERSION, "api_keys": version_table(apis)}


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    from broker.apis.registry import APIS  # the table lists this handler too

    return {"error_code": 0, "api_keys": version_table(APIS), "supported_features": [], "finalized_features": [],
            "finalized_features_epoch": -1, "zk_migration_ready": False}
