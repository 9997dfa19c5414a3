"""The broker's connections and their limits, one task serving each, for both brokers.

Each connection is served by :func:`coordspec.broker.wire.connection.serve_frames`: one
request at a time, in order. Limits: the frame size, the number of connections (more are
closed at once) and the idle time without a byte received.

A cluster broker also takes connections from the other brokers; it passes ``is_peer``, which
tells them by their first request. As Kafka lets inter-broker connections past
``max.connections``, only clients' connections then count toward the limit, and only theirs
are closed when idle (the controller's connection to a broker can be quiet for longer, and
reconnecting would delay its next request). Connections that have not sent a whole request
yet are a pool of their own, also bounded, so clients at their limit do not keep a peer from
connecting. Without ``is_peer`` every connection stays in that first pool.

A listener with SASL puts a :class:`coordspec.broker.security.Session` in front of each
connection's requests (:mod:`coordspec.broker.security`); TLS is the server's, in ``create_server``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from coordspec.broker.security import PLAINTEXT, ListenerSecurity, Refused
from coordspec.broker.wire.connection import FrameConnection, serve_frames


@dataclass(frozen=True)
class Limits:
    """From the broker's settings (coordspec.broker.settings)."""

    max_frame_bytes: int  # socket.request.max.bytes
    max_connections: int  # max.connections
    idle_s: float  # connections.max.idle.ms


Respond = Callable[[tuple[str, int], bytes], Awaitable[bytes | None]]


class Connections:
    def __init__(
        self,
        respond: Respond,
        limits: Limits,
        log: logging.Logger,
        is_peer: Callable[[bytes], bool] | None = None,
        security: ListenerSecurity = PLAINTEXT,
    ) -> None:
        self._respond = respond  # (peer address, request frame) -> response frame or None
        self.security = security
        self.limits = limits
        self._log = log
        self._is_peer = is_peer
        self.waiting: set[asyncio.Task] = set()  # no whole request yet (or never sorted)
        self.clients: set[asyncio.Task] = set()
        self.peers: set[asyncio.Task] = set()

    def protocol(self) -> FrameConnection:
        """The asyncio protocol of a new connection (for ``loop.create_server``)."""
        return FrameConnection(self.limits.max_frame_bytes, self._serve)

    async def _serve(self, connection: FrameConnection) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self.waiting) >= self.limits.max_connections:
            connection.close()
            return
        kind = self.waiting
        kind.add(task)

        def admit(first: bytes) -> bool:
            nonlocal kind
            if self._is_peer is None:
                return True
            kind = self._sort(self._is_peer, task, first)
            return kind is not self.waiting  # else a client above the limit

        def idle_s() -> float | None:
            return None if kind is self.peers else self.limits.idle_s

        def plain(frame: bytes) -> Awaitable[bytes | None]:
            return self._respond(connection.peer, frame)

        respond = plain
        if (session := self.security.session()) is not None:

            async def respond(frame: bytes) -> bytes | None:
                try:
                    return await session.respond(frame, plain)
                except Refused as refused:  # answered, then the connection closes
                    connection.write(refused.frame)
                    raise

        try:
            await serve_frames(
                connection,
                respond,
                idle_s,
                self._log,
                admit,
            )
        finally:
            kind.discard(task)

    def _sort(
        self, is_peer: Callable[[bytes], bool], task: asyncio.Task, first: bytes
    ) -> set[asyncio.Task]:
        """The set the connection now belongs to, by its first request; ``waiting`` if it is refused."""
        if is_peer(first):
            kind = self.peers
        elif len(self.clients) < self.limits.max_connections:
            kind = self.clients
        else:
            return self.waiting
        self.waiting.discard(task)
        kind.add(task)
        return kind

    async def close(self) -> None:
        tasks = self.waiting | self.clients | self.peers
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
