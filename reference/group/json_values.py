"""Requests and responses of the reference as JSON values, and back.

Used by the trace (one JSON object per line) and by failure reports. Dataclasses become
objects with their field names, ``bytes`` become base64 strings, error codes their number,
tuples lists. Decoding reads the dataclass's type hints, so a trace replays into the
reference's own types.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import types
import typing
from typing import Any

from coordspec.reference.group import requests as request_types
from coordspec.reference.group import responses as response_types

REQUEST_ENVELOPE = frozenset(
    {"request_id", "api_version", "now_ms"}
)  # kept apart from a request's own fields


_AS_THEY_ARE = frozenset({str, int, bool, float, type(None)})  # exact types: an IntEnum is not one


@functools.cache
def fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """A dataclass's fields as (name, whether its declared type holds JSON values as they are)."""
    hints = _hints(cls)
    return tuple((f.name, _plain(hints[f.name])) for f in dataclasses.fields(cls))


def _plain(hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return all(option in _AS_THEY_ARE for option in typing.get_args(hint))
    return hint in _AS_THEY_ARE


def encode(value: Any) -> Any:
    """A reference value as JSON values (the recording proxy encodes every response: kept cheap)."""
    kind: type = type(value)
    if kind in _AS_THEY_ARE:
        return value
    if kind is bytes:
        return base64.b64encode(value).decode()
    if isinstance(value, enum.IntEnum):
        return int(value)
    if kind is tuple or kind is list:
        return [encode(v) for v in value]
    if dataclasses.is_dataclass(value):
        return {
            name: getattr(value, name) if plain else encode(getattr(value, name))
            for name, plain in fields(kind)
        }
    return value


def request_fields(request: request_types.Request) -> dict[str, Any]:
    """A request's own fields, without the envelope (id, version, time) the trace keeps apart."""
    return {k: v for k, v in encode(request).items() if k not in REQUEST_ENVELOPE}


def decode_request(
    api: str, api_version: int, request_id: int, now_ms: int, fields: dict[str, Any]
) -> request_types.Request:
    cls = getattr(request_types, api)
    request: request_types.Request = cls(
        request_id, api_version, now_ms, **{k: decode(_hints(cls)[k], v) for k, v in fields.items()}
    )
    return request


RESPONSES = {
    "JoinGroup": response_types.JoinGroupResponse,
    "SyncGroup": response_types.SyncGroupResponse,
    "Heartbeat": response_types.HeartbeatResponse,
    "LeaveGroup": response_types.LeaveGroupResponse,
    "OffsetCommit": response_types.OffsetCommitResponse,
    "OffsetFetch": response_types.OffsetFetchResponse,
    "DescribeGroups": response_types.DescribeGroupsResponse,
    "ListGroups": response_types.ListGroupsResponse,
    "DeleteGroups": response_types.DeleteGroupsResponse,
}


def decode_response(api: str, fields: dict[str, Any]) -> response_types.Response:
    response: response_types.Response = decode(RESPONSES[api], fields)
    return response


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(tp: Any, data: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if data is None and type(None) in options:
            return None
        for option in options:
            if option is not type(None):
                try:
                    return decode(option, data)
                except (TypeError, ValueError):
                    continue
        raise ValueError(f"{data!r} is none of {tp}")
    if origin is tuple:
        item = typing.get_args(tp)[0]
        if not isinstance(data, list):
            raise TypeError(f"expected a list, got {data!r}")
        return tuple(decode(item, v) for v in data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {tp.__name__}, got {data!r}")
        hints = _hints(tp)
        return tp(**{k: decode(hints[k], v) for k, v in data.items()})
    if tp is bytes:
        if not isinstance(data, str):
            raise TypeError(f"expected base64 text, got {data!r}")
        return base64.b64decode(data, validate=True)
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return tp(data)
    if tp in (int, str, bool) and not (
        isinstance(data, tp) and (tp is bool or not isinstance(data, bool))
    ):
        raise TypeError(f"expected {tp.__name__}, got {data!r}")
    return data
