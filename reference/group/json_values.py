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
from collections.abc import Callable
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
    request: request_types.Request = _decoder(getattr(request_types, api))(
        fields, request_id, api_version, now_ms
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
    "OffsetDelete": response_types.OffsetDeleteResponse,
    "TxnOffsetCommit": response_types.TxnOffsetCommitResponse,
    "ConsumerGroupHeartbeat": response_types.ConsumerGroupHeartbeatResponse,
    "ConsumerGroupDescribe": response_types.ConsumerGroupDescribeResponse,
}


def decode_response(api: str, fields: dict[str, Any]) -> response_types.Response:
    response: response_types.Response = _decoder(RESPONSES[api])(fields)
    return response


def decode(tp: Any, data: Any) -> Any:
    """``data`` read as a ``tp``. What does not fit is a TypeError or ValueError saying what,
    or a KeyError naming a field the dataclass does not have."""
    return _decoder(tp)(data)


Decoder = Callable[..., Any]  # a dataclass's also takes leading positional arguments
_DECODERS: dict[Any, Decoder] = {}


def _decoder(tp: Any) -> Decoder:
    """How to read a ``tp``, worked out from its type hints once: a trace decodes every line,
    so nothing is looked up per value."""
    key = tp if isinstance(tp, type) else (tp, repr(tp))  # int | str == str | int: not its order
    try:
        return _DECODERS[key]
    except KeyError:
        return _DECODERS.setdefault(key, _make(tp))


def _make(tp: Any) -> Decoder:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(tp)
    if origin is tuple:
        return _tuple(_decoder(typing.get_args(tp)[0]))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _object(tp)
    if tp is bytes:
        return _base64
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return _enum(tp)
    return _SCALARS.get(tp, _as_it_is)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _object(cls: type) -> Decoder:
    """A dataclass from a JSON object, ``leading`` its first positional arguments. A name
    without a type hint is a KeyError. Plain values already of their type need no call."""
    hints = _hints(cls)
    unchanged = {name: _unchanged(hint) for name, hint in hints.items()}
    decoders = {name: _decoder(hint) for name, hint in hints.items()}

    def decode_object(data: Any, *leading: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {cls.__name__}, got {data!r}")
        changed = None
        for name, value in data.items():
            if type(value) not in unchanged[name]:
                if changed is None:
                    changed = data.copy()
                changed[name] = decoders[name](value)
        return cls(*leading, **(data if changed is None else changed))

    return decode_object


def _unchanged(hint: Any) -> frozenset[type]:
    """The JSON types a hint's decoder returns as they are (int, str, bool, and None if it is
    optional), or none when its decoder may change a value."""
    if hint in _SCALARS:
        return frozenset({hint})
    options = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and all(
        option in _SCALARS or option is type(None) for option in options
    ):
        return frozenset(options)
    return frozenset()


def _union(tp: Any) -> Decoder:
    options = typing.get_args(tp)
    nullable = type(None) in options
    tried = tuple(_decoder(option) for option in options if option is not type(None))

    def decode_union(data: Any) -> Any:
        if data is None and nullable:
            return None
        for option in tried:  # in their order: the first that reads the value wins
            try:
                return option(data)
            except (TypeError, ValueError):
                continue
        raise ValueError(f"{data!r} is none of {tp}")

    return decode_union


def _tuple(item: Decoder) -> Decoder:
    def decode_tuple(data: Any) -> Any:
        if not isinstance(data, list):
            raise TypeError(f"expected a list, got {data!r}")
        return tuple(map(item, data))

    return decode_tuple


def _enum(cls: type[enum.IntEnum]) -> Decoder:
    members = {member.value: member for member in cls.__members__.values()}

    def decode_enum(data: Any) -> Any:
        member = members.get(data) if type(data) is int else None
        return member if member is not None else cls(data)  # False, 0.0 read as 0; or why not

    return decode_enum


def _base64(data: Any) -> bytes:
    if not isinstance(data, str):
        raise TypeError(f"expected base64 text, got {data!r}")
    return base64.b64decode(data, validate=True)


def _int(data: Any) -> Any:
    if type(data) is not int and (not isinstance(data, int) or isinstance(data, bool)):
        raise TypeError(f"expected int, got {data!r}")
    return data


def _str(data: Any) -> Any:
    if not isinstance(data, str):
        raise TypeError(f"expected str, got {data!r}")
    return data


def _bool(data: Any) -> Any:
    if not isinstance(data, bool):
        raise TypeError(f"expected bool, got {data!r}")
    return data


def _as_it_is(data: Any) -> Any:
    return data


_SCALARS: dict[Any, Decoder] = {int: _int, str: _str, bool: _bool}
