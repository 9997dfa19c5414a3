"""One client connection as an asyncio protocol: frames in, responses out, in request order.

``data_received`` cuts the byte stream into frames (a 4-byte big-endian length, then the
payload). A length below zero or above the maximum is refused before any of its body is
read (Kafka's ``socket.request.max.bytes``); the frames before it are still served. Frames
are handed to the connection's one serving task in order, and the responses it writes are
sent together once per loop turn, so a client that pipelines costs one ``send`` per turn,
not one per response.

Reading pauses while more than ``_READ_AHEAD`` bytes of complete frames wait to be served,
and serving pauses while the transport's write buffer is full: a client that does not read
its responses stops being read.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from coordspec.broker.wire.framing import FrameError
from coordspec.broker.wire.protocol import BadRequest

_READ_AHEAD = 1 << 20
_LENGTH = struct.Struct(">i")


class FrameConnection(asyncio.Protocol):
    def __init__(
        self, max_frame_bytes: int, serve: Callable[[FrameConnection], Coroutine[Any, Any, None]]
    ) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._serve = serve
        self._serving: asyncio.Task[None] | None = None
        self.last_read = 0.0  # loop time of the last bytes received
        self.transport: asyncio.Transport | None = None
        self.peer: tuple[str, int] = ("?", 0)
        self._buffer = bytearray()
        self._frames: deque[bytes | FrameError | None] = deque()  # None: the end of the stream
        self._queued_bytes = 0
        self._reading_paused = False
        self._frame_ready: asyncio.Future | None = None
        self._writable: asyncio.Future | None = (
            None  # set while the transport asked us to stop writing
        )
        self._unsent: list[bytes] = []
        self._flush_scheduled = False
        self._ended = False
        self.lost = False

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = peer[:2] if peer else ("?", 0)
        loop = asyncio.get_running_loop()
        self.last_read = loop.time()
        # The loop keeps only a weak reference to a task: the connection holds its own.
        self._serving = loop.create_task(self._serve(self))

    def data_received(self, data: bytes) -> None:
        self.last_read = asyncio.get_running_loop().time()
        buffer = self._buffer
        buffer += data
        position = 0
        while len(buffer) - position >= 4:
            (length,) = _LENGTH.unpack_from(buffer, position)
            if length < 0 or length > self.max_frame_bytes:
                self._end(
                    FrameError(f"frame of {length} bytes (the maximum is {self.max_frame_bytes})")
                )
                return
            if len(buffer) - position - 4 < length:
                break
            self._frames.append(bytes(buffer[position + 4 : position + 4 + length]))
            self._queued_bytes += length
            position += 4 + length
        if position:
            del buffer[:position]
            self._wake()
            if self._queued_bytes > _READ_AHEAD and not self._reading_paused:
                self._reading_paused = True
                self.transport.pause_reading()

    def eof_received(self) -> bool:
        if self._buffer:
            self._end(
                FrameError(
                    "connection closed inside a frame"
                    if len(self._buffer) >= 4
                    else "connection closed inside a frame's length"
                )
            )
        else:
            self._end(None)
        # A half-closed connection still gets the answers to what it sent (TLS cannot half-close).
        return self.transport is None or self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._end(None)
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # -- for the serving task ---------------------------------------------------------

    def next_frame(self) -> bytes | FrameError | asyncio.Future | None:
        """The next frame, an error, None at the end, or a future to await before asking again."""
        if self._frames:
            frame = self._frames.popleft()
            if isinstance(frame, bytes):
                self._queued_bytes -= len(frame)
                if (
                    self._reading_paused
                    and self._queued_bytes <= _READ_AHEAD // 2
                    and not self.lost
                ):
                    self._reading_paused = False
                    self.transport.resume_reading()
            return frame
        self._flush()  # nothing more to answer right now: send what is ready
        self._frame_ready = asyncio.get_running_loop().create_future()
        return self._frame_ready

    def write(self, response: bytes) -> None:
        self._unsent.append(response)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def writable(self) -> asyncio.Future | None:
        """A future to await before writing more, or None."""
        return self._writable

    def close(self) -> None:
        self._flush()
        if self.transport is not None:
            self.transport.close()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._unsent and not self.lost:
            self.transport.write(b"".join(self._unsent))
        self._unsent.clear()

    def _end(self, last: FrameError | None) -> None:
        if self._ended:
            return
        self._ended = True
        self._frames.append(last)
        if not self.lost and self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()
            self._reading_paused = True
        self._wake()

    def _wake(self) -> None:
        if self._frame_ready is not None and not self._frame_ready.done():
            self._frame_ready.set_result(None)
        self._frame_ready = None


# -- serving a connection -----------------------------------------------------------------

_FAIR_SHARE = 64  # requests one connection is served in a row before the others get a turn
_IDLE = object()


async def serve_frames(
    connection: FrameConnection,
    respond: Callable[[bytes], Coroutine[Any, Any, bytes | None]],
    idle_s: Callable[[], float | None],
    log: logging.Logger,
    admit: Callable[[bytes], bool] = lambda first: True,
) -> None:
    """Answer the connection's frames in order until it ends, goes quiet for ``idle_s()``
    seconds (None: never; connections.max.idle.ms), or ``admit`` refuses its first request.
    A bad frame or request closes it, logged in one line; a bug closes it, logged whole."""
    peer = connection.peer
    try:
        served = 0
        while True:
            frame = connection.next_frame()
            if isinstance(frame, asyncio.Future):
                if not await _bytes_within(connection, frame, idle_s()):
                    break
                continue
            if frame is None:
                break
            if isinstance(frame, FrameError):
                raise frame
            if served == 0 and not admit(frame):
                break
            response = await respond(frame)
            if response is not None:
                connection.write(response)
                if (writable := connection.writable()) is not None:
                    await writable
            served += 1
            if served % _FAIR_SHARE == 0:  # a client that pipelines does not hold up the others
                await asyncio.sleep(0)
    except (FrameError, BadRequest) as e:
        log.info("closing %s:%s: %s", peer[0], peer[1], e)
    except (ConnectionError, asyncio.CancelledError):
        pass
    except Exception:  # a bug: this connection goes, the broker stays
        log.exception("closing %s:%s after an internal error", peer[0], peer[1])
    finally:
        connection.close()


async def _bytes_within(
    connection: FrameConnection, ready: asyncio.Future, idle_s: float | None
) -> bool:
    """Wait for more bytes; False once nothing came for ``idle_s`` seconds."""
    if idle_s is None:
        await ready
        return True
    loop = asyncio.get_running_loop()

    def check_idle() -> None:
        nonlocal timer
        quiet = loop.time() - connection.last_read
        if quiet >= idle_s:
            if not ready.done():
                ready.set_result(_IDLE)
        else:
            timer = loop.call_later(idle_s - quiet, check_idle)

    timer = loop.call_later(idle_s, check_idle)
    try:
        return await ready is not _IDLE
    finally:
        timer.cancel()
