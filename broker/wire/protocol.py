"""Request headers and bodies in, response frames out, all through kio."""

from __future__ import annotations

import functools
import io
import struct
from dataclasses import dataclass
from typing import Any

import kio.index
from kio.serial import entity_reader, entity_writer

from coordspec.broker.wire.bounds import check_lengths
from coordspec.reference.wire.entities import build

API_VERSIONS_KEY = 18
_LENGTH, _LENGTH_AND_ID = struct.Struct(">i"), struct.Struct(">ii")


class BadRequest(Exception):
    """A request the broker cannot read; Kafka closes the connection on these."""


@dataclass(frozen=True, slots=True)
class Header:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def peek_header(payload: bytes) -> Header:
    """api key, version and correlation id: the three ints every request starts with."""
    if len(payload) < 8:
        raise BadRequest(f"request of {len(payload)} bytes is shorter than a header")
    return Header(*struct.unpack_from(">hhi", payload))


def decode_request(payload: bytes, api_key: int, api_version: int) -> tuple[Header, Any]:
    """The full header and the kio request entity. Any decoding failure is a BadRequest.

    Bytes after the body are ignored, as Kafka's request parsing ignores them.
    """
    try:
        cls, read_header, read_body = _readers(api_key, api_version)
        header, offset = read_header(payload, 0)
        check_lengths(cls, payload, offset)  # kio would abort the process on a huge length
        body, _ = read_body(payload, offset)
    except Exception as e:  # noqa: BLE001 - kio raises many kinds: underflow, bad utf-8, unknown tags, bad enums
        raise BadRequest(
            f"cannot decode {api_key} v{api_version}: {type(e).__name__}: {e}"
        ) from None
    return Header(api_key, api_version, header.correlation_id, header.client_id), body


def response_frame(
    api_key: int, api_version: int, correlation_id: int, values: dict[str, Any]
) -> bytes:
    """One framed response (the version's response header, then the body) from the handler's
    plain ``values``. A body of numbers only (a Heartbeat's, most LeaveGroups') is encoded
    once per distinct body: the hot path's requests mostly get the same answer."""
    if all(isinstance(v, int) for v in values.values()):
        body = _numbers_body(api_key, api_version, tuple(values.items()))
    else:
        body = _body_bytes(
            api_key, api_version, build(response_class(api_key, api_version), values)
        )
    return _framed(api_key, api_version, correlation_id, body)


@functools.lru_cache(maxsize=1024)
def _numbers_body(api_key: int, api_version: int, items: tuple[tuple[str, int], ...]) -> bytes:
    return _body_bytes(
        api_key, api_version, build(response_class(api_key, api_version), dict(items))
    )


def _body_bytes(api_key: int, api_version: int, body: Any) -> bytes:
    buffer = io.BytesIO()
    _writers(api_key, api_version)[1](buffer, body)
    return buffer.getvalue()


def _framed(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    # The frame's length, then the header: v0 is the correlation id, v1 adds an empty tagged-field section.
    flexible_header = _writers(api_key, api_version)[0]
    header = _LENGTH_AND_ID.pack(4 + (1 if flexible_header else 0) + len(body), correlation_id)
    return header + b"\x00" + body if flexible_header else header + body


@functools.cache
def response_class(api_key: int, api_version: int) -> type:
    return kio.index.load_response_schema(api_key, api_version)


# kio resolves a schema by module path and builds a reader or writer per call: once is enough.
@functools.cache
def _readers(api_key: int, api_version: int) -> tuple[type, Any, Any]:
    cls = kio.index.load_request_schema(api_key, api_version)
    return cls, entity_reader(cls.__header_schema__), entity_reader(cls)


@functools.cache
def _writers(api_key: int, api_version: int) -> tuple[bool, Any]:
    cls = response_class(api_key, api_version)
    return cls.__header_schema__.__flexible__, entity_writer(cls)
