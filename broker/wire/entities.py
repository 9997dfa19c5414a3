"""Building kio entities from plain values, so one handler answers every version of an API.

kio has one frozen dataclass per API, version and direction, and the set of required
fields changes per version. ``build(cls, values)`` keeps the keys ``cls`` has, drops the
rest, zero-fills required fields that were not given, builds nested entities from
mappings, and turns plain ints into the ``timedelta`` and ``ErrorCode`` values kio wants.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta, i64Timedelta

_ZERO_BY_KAFKA_TYPE: dict[str, Any] = {
    "string": "",
    "bytes": b"",
    "records": b"",
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.none,
    "float64": 0.0,
}


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def entity_of(annotation: Any) -> type | None:
    """The entity type inside ``tuple[X, ...]``, ``X | None`` or ``tuple[X, ...] | None``, if any."""
    for arg in typing.get_args(annotation):
        if dataclasses.is_dataclass(arg):
            return arg
        if typing.get_origin(arg) is tuple:
            return entity_of(arg)
    return None


def nullable(annotation: Any) -> bool:
    return isinstance(annotation, types.UnionType) and type(None) in typing.get_args(annotation)


def is_array(annotation: Any) -> bool:
    if nullable(annotation):
        return any(typing.get_origin(arg) is tuple for arg in typing.get_args(annotation))
    return typing.get_origin(annotation) is tuple


def _converter(field: dataclasses.Field, annotation: Any) -> Callable[[Any], Any]:
    """The function that turns a plain value of ``field`` into what kio wants (None stays None)."""
    kafka_type = field.metadata.get("kafka_type")
    if kafka_type == "timedelta_i32":
        return lambda value: (
            None
            if value is None
            else i32Timedelta.parse(datetime.timedelta(milliseconds=int(value)))
        )
    if kafka_type == "timedelta_i64":
        return lambda value: (
            None
            if value is None
            else i64Timedelta.parse(datetime.timedelta(milliseconds=int(value)))
        )
    if kafka_type == "error_code":
        return lambda value: None if value is None else ErrorCode(int(value))
    entity = entity_of(annotation)
    if entity is not None:
        if is_array(annotation):
            return lambda value: (
                None
                if value is None
                else tuple(build(entity, v) if isinstance(v, Mapping) else v for v in value)
            )
        return lambda value: build(entity, value) if isinstance(value, Mapping) else value
    if is_array(annotation):
        return lambda value: None if value is None else tuple(value)
    return lambda value: value


def _zero(field: dataclasses.Field, annotation: Any) -> Any:
    if nullable(annotation):
        return None
    if is_array(annotation):
        return ()
    kafka_type = field.metadata.get("kafka_type", "")
    if kafka_type in _ZERO_BY_KAFKA_TYPE:
        return _ZERO_BY_KAFKA_TYPE[kafka_type]
    if kafka_type.startswith("timedelta"):
        return 0
    return 0  # the int types


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Callable[[Any], Any], bool, Any], ...]:
    """Per field of ``cls``, worked out once: name, converter, whether required, and its zero."""
    annotations = type_hints(cls)
    fields = []
    for field in dataclasses.fields(cls):
        annotation = annotations[field.name]
        convert = _converter(field, annotation)
        required = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        fields.append(
            (field.name, convert, required, convert(_zero(field, annotation)) if required else None)
        )
    return tuple(fields)


def build(cls: type, values: Mapping[str, Any]) -> Any:
    """An instance of the kio entity ``cls`` from ``values`` (see the module docstring)."""
    kwargs = {}
    for name, convert, required, zero in _fields(cls):
        if name in values:
            kwargs[name] = convert(values[name])
        elif required:
            kwargs[name] = zero
    return cls(**kwargs)


def ms(value: datetime.timedelta | int | None) -> int:
    """A kio duration as whole milliseconds (kio renames ``*_ms`` fields to timedeltas)."""
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return round(value / datetime.timedelta(milliseconds=1))
    return int(value)
