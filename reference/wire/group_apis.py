"""The group APIs in Kafka's wire vocabulary: one table entry per API, both directions.

As h11 keeps its readers and writers beside its events, each group API here has four
functions: a kio request entity to the reference's request, the reference's request to
the values of a kio request, the reference's response to the values of a kio response, and
a kio response entity to the reference's response. Values are mappings that
:func:`entities.build` fits to the schema of one version. Most fields have the same name
on both sides (the reference uses Kafka's field names); what differs is written here once:
kio's durations (``session_timeout`` for ``session_timeout_ms``), OffsetCommit's
``generation_id_or_member_epoch``, LeaveGroup below v3 (one member id at the top level),
OffsetFetch from v8 (a batch of groups: the reference keeps the first at the top of its
request and response, the others in ``other_groups``), ListGroups v5's group type, and the
consumer group's topic ids: the reference names a topic where Kafka sends its id, so those
two APIs take a :class:`TopicIds` table of the broker's ids.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import kio.index

from coordspec.reference.group import requests as rq
from coordspec.reference.group.json_values import REQUEST_ENVELOPE, RESPONSES
from coordspec.reference.group.records import TopicPartitions
from coordspec.reference.group.requests import API_KEYS
from coordspec.reference.group.responses import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
    FetchGroupResponse,
    FetchTopicResponse,
    OffsetFetchResponse,
    Response,
)
from coordspec.reference.wire.entities import build, error_code, ms, read

# The envelope, and the header values JoinGroup keeps: none of them is in a kio request body.
_NOT_IN_BODY = REQUEST_ENVELOPE | {"client_id", "client_host"}


class Envelope(NamedTuple):
    """What a reference request holds besides the kio body: the driver's request id, the
    version, the time, and the request header's client id and the connection's host (a
    tuple, not a dataclass: the broker makes one per request, and a tuple is made faster)."""

    request_id: int | str
    api_version: int
    now_ms: int
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class GroupApi:
    """One group API's wire vocabulary (see the module docstring)."""

    read_request: Callable[..., rq.Request]  # (kio body, envelope[, topic ids])
    write_request: Callable[..., dict[str, Any]]
    write_response: Callable[..., dict[str, Any]]  # (response, version, kio request[, ids])
    read_response: Callable[..., Response]
    by_topic_id: bool = False  # each direction takes a TopicIds last


class TopicIds:
    """A broker's topic ids by name, both ways. A name it lacks cannot be sent; an id it lacks
    is read as its text, so that the oracle shows the unknown topic."""

    def __init__(self, ids: Mapping[str, uuid.UUID]) -> None:
        self._ids = dict(ids)
        self._names = {topic_id: name for name, topic_id in self._ids.items()}

    def id_of(self, name: str) -> uuid.UUID:
        try:
            return self._ids[name]
        except KeyError:
            raise ValueError(f"topic {name!r}, which has no id on the broker") from None

    def name_of(self, topic_id: uuid.UUID | None) -> str:
        return self._names.get(topic_id, str(topic_id)) if topic_id is not None else ""


NO_TOPIC_IDS = TopicIds({})


# -- plain values of the reference's dataclasses ------------------------------------------


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _values(value: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` for the reference's values, with each type's fields looked up once
    (the broker answers every Heartbeat through here)."""
    cls: type = type(value)
    return {name: _plain(getattr(value, name)) for name in _field_names(cls)}


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (int, str, bytes)):  # first: is_dataclass is slower
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value):
        return _values(value)
    return value


def _request_values(request: rq.Request) -> dict[str, Any]:
    return {k: v for k, v in _values(request).items() if k not in _NOT_IN_BODY}


def _response_values(response: Any, version: int, asked: Any) -> dict[str, Any]:
    return _values(response)


def _read_response(api: str) -> Callable[[Any, int], Response]:
    cls = RESPONSES[api]
    return lambda entity, version: read(cls, entity)


# -- JoinGroup -----------------------------------------------------------------------------


def _read_join_group(body: Any, e: Envelope) -> rq.JoinGroup:
    return rq.JoinGroup(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=body.group_id,
        session_timeout_ms=ms(body.session_timeout),
        rebalance_timeout_ms=ms(getattr(body, "rebalance_timeout", None)),  # v1+
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        protocol_type=body.protocol_type,
        protocols=tuple(rq.Protocol(p.name, p.metadata) for p in body.protocols),
        reason=getattr(body, "reason", None),
        client_id=e.client_id,
        client_host=e.client_host,
    )


def _write_join_group(request: rq.JoinGroup) -> dict[str, Any]:
    values = _request_values(request)
    values["session_timeout"] = values.pop("session_timeout_ms")
    values["rebalance_timeout"] = values.pop("rebalance_timeout_ms")
    return values


# -- SyncGroup, Heartbeat --------------------------------------------------------------------


def _read_sync_group(body: Any, e: Envelope) -> rq.SyncGroup:
    return rq.SyncGroup(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        protocol_type=getattr(body, "protocol_type", None),
        protocol_name=getattr(body, "protocol_name", None),
        assignments=tuple(rq.Assignment(a.member_id, a.assignment) for a in body.assignments),
    )


def _read_heartbeat(body: Any, e: Envelope) -> rq.Heartbeat:
    return rq.Heartbeat(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
    )


# -- LeaveGroup ----------------------------------------------------------------------------


def _read_leave_group(body: Any, e: Envelope) -> rq.LeaveGroup:
    if e.api_version >= 3:
        members = tuple(
            rq.MemberIdentity(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in body.members
        )
    else:  # one member, named at the top level
        members = (rq.MemberIdentity(body.member_id),)
    return rq.LeaveGroup(
        e.request_id, e.api_version, e.now_ms, group_id=body.group_id, members=members
    )


def _write_leave_group(request: rq.LeaveGroup) -> dict[str, Any]:
    values = _request_values(request)
    if request.api_version < 3:
        values["member_id"] = request.members[0].member_id
    return values


# -- OffsetCommit --------------------------------------------------------------------------


def _read_offset_commit(body: Any, e: Envelope) -> rq.OffsetCommit:
    retention = getattr(body, "retention_time", None)  # v2-v4
    return rq.OffsetCommit(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=body.group_id,
        generation_id=body.generation_id_or_member_epoch,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        retention_time_ms=-1 if retention is None else ms(retention),
        topics=tuple(
            rq.CommitTopic(
                t.name,
                tuple(
                    rq.CommitPartition(
                        p.partition_index,
                        p.committed_offset,
                        getattr(p, "committed_leader_epoch", -1),
                        p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in body.topics
        ),
    )


def _write_offset_commit(request: rq.OffsetCommit) -> dict[str, Any]:
    values = _request_values(request)
    values["generation_id_or_member_epoch"] = values.pop("generation_id")
    values["retention_time"] = values.pop("retention_time_ms")
    return values


# -- OffsetFetch: from v8 a batch of groups ------------------------------------------------


def _fetch_topics(topics: Any) -> tuple[rq.FetchTopic, ...] | None:
    if topics is None:  # v2+: every committed partition
        return None
    return tuple(rq.FetchTopic(t.name, tuple(t.partition_indexes)) for t in topics)


def _read_offset_fetch(body: Any, e: Envelope) -> rq.OffsetFetch:
    first, *others = body.groups if e.api_version >= 8 else (body,)
    return rq.OffsetFetch(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=first.group_id,
        topics=_fetch_topics(first.topics),
        require_stable=getattr(body, "require_stable", False),
        member_id=getattr(first, "member_id", None),  # v9+
        member_epoch=getattr(first, "member_epoch", -1),
        other_groups=tuple(
            rq.FetchGroup(
                g.group_id,
                _fetch_topics(g.topics),
                getattr(g, "member_id", None),
                getattr(g, "member_epoch", -1),
            )
            for g in others
        ),
    )


def _write_offset_fetch(request: rq.OffsetFetch) -> dict[str, Any]:
    values = _request_values(request)
    others = values.pop("other_groups")
    if request.api_version < 8:
        return values
    first = {name: values.pop(name) for name in ("group_id", "topics", "member_id", "member_epoch")}
    values["groups"] = [first, *others]
    return values


def _write_offset_fetch_response(
    response: OffsetFetchResponse, version: int, asked: Any
) -> dict[str, Any]:
    values = _values(response)
    others = values.pop("other_groups")
    if version < 8:
        return values
    return {"groups": [{"group_id": asked.groups[0].group_id, **values}, *others]}


def _read_offset_fetch_response(entity: Any, version: int) -> OffsetFetchResponse:
    if version < 8:
        return read(OffsetFetchResponse, entity)  # type: ignore[no-any-return]
    if not entity.groups:
        raise ValueError(f"OffsetFetch v{version}: no group in the answer")
    first, *others = (
        FetchGroupResponse(
            g.group_id,
            read(OffsetFetchResponse, g).error_code,
            tuple(read(FetchTopicResponse, t) for t in g.topics),
        )
        for g in entity.groups
    )
    return OffsetFetchResponse(first.error_code, first.topics, tuple(others))


# -- DescribeGroups, ListGroups, DeleteGroups ----------------------------------------------


def _read_describe_groups(body: Any, e: Envelope) -> rq.DescribeGroups:
    return rq.DescribeGroups(e.request_id, e.api_version, e.now_ms, groups=tuple(body.groups))


def _read_list_groups(body: Any, e: Envelope) -> rq.ListGroups:
    states = tuple(getattr(body, "states_filter", ()))  # v4+
    types = tuple(getattr(body, "types_filter", ()))  # v5+
    return rq.ListGroups(
        e.request_id, e.api_version, e.now_ms, states_filter=states, types_filter=types
    )


def _read_delete_groups(body: Any, e: Envelope) -> rq.DeleteGroups:
    names = tuple(body.groups_names)
    return rq.DeleteGroups(e.request_id, e.api_version, e.now_ms, groups_names=names)


# -- OffsetDelete --------------------------------------------------------------------------


def _read_offset_delete(body: Any, e: Envelope) -> rq.OffsetDelete:
    return rq.OffsetDelete(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=body.group_id,
        topics=tuple(
            rq.OffsetDeleteTopic(
                t.name, tuple(rq.OffsetDeletePartition(p.partition_index) for p in t.partitions)
            )
            for t in body.topics
        ),
    )


# -- ConsumerGroupHeartbeat, ConsumerGroupDescribe: topics by id ------------------------------


def _partitions_by_id(topics: Any, ids: TopicIds) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(ids.name_of(t.topic_id), tuple(t.partitions)) for t in topics)


def _ids_of(topics: tuple[TopicPartitions, ...], ids: TopicIds) -> list[dict[str, Any]]:
    return [{"topic_id": ids.id_of(t.topic_id), "partitions": t.partitions} for t in topics]


def _read_consumer_group_heartbeat(
    body: Any, e: Envelope, ids: TopicIds
) -> rq.ConsumerGroupHeartbeat:
    names = body.subscribed_topic_names
    owned = body.topic_partitions
    return rq.ConsumerGroupHeartbeat(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=ms(body.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),  # v1+
        server_assignor=body.server_assignor,
        topic_partitions=None if owned is None else _partitions_by_id(owned, ids),
        client_id=e.client_id,
        client_host=e.client_host,
    )


def _write_consumer_group_heartbeat(
    request: rq.ConsumerGroupHeartbeat, ids: TopicIds
) -> dict[str, Any]:
    values = _request_values(request)
    values["rebalance_timeout"] = values.pop("rebalance_timeout_ms")
    if request.topic_partitions is not None:
        values["topic_partitions"] = _ids_of(request.topic_partitions, ids)
    return values


def _write_consumer_group_heartbeat_response(
    response: ConsumerGroupHeartbeatResponse, version: int, asked: Any, ids: TopicIds
) -> dict[str, Any]:
    values = _values(response)
    values["heartbeat_interval"] = values.pop("heartbeat_interval_ms")
    if response.assignment is not None:
        values["assignment"] = {"topic_partitions": _ids_of(response.assignment, ids)}
    return values


def _read_consumer_group_heartbeat_response(
    entity: Any, version: int, ids: TopicIds
) -> ConsumerGroupHeartbeatResponse:
    assignment = entity.assignment
    return ConsumerGroupHeartbeatResponse(
        error_code(entity.error_code),
        entity.member_id,
        entity.member_epoch,
        ms(entity.heartbeat_interval),
        None if assignment is None else _partitions_by_id(assignment.topic_partitions, ids),
    )


def _read_consumer_group_describe(
    body: Any, e: Envelope, ids: TopicIds
) -> rq.ConsumerGroupDescribe:
    return rq.ConsumerGroupDescribe(
        e.request_id,
        e.api_version,
        e.now_ms,
        group_ids=tuple(body.group_ids),
        include_authorized_operations=body.include_authorized_operations,
    )


def _write_consumer_group_describe(
    request: rq.ConsumerGroupDescribe, ids: TopicIds
) -> dict[str, Any]:
    return _request_values(request)


def _described_ids(topics: tuple[DescribedTopicPartitions, ...], ids: TopicIds) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {
                "topic_id": ids.id_of(t.topic_id),
                "topic_name": t.topic_name,
                "partitions": t.partitions,
            }
            for t in topics
        ]
    }


def _write_consumer_group_describe_response(
    response: ConsumerGroupDescribeResponse, version: int, asked: Any, ids: TopicIds
) -> dict[str, Any]:
    groups = []
    for group in response.groups:
        values = _values(group)
        # The blank id's answer has no id (Kafka sets null), where the schema's string is not
        # nullable: the wire carries "" (read back as no id).
        values["group_id"] = group.group_id or ""
        values["members"] = [
            {
                **_values(m),
                "assignment": _described_ids(m.assignment, ids),
                "target_assignment": _described_ids(m.target_assignment, ids),
            }
            for m in group.members
        ]
        groups.append(values)
    return {"groups": groups}


def _described_by_id(assignment: Any, ids: TopicIds) -> tuple[DescribedTopicPartitions, ...]:
    return tuple(
        DescribedTopicPartitions(ids.name_of(t.topic_id), t.topic_name, tuple(t.partitions))
        for t in assignment.topic_partitions
    )


def _read_described_member(m: Any, ids: TopicIds) -> DescribedConsumerMember:
    return DescribedConsumerMember(
        m.member_id,
        m.instance_id,
        m.rack_id,
        m.member_epoch,
        m.client_id,
        m.client_host,
        tuple(m.subscribed_topic_names),
        m.subscribed_topic_regex,
        _described_by_id(m.assignment, ids),
        _described_by_id(m.target_assignment, ids),
    )


def _read_consumer_group_describe_response(
    entity: Any, version: int, ids: TopicIds
) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        tuple(
            DescribedConsumerGroup(
                error_code(g.error_code),
                g.group_id or None,
                g.group_state,
                g.group_epoch,
                g.assignment_epoch,
                g.assignor_name,
                tuple(_read_described_member(m, ids) for m in g.members),
                g.authorized_operations,
            )
            for g in entity.groups
        )
    )


GROUP_APIS: dict[str, GroupApi] = {
    "JoinGroup": GroupApi(
        _read_join_group, _write_join_group, _response_values, _read_response("JoinGroup")
    ),
    "SyncGroup": GroupApi(
        _read_sync_group, _request_values, _response_values, _read_response("SyncGroup")
    ),
    "Heartbeat": GroupApi(
        _read_heartbeat, _request_values, _response_values, _read_response("Heartbeat")
    ),
    "LeaveGroup": GroupApi(
        _read_leave_group, _write_leave_group, _response_values, _read_response("LeaveGroup")
    ),
    "OffsetCommit": GroupApi(
        _read_offset_commit,
        _write_offset_commit,
        _response_values,
        _read_response("OffsetCommit"),
    ),
    "OffsetFetch": GroupApi(
        _read_offset_fetch,
        _write_offset_fetch,
        _write_offset_fetch_response,
        _read_offset_fetch_response,
    ),
    "DescribeGroups": GroupApi(
        _read_describe_groups, _request_values, _response_values, _read_response("DescribeGroups")
    ),
    "ListGroups": GroupApi(
        _read_list_groups, _request_values, _response_values, _read_response("ListGroups")
    ),
    "DeleteGroups": GroupApi(
        _read_delete_groups, _request_values, _response_values, _read_response("DeleteGroups")
    ),
    "OffsetDelete": GroupApi(
        _read_offset_delete, _request_values, _response_values, _read_response("OffsetDelete")
    ),
    "ConsumerGroupHeartbeat": GroupApi(
        _read_consumer_group_heartbeat,
        _write_consumer_group_heartbeat,
        _write_consumer_group_heartbeat_response,
        _read_consumer_group_heartbeat_response,
        by_topic_id=True,
    ),
    "ConsumerGroupDescribe": GroupApi(
        _read_consumer_group_describe,
        _write_consumer_group_describe,
        _write_consumer_group_describe_response,
        _read_consumer_group_describe_response,
        by_topic_id=True,
    ),
}


# -- the four directions, by API name --------------------------------------------------------


def _ids(api: GroupApi, topic_ids: TopicIds) -> tuple[TopicIds, ...]:
    return (topic_ids,) if api.by_topic_id else ()


def request_from_kio(
    api: str, body: Any, envelope: Envelope, topic_ids: TopicIds = NO_TOPIC_IDS
) -> rq.Request:
    """The reference request for a decoded kio request body."""
    entry = GROUP_APIS[api]
    return entry.read_request(body, envelope, *_ids(entry, topic_ids))


def request_to_kio(request: rq.Request, topic_ids: TopicIds = NO_TOPIC_IDS) -> Any:
    """The kio request entity for ``request`` at its ``api_version``."""
    cls = kio.index.load_request_schema(API_KEYS[request.api], request.api_version)
    entry = GROUP_APIS[request.api]
    return build(cls, entry.write_request(request, *_ids(entry, topic_ids)))


def response_values(
    api: str, version: int, asked: Any, response: Response, topic_ids: TopicIds = NO_TOPIC_IDS
) -> dict[str, Any]:
    """The values of the kio response to the kio request ``asked`` (OffsetFetch v8+ echoes its
    group id), for :func:`entities.build` at ``version``."""
    entry = GROUP_APIS[api]
    return entry.write_response(response, version, asked, *_ids(entry, topic_ids))


def response_from_kio(
    api: str, version: int, entity: Any, topic_ids: TopicIds = NO_TOPIC_IDS
) -> Response:
    """The reference response for a decoded kio response entity; raises
    :class:`entities.UnknownErrorCode` for an error code the reference does not know."""
    entry = GROUP_APIS[api]
    return entry.read_response(entity, version, *_ids(entry, topic_ids))


# -- requests naming several groups ----------------------------------------------------------

# The request field naming the groups, and the response field answering one item each.
_PER_GROUP = {
    "DescribeGroups": ("groups", "groups"),
    "DeleteGroups": ("groups_names", "results"),
    "OffsetFetch": ("groups", "groups"),  # v8+
}


def _batched(api: str, version: int) -> tuple[str, str] | None:
    if api == "OffsetFetch" and version < 8:
        return None
    return _PER_GROUP.get(api)


def one_per_group(api: str, version: int, body: Any) -> tuple[Any, ...]:
    """``body`` as one kio request per group it names (DescribeGroups, DeleteGroups, OffsetFetch
    v8+), else as itself: each group's answer depends on that group alone."""
    batched = _batched(api, version)
    if batched is None:
        return (body,)
    field = batched[0]
    return tuple(dataclasses.replace(body, **{field: (group,)}) for group in getattr(body, field))


def merged(api: str, version: int, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The response values answering the parts :func:`one_per_group` made, as one."""
    batched = _batched(api, version)
    if batched is None:
        return answers[0]
    field = batched[1]
    return {field: [item for answer in answers for item in answer[field]]}
