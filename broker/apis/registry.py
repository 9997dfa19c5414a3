"""The APIs this broker serves: key, versions and handler. ApiVersions advertises exactly this.

Group API versions are the ones the reference models. The others are the ones the
handlers implement: Produce from v3 (record batches v2; librdkafka fetches only when
Produce v3+ is advertised) to v9, Fetch v4-v12 (no topic ids, so Metadata stops at v12),
ListOffsets v1-v6 (v7 adds the max-timestamp query), CreateTopics v2-v7, DeleteTopics
v1-v6 and CreatePartitions v0-v3 (kio's ranges), InitProducerId v0-v4 for idempotent
producers (v5 only changes transactional errors). No transaction API is served
(AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers, TxnOffsetCommit,
DescribeTransactions, ListTransactions): there is no transaction coordinator, and
FindCoordinator refuses a transactional id.

The cluster serves the same APIs at the same versions: its table is this one with its
own handlers for the APIs that are not the group coordinator's (:func:`with_handlers`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from coordspec.broker.apis import (
    api_versions,
    create_partitions,
    create_topics,
    delete_topics,
    fetch,
    find_coordinator,
    groups,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
    sasl,
)
from coordspec.broker.wire.protocol import API_VERSIONS_KEY
from coordspec.reference.group.requests import API_KEYS, VERSIONS

Handler = Callable[..., Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True, slots=True)
class Api:
    name: str
    versions: range
    handler: Handler


def _group_api(name: str, handler: Handler) -> tuple[int, Api]:
    return API_KEYS[name], Api(name, VERSIONS[name], handler)


GROUP_APIS: dict[int, Api] = dict(
    [
        _group_api("OffsetCommit", groups.offset_commit),
        _group_api("OffsetFetch", groups.offset_fetch),
        _group_api("JoinGroup", groups.join_group),
        _group_api("Heartbeat", groups.heartbeat),
        _group_api("LeaveGroup", groups.leave_group),
        _group_api("SyncGroup", groups.sync_group),
        _group_api("DescribeGroups", groups.describe_groups),
        _group_api("ListGroups", groups.list_groups),
        _group_api("DeleteGroups", groups.delete_groups),
        _group_api("OffsetDelete", groups.offset_delete),
        _group_api("ConsumerGroupHeartbeat", groups.consumer_group_heartbeat),
        _group_api("ConsumerGroupDescribe", groups.consumer_group_describe),
    ]
)


def _with_api_versions(apis: dict[int, Api]) -> dict[int, Api]:
    """``apis`` and ApiVersions, which advertises them all, itself included, by key."""
    table: dict[int, Api] = {}
    advertise = Api("ApiVersions", range(5), functools.partial(api_versions.handle, table))
    table.update(sorted({**apis, API_VERSIONS_KEY: advertise}.items()))
    return table


def with_handlers(apis: dict[int, Api], handlers: dict[int, Handler]) -> dict[int, Api]:
    """The table ``apis`` with other handlers for the keys of ``handlers``, names and versions kept."""
    return _with_api_versions(
        {
            key: dataclasses.replace(api, handler=handlers.get(key, api.handler))
            for key, api in apis.items()
            if key != API_VERSIONS_KEY
        }
    )


APIS: dict[int, Api] = _with_api_versions(
    {
        0: Api("Produce", range(3, 10), produce.handle),
        1: Api("Fetch", range(4, 13), fetch.handle),
        2: Api("ListOffsets", range(1, 7), list_offsets.handle),
        3: Api("Metadata", range(13), metadata.handle),
        10: Api("FindCoordinator", range(7), find_coordinator.handle),
        19: Api("CreateTopics", range(2, 8), create_topics.handle),
        20: Api("DeleteTopics", range(1, 7), delete_topics.handle),
        22: Api("InitProducerId", range(5), init_producer_id.handle),
        37: Api("CreatePartitions", range(4), create_partitions.handle),
        17: Api("SaslHandshake", range(1, 2), sasl.handshake),
        36: Api("SaslAuthenticate", range(3), sasl.authenticate),
        **GROUP_APIS,
    }
)
