"""The reference's group requests to kio entities, and kio responses back: one place per API.

Most fields have the same name in both vocabularies (the reference uses Kafka's field
names), so a request becomes a plain mapping that :func:`kio_entities.build` fits to the
version, and a response is read field by field. What differs is listed here: kio's
renamed durations (``session_timeout`` for ``session_timeout_ms``), OffsetCommit's
``generation_id_or_member_epoch``, LeaveGroup below v3 (one member id at the top level),
and OffsetFetch from v8 (a batch of groups: one is sent, one is read back).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import kio.index

from coordspec.conformance.suite.kio_entities import build, read
from coordspec.reference.group import requests as rq
from coordspec.reference.group.json_values import RESPONSES
from coordspec.reference.group.requests import API_KEYS
from coordspec.reference.group.responses import FetchTopicResponse, OffsetFetchResponse, Response


def _fields(request: rq.Request) -> dict[str, Any]:
    skip = {
        "request_id",
        "api_version",
        "now_ms",
        "client_id",
        "client_host",
    }  # envelope and header values
    return {
        f.name: _plain(getattr(request, f.name))
        for f in dataclasses.fields(request)
        if f.name not in skip
    }


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _join_group(request: rq.JoinGroup) -> dict[str, Any]:
    values = _fields(request)
    values["session_timeout"] = values.pop("session_timeout_ms")
    values["rebalance_timeout"] = values.pop("rebalance_timeout_ms")
    return values


def _leave_group(request: rq.LeaveGroup) -> dict[str, Any]:
    values = _fields(request)
    if request.api_version < 3:  # one member, named at the top level
        values["member_id"] = request.members[0].member_id
    return values


def _offset_commit(request: rq.OffsetCommit) -> dict[str, Any]:
    values = _fields(request)
    values["generation_id_or_member_epoch"] = values.pop("generation_id")
    values["retention_time"] = values.pop("retention_time_ms")
    return values


def _offset_fetch(request: rq.OffsetFetch) -> dict[str, Any]:
    values = _fields(request)
    if request.api_version >= 8:  # a batch of groups; a classic client sends no member id or epoch
        group = {
            "group_id": values.pop("group_id"),
            "topics": values.pop("topics"),
            "member_id": None,
            "member_epoch": -1,
        }
        values["groups"] = (group,)
    return values


_REQUEST_VALUES = {
    "JoinGroup": _join_group,
    "LeaveGroup": _leave_group,
    "OffsetCommit": _offset_commit,
    "OffsetFetch": _offset_fetch,
}


def request_entity(request: rq.Request) -> Any:
    """The kio request entity for ``request`` at its ``api_version``."""
    cls = kio.index.load_request_schema(API_KEYS[request.api], request.api_version)
    return build(cls, _REQUEST_VALUES.get(request.api, _fields)(request))


def response_class(api: str, version: int) -> type:
    return kio.index.load_response_schema(API_KEYS[api], version)


def response_from(api: str, version: int, entity: Any) -> Response:
    """The reference response for a decoded kio response entity; raises
    :class:`kio_entities.UnknownErrorCode` for an error code the reference does not know."""
    if api == "OffsetFetch" and version >= 8:
        if len(entity.groups) != 1:
            raise ValueError(
                f"OffsetFetch v{version}: asked for one group, got {len(entity.groups)}"
            )
        group = entity.groups[0]
        return OffsetFetchResponse(
            read(OffsetFetchResponse, group).error_code,
            tuple(read(FetchTopicResponse, t) for t in group.topics),
        )
    return read(RESPONSES[api], entity)
