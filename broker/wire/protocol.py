"""Request headers and bodies in, response frames out, all through kio."""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

import kio.index
from kio.serial import entity_reader, entity_writer

from broker.wire.bounds import check_lengths
from broker.wire.framing import frame

API_VERSIONS_KEY = 18


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
        cls = kio.index.load_request_schema(api_key, api_version)
        header, offset = entity_reader(cls.__header_schema__)(payload, 0)
        check_lengths(cls, payload, offset)  # kio would abort the process on a huge length
        body, _ = entity_reader(cls)(payload, offset)
    except Exception as e:  # noqa: BLE001 - kio raises many kinds: underflow, bad utf-8, unknown tags, bad enums
        raise BadRequest(f"cannot decode {api_key} v{api_version}: {type(e).__name__}: {e}") from None
    return Header(api_key, api_version, header.correlation_id, header.client_id), body


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """One framed response: the version's response header, then the body."""
    cls = kio.index.load_response_schema(api_key, api_version)
    buffer = io.BytesIO()
    entity_writer(cls.__header_schema__)(buffer, cls.__header_schema__(correlation_id=correlation_id))
    entity_writer(cls)(buffer, body)
    return frame(buffer.getvalue())


def response_class(api_key: int, api_version: int) -> type:
    return kio.index.load_response_schema(api_key, api_version)
