"""A length check run before kio decodes a request body.

kio 0.6.5's native reader reserves memory for an array from its declared length before
reading any element, so a 5-byte compact array length of 2^35 makes the process abort
on a failed allocation: no exception, the broker is gone. It also reads a null array
where the schema allows none, which Kafka refuses. This walk follows the same schema
(kio's dataclasses) reading only lengths, and refuses a body in which any array, string
or byte string claims more bytes than remain, or a non-nullable one is null. The values
themselves are still decoded by kio.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Callable
from typing import Any

from coordspec.reference.wire.entities import entity_of, is_array, nullable, type_hints

_FIXED = {
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float64": 8,
    "bool": 1,
    "uuid": 16,
    "error_code": 2,
    "timedelta_i32": 4,
    "timedelta_i64": 8,
    "datetime_i64": 8,
}


class LengthError(Exception):
    pass


_INT8, _INT16, _INT32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")


class _Cursor:
    __slots__ = ("data", "end", "position")

    def __init__(self, data: bytes, position: int) -> None:
        self.data, self.position, self.end = data, position, len(data)

    @property
    def remaining(self) -> int:
        return self.end - self.position

    def skip(self, size: int) -> None:
        if size < 0 or size > self.end - self.position:
            raise LengthError(
                f"{size} bytes claimed at byte {self.position}, {self.remaining} left"
            )
        self.position += size

    def int(self, fmt: struct.Struct) -> int:
        if fmt.size > self.end - self.position:
            raise LengthError(f"the body ends at byte {self.position}")
        (value,) = fmt.unpack_from(self.data, self.position)
        self.position += fmt.size
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.position >= self.end:
                raise LengthError(f"the body ends at byte {self.position}")
            byte = self.data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise LengthError(f"a varint longer than 5 bytes at byte {self.position}")


Step = Callable[[_Cursor], None]


def _length(cursor: _Cursor, flexible: bool, legacy: struct.Struct) -> int:
    """A length prefix; -1 means null."""
    return cursor.uvarint() - 1 if flexible else cursor.int(legacy)


def _sized(cursor: _Cursor, flexible: bool, legacy: struct.Struct, may_be_null: bool) -> int:
    length = _length(cursor, flexible, legacy)
    if length < 0 and not may_be_null:
        raise LengthError(f"a null where the schema allows none, at byte {cursor.position}")
    return length


def _scalar(kafka_type: str, flexible: bool, may_be_null: bool) -> Step:
    if kafka_type in _FIXED:
        size = _FIXED[kafka_type]
        return lambda cursor: cursor.skip(size)
    if kafka_type in ("string", "bytes", "records"):
        legacy = _INT16 if kafka_type == "string" else _INT32
        return lambda cursor: cursor.skip(max(_sized(cursor, flexible, legacy, may_be_null), 0))
    raise LengthError(f"no length rule for kio type {kafka_type!r}")


def _value(field: dataclasses.Field, annotation: Any, flexible: bool) -> Step:
    entity = entity_of(annotation) if not dataclasses.is_dataclass(annotation) else annotation
    if is_array(annotation):
        array_may_be_null = nullable(annotation)
        item = (
            (lambda cursor: walk(entity, cursor))
            if entity is not None
            else _scalar(field.metadata["kafka_type"], flexible, False)
        )

        def array(cursor: _Cursor) -> None:
            count = _sized(cursor, flexible, _INT32, array_may_be_null)
            if count > cursor.remaining:
                raise LengthError(f"an array of {count} items in {cursor.remaining} bytes")
            for _ in range(max(count, 0)):
                item(cursor)

        return array
    if entity is not None:
        if nullable(annotation):

            def optional_struct(cursor: _Cursor) -> None:
                if cursor.int(_INT8) >= 0:  # a null struct is one byte, -1
                    walk(entity, cursor)

            return optional_struct
        return lambda cursor: walk(entity, cursor)
    return _scalar(field.metadata["kafka_type"], flexible, nullable(annotation))


def _tagged_fields(cursor: _Cursor) -> None:
    """The tagged-field section: count, then (tag, size, bytes) each."""
    for _ in range(cursor.uvarint()):
        cursor.uvarint()
        cursor.skip(cursor.uvarint())


@functools.cache
def _steps(cls: type) -> tuple[Step, ...]:
    """The length checks of ``cls``'s fields, worked out once per schema."""
    flexible = cls.__flexible__
    annotations = type_hints(cls)
    steps = [
        _value(field, annotations[field.name], flexible)
        for field in dataclasses.fields(cls)
        if "tag" not in field.metadata
    ]
    if flexible:
        steps.append(_tagged_fields)
    return tuple(steps)


def walk(cls: type, cursor: _Cursor) -> None:
    for step in _steps(cls):
        step(cursor)


@functools.cache
def _kio_reads_safely(cls: type) -> bool:
    """Whether ``cls`` has only fixed-size fields, strings and structs of those: kio refuses
    an overrunning or forbidden-null string itself (BufferUnderflow, UnexpectedNull), so the
    walk is kept for arrays (and, untried, byte strings); a Heartbeat, the most frequent
    request, needs none."""
    annotations = type_hints(cls)
    for field in dataclasses.fields(cls):
        annotation = annotations[field.name]
        entity = annotation if dataclasses.is_dataclass(annotation) else entity_of(annotation)
        if is_array(annotation) or field.metadata.get("kafka_type") in ("bytes", "records"):
            return False
        if entity is not None and not _kio_reads_safely(entity):
            return False
    return True


def check_lengths(cls: type, data: bytes, position: int) -> None:
    """Raise LengthError if a length in the body of ``cls`` at ``position`` overruns ``data``."""
    if not _kio_reads_safely(cls):
        walk(cls, _Cursor(data, position))
