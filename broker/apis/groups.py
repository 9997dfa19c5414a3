"""The group APIs: Kafka's request fields to the reference's requests, and its responses back.

One function per API turns a decoded kio request into the reference request (or
requests, one per group, where a request names several: OffsetFetch v8+, DescribeGroups,
DeleteGroups); the reference's responses already
carry Kafka's field names at the request's version, so they go back through the
version-tolerant builder as they are. The only work done outside the reference is what
Kafka does in KafkaApis before the coordinator: OffsetCommit of a partition that does
not exist is answered UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.wire.entities import ms
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import (
    Assignment,
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    FetchTopic,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    MemberIdentity,
    OffsetCommit,
    OffsetFetch,
    Protocol,
    SyncGroup,
)
from coordspec.reference.group.responses import CommitPartitionResponse, CommitTopicResponse


def _plain(response: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` for the reference's responses, with each type's field names looked up once."""
    return {name: _plain_value(getattr(response, name)) for name in _field_names(type(response))}


def _plain_value(value: Any) -> Any:
    if value is None or isinstance(
        value, (int, str, bytes)
    ):  # first: is_dataclass on an enum is slow
        return value
    if isinstance(value, (tuple, list)):
        return [_plain_value(v) for v in value]
    if dataclasses.is_dataclass(value):
        return _plain(value)
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


async def join_group(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: JoinGroup(
            rid,
            version,
            now,
            group_id=body.group_id,
            session_timeout_ms=ms(body.session_timeout),
            rebalance_timeout_ms=ms(getattr(body, "rebalance_timeout", None)),
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=body.protocol_type,
            protocols=tuple(Protocol(p.name, p.metadata) for p in body.protocols),
            reason=getattr(body, "reason", None),
            client_id=client.client_id,
            client_host=client.host,
        ),
    )
    return _plain(response)


async def sync_group(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: SyncGroup(
            rid,
            version,
            now,
            group_id=body.group_id,
            generation_id=body.generation_id,
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=getattr(body, "protocol_type", None),
            protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple(Assignment(a.member_id, a.assignment) for a in body.assignments),
        ),
    )
    return _plain(response)


async def heartbeat(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: Heartbeat(
            rid,
            version,
            now,
            group_id=body.group_id,
            generation_id=body.generation_id,
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
        ),
    )
    return _plain(response)


async def leave_group(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    if version >= 3:
        members = tuple(
            MemberIdentity(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in body.members
        )
    else:
        members = (MemberIdentity(body.member_id),)
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: LeaveGroup(rid, version, now, group_id=body.group_id, members=members),
    )
    return _plain(response)


async def offset_commit(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    known, unknown = [], []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            count = ctx.topics.partition_count(topic.name)
            if count is None or not 0 <= p.partition_index < count:
                unknown.append(
                    CommitTopicResponse(
                        topic.name,
                        (
                            CommitPartitionResponse(
                                p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                            ),
                        ),
                    )
                )
                continue
            partitions.append(
                CommitPartition(
                    p.partition_index,
                    p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1),
                    p.committed_metadata,
                )
            )
        if partitions:
            known.append(CommitTopic(topic.name, tuple(partitions)))
    if not known and unknown:  # as KafkaApis: nothing left for the coordinator to do
        return {"topics": [dataclasses.asdict(t) for t in unknown]}
    retention = getattr(body, "retention_time", None)
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: OffsetCommit(
            rid,
            version,
            now,
            group_id=body.group_id,
            generation_id=body.generation_id_or_member_epoch,
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            retention_time_ms=-1 if retention is None else ms(retention),
            topics=tuple(known),
        ),
    )
    return {"topics": [*_plain(response)["topics"], *(dataclasses.asdict(t) for t in unknown)]}


def _fetch_topics(topics: Any) -> tuple[FetchTopic, ...] | None:
    if topics is None:
        return None
    return tuple(FetchTopic(t.name, tuple(t.partition_indexes)) for t in topics)


async def offset_fetch(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    require_stable = getattr(body, "require_stable", False)
    if version < 8:
        response = await ctx.groups.call(
            client.name,
            lambda rid, now: OffsetFetch(
                rid,
                version,
                now,
                group_id=body.group_id,
                topics=_fetch_topics(body.topics),
                require_stable=require_stable,
            ),
        )
        return _plain(response)
    groups = []
    for group in body.groups:
        response = await ctx.groups.call(
            client.name,
            lambda rid, now, group=group: OffsetFetch(
                rid,
                version,
                now,
                group_id=group.group_id,
                topics=_fetch_topics(group.topics),
                require_stable=require_stable,
            ),
        )
        groups.append({"group_id": group.group_id, **_plain(response)})
    return {"groups": groups}


async def describe_groups(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    # One reference request per group: each group's answer depends on that group alone, and
    # the trace, keyed by group, then replays each on its own.
    described = []
    for group in body.groups:
        response = await ctx.groups.call(
            client.name,
            lambda rid, now, group=group: DescribeGroups(rid, version, now, groups=(group,)),
        )
        described.extend(_plain(response)["groups"])
    return {"groups": described}


async def list_groups(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    types_filter = {t.lower() for t in getattr(body, "types_filter", ())}
    response = await ctx.groups.call(
        client.name,
        lambda rid, now: ListGroups(
            rid, version, now, states_filter=tuple(getattr(body, "states_filter", ()))
        ),
    )
    plain = _plain(response)
    # Every group here is a classic group (v5 reports the type, and filters by it).
    for group in plain["groups"]:
        group["group_type"] = "classic"
    if types_filter and "classic" not in types_filter:
        plain["groups"] = []
    return plain


async def delete_groups(
    ctx: BrokerContext, client: Client, version: int, body: Any
) -> dict[str, Any]:
    results = []
    for group in body.groups_names:  # one per group, as DescribeGroups
        response = await ctx.groups.call(
            client.name,
            lambda rid, now, group=group: DeleteGroups(rid, version, now, groups_names=(group,)),
        )
        results.extend(_plain(response)["results"])
    return {"results": results}
