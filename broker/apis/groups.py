"""The group APIs: Kafka's requests to the reference's, and its responses back.

The conversion both ways is the reference's wire vocabulary
(:mod:`coordspec.reference.wire.group_apis`). A request naming several groups
(OffsetFetch v8+, DescribeGroups, DeleteGroups) becomes one reference request per group,
whose answers are merged: each group's answer depends on that group alone, and the trace,
keyed by group, then replays each on its own. The only work done outside the reference is
what Kafka does in KafkaApis before the coordinator: OffsetCommit and OffsetDelete of a
partition that does not exist are answered UNKNOWN_TOPIC_OR_PARTITION
(:mod:`coordspec.reference.group.topics`, as the reference answers them when it knows the
topics). The consumer group's APIs (ConsumerGroupHeartbeat, ConsumerGroupDescribe) name
topics by id: the ids of the coordinator's image of the broker's topics.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.reference.group import topics
from coordspec.reference.group.responses import OffsetDeleteResponse, Response
from coordspec.reference.wire.group_apis import (
    Envelope,
    merged,
    one_per_group,
    request_from_kio,
    response_values,
)


async def _call(ctx: BrokerContext, client: Client, api: str, version: int, body: Any) -> Response:
    """The coordinator's answer to ``body``."""
    return await ctx.groups.call(
        client.name,
        lambda rid, now: request_from_kio(
            api, body, Envelope(rid, version, now, client.client_id, client.host)
        ),
    )


async def _ask_by_topic_id(
    ctx: BrokerContext, client: Client, api: str, version: int, body: Any
) -> dict[str, Any]:
    """As :func:`_ask`, for the consumer group's APIs, which name topics by id: the ids the
    coordinator's image gives them (coordspec.broker.group_image.Image)."""
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: request_from_kio(
            api,
            body,
            Envelope(rid, version, now, client.client_id, client.host),
            ctx.groups.image.wire_ids,
        ),
    )
    return response_values(api, version, body, response, ctx.groups.image.wire_ids)


async def _ask(
    ctx: BrokerContext, client: Client, api: str, version: int, body: Any
) -> dict[str, Any]:
    """The coordinator's answer to ``body``, as the values of the kio response."""
    return response_values(api, version, body, await _call(ctx, client, api, version, body))


async def _ask_each_group(
    ctx: BrokerContext, client: Client, api: str, version: int, body: Any
) -> dict[str, Any]:
    answers = [
        await _ask(ctx, client, api, version, part) for part in one_per_group(api, version, body)
    ]
    return merged(api, version, answers)


async def join_group(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    return await _ask(ctx, client, "JoinGroup", version, body)


async def sync_group(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    return await _ask(ctx, client, "SyncGroup", version, body)


async def heartbeat(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    return await _ask(ctx, client, "Heartbeat", version, body)


async def leave_group(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask(ctx, client, "LeaveGroup", version, body)


async def offset_commit(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    known, refused = topics.split_known(body.topics, ctx.topics.partition_count)
    if refused and not known:  # as KafkaApis: nothing left for the coordinator to do
        response: Response = topics.commit_refused(refused)
    else:
        response = await _call(
            ctx, client, "OffsetCommit", version, dataclasses.replace(body, topics=known)
        )
        response = topics.merged(refused, response) if refused else response
    return response_values("OffsetCommit", version, body, response)


async def offset_fetch(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask_each_group(ctx, client, "OffsetFetch", version, body)


async def describe_groups(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask_each_group(ctx, client, "DescribeGroups", version, body)


async def list_groups(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask(ctx, client, "ListGroups", version, body)


async def delete_groups(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask_each_group(ctx, client, "DeleteGroups", version, body)


async def offset_delete(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    known, refused = topics.split_known(body.topics, ctx.topics.partition_count)
    # As KafkaApis: the coordinator is asked even with nothing left, for the group's errors.
    response = await _call(
        ctx, client, "OffsetDelete", version, dataclasses.replace(body, topics=known)
    )
    if refused:
        assert isinstance(response, OffsetDeleteResponse)
        response = topics.merged(refused, response)
    return response_values("OffsetDelete", version, body, response)


async def consumer_group_heartbeat(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask_by_topic_id(ctx, client, "ConsumerGroupHeartbeat", version, body)


async def consumer_group_describe(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    return await _ask_by_topic_id(ctx, client, "ConsumerGroupDescribe", version, body)
