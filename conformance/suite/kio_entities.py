"""kio entities from plain values, and reference dataclasses from kio entities.

kio has one frozen dataclass per API, version and direction, and the fields it requires
change from version to version. ``build`` makes an entity from a mapping (keys the version
lacks are dropped, required fields not given are zero-filled, nested mappings become
nested entities, ints become the ``timedelta`` / ``ErrorCode`` values kio wants);
``read`` makes a reference dataclass from an entity (a field the version lacks takes the
dataclass's default). Field renames between the two vocabularies are the caller's (see
:mod:`wire_codec`).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import types
import typing
import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.primitive import i32Timedelta, i64Timedelta

from coordspec.reference.errors import ErrorCode

_ZERO = {
    "string": "",
    "bytes": b"",
    "records": b"",
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "error_code": KioErrorCode.none,
    "float64": 0.0,
}


class UnknownErrorCode(ValueError):
    """A broker answered with an error code the reference does not know."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _options(annotation: Any) -> tuple:
    return typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)


def _entity(annotation: Any) -> type | None:
    """The dataclass inside ``X``, ``tuple[X, ...]`` or either ``| None``."""
    for option in _options(annotation):
        if typing.get_origin(option) is tuple:
            option = typing.get_args(option)[0]
        if dataclasses.is_dataclass(option):
            return option
    return None


def _is_array(annotation: Any) -> bool:
    return any(typing.get_origin(o) is tuple for o in _options(annotation))


def _to_kio(field: dataclasses.Field, annotation: Any, value: Any) -> Any:
    if value is None:
        return None
    kafka_type = field.metadata.get("kafka_type")
    if kafka_type == "timedelta_i32":
        return i32Timedelta.parse(datetime.timedelta(milliseconds=int(value)))
    if kafka_type == "timedelta_i64":
        return i64Timedelta.parse(datetime.timedelta(milliseconds=int(value)))
    if kafka_type == "error_code":
        return KioErrorCode(int(value))
    entity = _entity(annotation)
    if _is_array(annotation):
        return tuple(build(entity, v) if entity and isinstance(v, Mapping) else v for v in value)
    if entity is not None and isinstance(value, Mapping):
        return build(entity, value)
    return value


def _kio_zero(field: dataclasses.Field, annotation: Any) -> Any:
    if type(None) in _options(annotation):
        return None
    if _is_array(annotation):
        return ()
    return _ZERO.get(field.metadata.get("kafka_type", ""), 0)


def build(cls: type, values: Mapping[str, Any]) -> Any:
    """The kio entity ``cls`` from ``values`` (see the module docstring)."""
    hints = _hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            kwargs[field.name] = _to_kio(field, hints[field.name], values[field.name])
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            kwargs[field.name] = _to_kio(
                field, hints[field.name], _kio_zero(field, hints[field.name])
            )
    return cls(**kwargs)


def _from_kio(annotation: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        return round(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, enum.IntEnum) or annotation is ErrorCode:
        try:
            return ErrorCode(int(value))
        except ValueError:
            raise UnknownErrorCode(
                f"error code {int(value)}, which the reference does not know"
            ) from None
    entity = _entity(annotation)
    if _is_array(annotation):
        return tuple(read(entity, v) if entity else v for v in value)
    if entity is not None:
        return read(entity, value)
    return value


def _reference_zero(annotation: Any) -> Any:
    if type(None) in _options(annotation):
        return None
    if _is_array(annotation):
        return ()
    return {str: "", bytes: b"", bool: False, ErrorCode: ErrorCode.NONE}.get(annotation, 0)


def read(cls: type, entity: Any) -> Any:
    """The reference dataclass ``cls`` from a kio entity with the same field names."""
    kwargs = {}
    for field in dataclasses.fields(cls):
        annotation = _hints(cls)[field.name]
        if hasattr(entity, field.name):
            kwargs[field.name] = _from_kio(annotation, getattr(entity, field.name))
        elif field.default is not dataclasses.MISSING:
            kwargs[field.name] = field.default
        else:
            kwargs[field.name] = _reference_zero(annotation)
    return cls(**kwargs)
