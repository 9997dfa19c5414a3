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
import struct
from typing import Any

from broker.wire.entities import entity_of, is_array, nullable, type_hints

_FIXED = {
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "uint32": 4, "uint64": 8, "float64": 8,
    "bool": 1, "uuid": 16, "error_code": 2, "timedelta_i32": 4, "timedelta_i64": 8, "datetime_i64": 8,
}


class LengthError(Exception):
    pass


class _Cursor:
    def __init__(self, data: bytes, position: int) -> None:
        self.data, self.position = data, position

    @property
    def remaining(self) -> int:
        return len(self.data) - self.position

    def skip(self, size: int) -> None:
        if size < 0 or size > self.remaining:
            raise LengthError(f"{size} bytes claimed at byte {self.position}, {self.remaining} left")
        self.position += size

    def int(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if size > self.remaining:
            raise LengthError(f"the body ends at byte {self.position}")
        (value,) = struct.unpack_from(fmt, self.data, self.position)
        self.position += size
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.int(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise LengthError(f"a varint longer than 5 bytes at byte {self.position}")


def _length(cursor: _Cursor, flexible: bool, legacy_format: str) -> int:
    """A length prefix; -1 means null."""
    return cursor.uvarint() - 1 if flexible else cursor.int(legacy_format)


def _sized(cursor: _Cursor, flexible: bool, legacy_format: str, may_be_null: bool) -> int:
    length = _length(cursor, flexible, legacy_format)
    if length < 0 and not may_be_null:
        raise LengthError(f"a null where the schema allows none, at byte {cursor.position}")
    return length


def _scalar(kafka_type: str, flexible: bool, cursor: _Cursor, may_be_null: bool) -> None:
    if kafka_type in _FIXED:
        cursor.skip(_FIXED[kafka_type])
    elif kafka_type == "string":
        cursor.skip(max(_sized(cursor, flexible, ">h", may_be_null), 0))
    elif kafka_type in ("bytes", "records"):
        cursor.skip(max(_sized(cursor, flexible, ">i", may_be_null), 0))
    else:
        raise LengthError(f"no length rule for kio type {kafka_type!r}")


def _value(field: dataclasses.Field, annotation: Any, flexible: bool, cursor: _Cursor) -> None:
    entity = entity_of(annotation) if not dataclasses.is_dataclass(annotation) else annotation
    if is_array(annotation):
        count = _sized(cursor, flexible, ">i", nullable(annotation))
        if count > cursor.remaining:
            raise LengthError(f"an array of {count} items in {cursor.remaining} bytes")
        for _ in range(max(count, 0)):
            if entity is not None:
                walk(entity, cursor)
            else:
                _scalar(field.metadata["kafka_type"], flexible, cursor, may_be_null=False)
    elif entity is not None:
        if nullable(annotation) and cursor.int(">b") < 0:  # a null struct is one byte, -1
            return
        walk(entity, cursor)
    else:
        _scalar(field.metadata["kafka_type"], flexible, cursor, nullable(annotation))


def walk(cls: type, cursor: _Cursor) -> None:
    flexible = cls.__flexible__
    annotations = type_hints(cls)
    for field in dataclasses.fields(cls):
        if "tag" not in field.metadata:
            _value(field, annotations[field.name], flexible, cursor)
    if flexible:  # the tagged-field section: count, then (tag, size, bytes) each
        for _ in range(cursor.uvarint()):
            cursor.uvarint()
            cursor.skip(cursor.uvarint())


def check_lengths(cls: type, data: bytes, position: int) -> None:
    """Raise LengthError if a length in the body of ``cls`` at ``position`` overruns ``data``."""
    walk(cls, _Cursor(data, position))
