"""Closing a conformance connection never swallows the closer's own cancellation: a run
stopped by Ctrl-C while it closes its connections must stop, not go on to its next run (CI
saw ``conform`` run on for minutes after SIGINT)."""

from __future__ import annotations

import asyncio

import pytest

from coordspec.conformance.suite.kafka_wire import Connection


async def _connection() -> tuple[Connection, asyncio.Server]:
    server = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    connection = Connection(f"127.0.0.1:{port}", reader, writer)
    await asyncio.sleep(0)  # its reader is running
    return connection, server


def test_a_close_cancelled_midway_is_cancelled():
    async def main() -> None:
        connection, server = await _connection()
        closing = asyncio.create_task(connection.close())
        await asyncio.sleep(0)  # it waits for the reader to stop
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        server.close()

    asyncio.run(main())


def test_a_close_left_alone_completes():
    async def main() -> None:
        connection, server = await _connection()
        await connection.close()
        assert connection.closed
        server.close()

    asyncio.run(main())
