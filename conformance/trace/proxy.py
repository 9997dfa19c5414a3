"""``coordspec record``: a Kafka-protocol proxy that records the group protocol as a trace.

Every request is forwarded unchanged, every response too, except Metadata and
FindCoordinator, whose broker addresses are rewritten to listeners of this proxy (one per
upstream broker, opened as brokers are named), so clients stay behind it. The group
requests the reference models (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete at the versions it
answers) and their responses are decoded (kio) and written in the trace format, ``source:
"proxy"``: one run for the proxy's life, ``client`` the connection, ``t_ms`` since the proxy
started.

Clients reach the proxy in plaintext; its connections upstream speak TLS and SASL as
``security`` says (coordspec.conformance.security), authenticated before the client's first
request is forwarded. The proxy does not re-authenticate: a broker that gives sessions a
lifetime closes an upstream connection at its end, and the proxy then closes the client's,
which reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import os
import struct
import sys
import time
from collections import deque
from pathlib import Path

import kio.index
from kio.serial import entity_reader, entity_writer

from coordspec.conformance.security import PLAINTEXT, ClientSecurity
from coordspec.conformance.suite.kafka_wire import Connection, WireError
from coordspec.reference.group import json_values
from coordspec.reference.group import requests as rq
from coordspec.reference.group.requests import API_KEYS, VERSIONS
from coordspec.reference.wire.group_apis import (
    GROUP_APIS,
    Envelope,
    request_from_kio,
    response_from_kio,
)

PRODUCE, METADATA, FIND_COORDINATOR = 0, 3, 10
UPSTREAM_TIMEOUT_S = 10.0
# The APIs the proxy records; those naming topics by id pass unrecorded, as the proxy does not
# learn the broker's topic ids (the consumer group's, 68 and 69).
_GROUP_APIS = {API_KEYS[api]: api for api, entry in GROUP_APIS.items() if not entry.by_topic_id}


class Recorder:
    """The trace file, and the proxy's clock."""

    def __init__(self, path: Path) -> None:
        self.out = path.open("a", encoding="utf-8")
        self.started = time.monotonic()
        self.run = f"proxy-{int(time.time() * 1000)}"
        self.warned: set[str] = set()

    def write(
        self,
        kind: str,
        client: str,
        group_id: str,
        api: str,
        version: int,
        correlation_id: int,
        fields: dict,
    ) -> None:
        line = {
            "v": 1,
            "source": "proxy",
            "run": self.run,
            "scenario": None,
            "group_id": group_id,
            "ts_ms": round(time.time() * 1000, 3),
            "t_ms": self.now_ms(),
            "kind": kind,
            "client": client,
            "api": api,
            "api_key": API_KEYS[api],
            "api_version": version,
            "correlation_id": correlation_id,
            "fields": fields,
        }
        self.out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.out.flush()

    def now_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def skipped(self, what: str) -> None:
        """A message that could not be decoded was forwarded but not recorded: say so, once per kind."""
        kind = what.split(" from ")[0].split(" response")[0]
        if kind not in self.warned:
            self.warned.add(kind)
            print(f"coordspec record: not recorded: {what}", file=sys.stderr, flush=True)


class Proxy:
    def __init__(
        self,
        listen: tuple[str, int],
        upstream: tuple[str, int],
        recorder: Recorder,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.host = listen[0]
        self.security = security
        self.recorder = recorder
        self.first = (listen, upstream)
        self.listeners: dict[tuple[str, int], int] = {}  # upstream address -> local port
        self.servers: list[asyncio.base_events.Server] = []
        self.connections = 0
        self.tasks: set[asyncio.Task] = set()  # the connections being served
        self.unreachable: set[tuple[str, int]] = set()  # upstreams said to be down, once each

    async def start(self) -> None:
        await self._listen(self.first[1], self.first[0][1])

    async def _listen(self, upstream: tuple[str, int], port: int = 0) -> int:
        server = await asyncio.start_server(
            lambda r, w: self._serve(r, w, upstream), self.host, port
        )
        self.servers.append(server)
        self.listeners[upstream] = server.sockets[0].getsockname()[1]
        return self.listeners[upstream]

    async def local_port(self, host: str, port: int) -> int:
        if (host, port) not in self.listeners:
            local = await self._listen((host, port))
            # A listener of its own for each further broker: said, as a firewall or a
            # container's published ports must let clients reach it too.
            print(
                f"coordspec record: also listening on {self.host}:{local} for broker {host}:{port}",
                file=sys.stderr,
                flush=True,
            )
        return self.listeners[(host, port)]

    async def close(self) -> None:
        for server in self.servers:
            server.close()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.recorder.out.close()

    async def _serve(
        self,
        client_r: asyncio.StreamReader,
        client_w: asyncio.StreamWriter,
        upstream: tuple[str, int],
    ) -> None:
        self.tasks.add(asyncio.current_task())
        try:
            await self._forward(client_r, client_w, upstream)
        finally:
            self.tasks.discard(asyncio.current_task())

    async def _forward(
        self,
        client_r: asyncio.StreamReader,
        client_w: asyncio.StreamWriter,
        upstream: tuple[str, int],
    ) -> None:
        self.connections += 1
        peer = "{}:{}".format(*client_w.get_extra_info("peername")[:2])
        try:
            if self.security.protocol == "PLAINTEXT":
                up_r, up_w = await asyncio.open_connection(*upstream)
            else:
                connection = await Connection.open(*upstream, UPSTREAM_TIMEOUT_S, self.security)
                up_r, up_w = await connection.detach()
        except WireError as exc:
            print(f"coordspec record: upstream: {exc}", file=sys.stderr, flush=True)
            client_w.close()
            return
        except OSError as exc:
            if upstream not in self.unreachable:
                self.unreachable.add(upstream)
                reason = os.strerror(exc.errno) if exc.errno else str(exc)
                print(
                    f"coordspec record: cannot reach upstream {upstream[0]}:{upstream[1]}: "
                    f"{reason} (clients connecting meanwhile are closed)",
                    file=sys.stderr,
                    flush=True,
                )
            client_w.close()
            return
        self.unreachable.discard(upstream)
        pending: deque = deque()
        name = f"conn{self.connections}@{peer}"
        tasks = [
            asyncio.create_task(self._requests(client_r, up_w, pending, name, peer)),
            asyncio.create_task(self._responses(up_r, client_w, pending, name)),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                print(
                    f"coordspec record: {name} closed: {type(task.exception()).__name__}: {task.exception()}",
                    file=sys.stderr,
                    flush=True,
                )
        for writer in (client_w, up_w):
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _requests(self, reader, upstream, pending: deque, name: str, peer: str) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await _frame(reader)
                key, version, correlation = struct.unpack_from(">hhi", frame, 0)
                try:
                    seen = self._decode_request(key, version, frame, name, peer)
                except Exception as exc:  # noqa: BLE001 - kio raises many kinds on bad input; forward it anyway
                    self.recorder.skipped(f"request {key} v{version} from {name}: {exc}")
                    seen = None
                if not (key == PRODUCE and seen == "acks=0"):  # no response will come
                    pending.append(
                        (key, version, correlation, seen if isinstance(seen, rq.Request) else None)
                    )
                upstream.write(struct.pack(">i", len(frame)) + frame)
                await upstream.drain()

    def _decode_request(self, key: int, version: int, frame: bytes, name: str, peer: str):
        api = _GROUP_APIS.get(key)
        if key == PRODUCE or (api and version in VERSIONS[api]):
            cls = kio.index.load_request_schema(key, version)
            header, offset = entity_reader(cls.__header_schema__)(frame, 0)
            body, _ = entity_reader(cls)(frame, offset)
            if key == PRODUCE:
                return "acks=0" if body.acks == 0 else None
            envelope = Envelope(
                header.correlation_id,
                version,
                self.recorder.now_ms(),
                header.client_id or "",
                f"/{peer.rsplit(':', 1)[0]}",
            )
            request = request_from_kio(api, body, envelope)
            self.recorder.write(
                "request",
                name,
                request.trace_group,
                api,
                version,
                header.correlation_id,
                json_values.request_fields(request),
            )
            return request
        return None

    async def _responses(self, reader, client, pending: deque, name: str) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await _frame(reader)
                key, version, correlation, request = pending.popleft()
                if key in (METADATA, FIND_COORDINATOR):
                    frame = await self._rewrite(key, version, frame)
                elif request is not None:
                    try:
                        self._record_response(request, key, version, correlation, frame, name)
                    except Exception as exc:  # noqa: BLE001 - as for requests
                        self.recorder.skipped(f"{request.api} v{version} response to {name}: {exc}")
                client.write(struct.pack(">i", len(frame)) + frame)
                await client.drain()

    def _record_response(
        self, request: rq.Request, key: int, version: int, correlation: int, frame: bytes, name: str
    ) -> None:
        cls = kio.index.load_response_schema(key, version)
        offset = entity_reader(cls.__header_schema__)(frame, 0)[1]
        response = response_from_kio(request.api, version, entity_reader(cls)(frame, offset)[0])
        self.recorder.write(
            "response",
            name,
            request.trace_group,
            request.api,
            version,
            correlation,
            json_values.encode(response),
        )

    async def _rewrite(self, key: int, version: int, frame: bytes) -> bytes:
        """Broker addresses in Metadata and FindCoordinator become this proxy's listeners."""
        cls = kio.index.load_response_schema(key, version)
        header, offset = entity_reader(cls.__header_schema__)(frame, 0)
        body, _ = entity_reader(cls)(frame, offset)
        if key == METADATA:
            brokers = [
                dataclasses.replace(b, host=self.host, port=await self.local_port(b.host, b.port))
                for b in body.brokers
            ]
            body = dataclasses.replace(body, brokers=tuple(brokers))
        elif version >= 4:
            found = [
                dataclasses.replace(c, host=self.host, port=await self.local_port(c.host, c.port))
                if c.port >= 0
                else c
                for c in body.coordinators
            ]
            body = dataclasses.replace(body, coordinators=tuple(found))
        elif body.port >= 0:
            body = dataclasses.replace(
                body, host=self.host, port=await self.local_port(body.host, body.port)
            )
        out = io.BytesIO()
        entity_writer(cls.__header_schema__)(out, header)
        entity_writer(cls)(out, body)
        return out.getvalue()


async def _frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


def address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


async def serve(
    listen: str,
    upstream: str,
    out: Path,
    ready: asyncio.Event | None = None,
    security: ClientSecurity = PLAINTEXT,
) -> None:
    proxy = Proxy(address(listen), address(upstream), Recorder(out), security)
    await proxy.start()
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        await proxy.close()
