"""Kafka's text form of a Uuid (``Uuid.toString`` and ``Uuid.fromString``): its 16 bytes in
URL-safe base64 without padding, as topic znodes and Kafka's tools show topic ids."""

from __future__ import annotations

import base64
import binascii
import uuid


def to_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def from_text(text: str) -> uuid.UUID:
    """Raises ValueError when ``text`` is not the text of a Kafka Uuid."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return uuid.UUID(bytes=raw)
