"""Size-delimited frames: a 4-byte big-endian length, then that many bytes."""

from __future__ import annotations

import asyncio
import struct


class FrameError(Exception):
    """The peer sent a frame the broker will not read; the connection is closed."""


async def read_frame(
    reader: asyncio.StreamReader, max_frame_bytes: int, idle_s: float | None = None
) -> bytes | None:
    """The next frame, or None when the peer closed the connection between frames or sent
    nothing for ``idle_s`` seconds (Kafka's ``connections.max.idle.ms``).

    A negative length or one above ``max_frame_bytes`` is refused before any of the body
    is read, so a bad length prefix never makes the broker allocate (Kafka's
    ``socket.request.max.bytes``).
    """
    try:
        prefix = await asyncio.wait_for(reader.readexactly(4), idle_s)
    except TimeoutError:
        return None
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise FrameError("connection closed inside a frame's length") from None
        return None
    (length,) = struct.unpack(">i", prefix)
    if length < 0 or length > max_frame_bytes:
        raise FrameError(f"frame of {length} bytes (the maximum is {max_frame_bytes})")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FrameError(f"connection closed inside a frame of {length} bytes") from None


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload
