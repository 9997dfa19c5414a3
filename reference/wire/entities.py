"""kio entities from plain values, and reference dataclasses from kio entities.

kio has one frozen dataclass per API, version and direction, and the fields it requires
change from version to version. ``build(cls, values)`` makes an entity from a mapping: keys
the version lacks are dropped, required fields not given are zero-filled, nested mappings
become nested entities, and plain ints become the ``timedelta`` and ``ErrorCode`` values kio
wants. ``read(cls, entity)`` makes a reference dataclass from an entity with the same field
names: a field the version lacks takes the dataclass's default. Renames between the two
vocabularies are :mod:`group_apis`' business.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.primitive import i32Timedelta, i64Timedelta

from coordspec.reference.errors import ErrorCode

_ZERO_BY_KAFKA_TYPE: dict[str, Any] = {
    "string": "",
    "bytes": b"",
    "records": b"",
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "error_code": KioErrorCode.none,
    "float64": 0.0,
}
_REFERENCE_ZERO: dict[Any, Any] = {str: "", bytes: b"", bool: False, ErrorCode: ErrorCode.NONE}


class UnknownErrorCode(ValueError):
    """A broker answered with an error code the reference does not know."""


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _options(annotation: Any) -> tuple[Any, ...]:
    return typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)


def entity_of(annotation: Any) -> type | None:
    """The dataclass inside ``X``, ``tuple[X, ...]`` or either ``| None``, if any."""
    for option in _options(annotation):
        if typing.get_origin(option) is tuple:
            option = typing.get_args(option)[0]
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            return option
    return None


def nullable(annotation: Any) -> bool:
    return isinstance(annotation, types.UnionType) and type(None) in typing.get_args(annotation)


def is_array(annotation: Any) -> bool:
    return any(typing.get_origin(option) is tuple for option in _options(annotation))


def ms(value: datetime.timedelta | int | None) -> int:
    """A kio duration as whole milliseconds (kio turns ``*_ms`` fields into timedeltas)."""
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return round(value / datetime.timedelta(milliseconds=1))
    return int(value)


# -- plain values to kio -------------------------------------------------------------------


def _converter(field: dataclasses.Field[Any], annotation: Any) -> Callable[[Any], Any]:
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
        return lambda value: None if value is None else KioErrorCode(int(value))
    entity = entity_of(annotation)
    if is_array(annotation):
        return lambda value: (
            None
            if value is None
            else tuple(
                build(entity, v) if entity is not None and isinstance(v, Mapping) else v
                for v in value
            )
        )
    if entity is not None:
        return lambda value: build(entity, value) if isinstance(value, Mapping) else value
    return lambda value: value


def _zero(field: dataclasses.Field[Any], annotation: Any) -> Any:
    if nullable(annotation):
        return None
    if is_array(annotation):
        return ()
    return _ZERO_BY_KAFKA_TYPE.get(field.metadata.get("kafka_type", ""), 0)  # 0: ints, durations


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


# -- kio to reference dataclasses -----------------------------------------------------------


def _from_kio(annotation: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        return ms(value)
    if isinstance(value, enum.IntEnum) or annotation is ErrorCode:
        try:
            return ErrorCode(int(value))
        except ValueError:
            raise UnknownErrorCode(
                f"error code {int(value)}, which the reference does not know"
            ) from None
    entity = entity_of(annotation)
    if is_array(annotation):
        return tuple(read(entity, v) if entity is not None else v for v in value)
    if entity is not None:
        return read(entity, value)
    return value


def error_code(value: Any) -> ErrorCode:
    """A kio error code as the reference's; raises :class:`UnknownErrorCode` for one it lacks."""
    return _from_kio(ErrorCode, value)  # type: ignore[no-any-return]


def _reference_zero(annotation: Any) -> Any:
    if nullable(annotation):
        return None
    if is_array(annotation):
        return ()
    return _REFERENCE_ZERO.get(annotation, 0)


def read(cls: type, entity: Any) -> Any:
    """The reference dataclass ``cls`` from a kio entity with the same field names."""
    hints = type_hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):
        annotation = hints[field.name]
        if hasattr(entity, field.name):
            kwargs[field.name] = _from_kio(annotation, getattr(entity, field.name))
        elif field.default is not dataclasses.MISSING:
            kwargs[field.name] = field.default
        else:
            kwargs[field.name] = _reference_zero(annotation)
    return cls(**kwargs)
