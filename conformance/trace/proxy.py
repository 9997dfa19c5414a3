"""``coordspec record``: a Kafka-protocol proxy that records the group protocol as a trace.

Every request is forwarded unchanged, every response too, except Metadata and
FindCoordinator, whose broker addresses are rewritten to listeners of this proxy (one per
upstream broker, opened as brokers are named), so clients stay behind it. The group
requests the reference models (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat,
ConsumerGroupDescribe at the versions it answers) and their responses are decoded (kio) and
written in the trace format, ``source: "proxy"``: one run for the proxy's life, ``client`` the
connection, ``t_ms`` since the proxy started.

The consumer group's APIs name topics by id: the proxy learns each topic's id and partition
count from the Metadata answers it forwards, and shows a consumer group these topics (a
``metadata_image`` record, topics known by their names) before its first request after they
change. What the proxy cannot see stays out: topics no client asked about, and when the broker
resolves a regular expression (a regex subscription's assignments cannot be checked).

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
import uuid
from collections import deque
from pathlib import Path
from typing import Any

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
    TopicIds,
    request_from_kio,
    response_from_kio,
)

PRODUCE, METADATA, FIND_COORDINATOR = 0, 3, 10
UPSTREAM_TIMEOUT_S = 10.0
_GROUP_APIS = {API_KEYS[api]: api for api in GROUP_APIS}  # the APIs the proxy records
UNKNOWN_TOPIC_OR_PARTITION = 3


class Topics:
    """The broker's topics as the Metadata answers the proxy forwarded name them."""

    def __init__(self) -> None:
        self.partitions: dict[str, int] = {}
        self.ids: dict[str, uuid.UUID] = {}
        self.version = 0  # moves at each change
        self.wire_ids = TopicIds({})
        self.asked: set[str | uuid.UUID] = set()  # unknown names and ids asked of the broker

    def learn(self, topics: Any) -> None:
        before = (dict(self.partitions), dict(self.ids))
        for t in topics:
            if t.name is None:
                continue
            if t.error_code == 0:
                self.partitions[t.name] = len(t.partitions)
                topic_id = getattr(t, "topic_id", None)  # Metadata v10+
                if topic_id is not None and topic_id.int != 0:
                    self.ids[t.name] = topic_id
            elif t.error_code == UNKNOWN_TOPIC_OR_PARTITION:
                self.partitions.pop(t.name, None)
                self.ids.pop(t.name, None)
        if (self.partitions, self.ids) != before:
            self.version += 1
            self.wire_ids = TopicIds(self.ids)
            self.asked.clear()


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

    def metadata_image(self, group_id: str, topics: dict[str, int]) -> None:
        """From now on ``group_id``'s coordinator knows these topics, by their names (CG-70)."""
        line = {
            "v": 1,
            "source": "proxy",
            "run": self.run,
            "scenario": None,
            "group_id": group_id,
            "ts_ms": round(time.time() * 1000, 3),
            "t_ms": self.now_ms(),
            "kind": "metadata_image",
            "topics": topics,
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
        self.topics = Topics()
        self.shown: dict[str, int] = {}  # consumer group -> the Topics version its trace has

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
            asyncio.create_task(self._requests(client_r, up_w, pending, name, peer, upstream)),
            asyncio.create_task(self._responses(up_r, client_w, pending, name, upstream)),
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

    async def _requests(
        self, reader, upstream, pending: deque, name: str, peer: str, address: tuple[str, int]
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await _frame(reader)
                key, version, correlation = struct.unpack_from(">hhi", frame, 0)
                try:
                    seen = await self._decode_request(key, version, frame, name, peer, address)
                except Exception as exc:  # noqa: BLE001 - kio raises many kinds on bad input; forward it anyway
                    self.recorder.skipped(f"request {key} v{version} from {name}: {exc}")
                    seen = None
                if not (key == PRODUCE and seen == "acks=0"):  # no response will come
                    pending.append(
                        (key, version, correlation, seen if isinstance(seen, rq.Request) else None)
                    )
                upstream.write(struct.pack(">i", len(frame)) + frame)
                await upstream.drain()

    async def _decode_request(
        self, key: int, version: int, frame: bytes, name: str, peer: str, address: tuple[str, int]
    ):
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
            by_id = GROUP_APIS[api].by_topic_id
            if by_id:
                await self._learn_ids(body, address)
            request = request_from_kio(api, body, envelope, self.topics.wire_ids)
            if by_id and self.shown.get(request.trace_group) != self.topics.version:
                self.shown[request.trace_group] = self.topics.version
                self.recorder.metadata_image(request.trace_group, dict(self.topics.partitions))
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

    async def _responses(
        self, reader, client, pending: deque, name: str, address: tuple[str, int]
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await _frame(reader)
                key, version, correlation, request = pending.popleft()
                if key in (METADATA, FIND_COORDINATOR):
                    frame = await self._rewrite(key, version, frame)
                elif request is not None:
                    try:
                        await self._record_response(
                            request, key, version, correlation, frame, name, address
                        )
                    except Exception as exc:  # noqa: BLE001 - as for requests
                        self.recorder.skipped(f"{request.api} v{version} response to {name}: {exc}")
                client.write(struct.pack(">i", len(frame)) + frame)
                await client.drain()

    async def _record_response(
        self,
        request: rq.Request,
        key: int,
        version: int,
        correlation: int,
        frame: bytes,
        name: str,
        address: tuple[str, int],
    ) -> None:
        cls = kio.index.load_response_schema(key, version)
        offset = entity_reader(cls.__header_schema__)(frame, 0)[1]
        entity = entity_reader(cls)(frame, offset)[0]
        if GROUP_APIS[request.api].by_topic_id:
            await self._learn_ids(entity, address)
        response = response_from_kio(request.api, version, entity, self.topics.wire_ids)
        self.recorder.write(
            "response",
            name,
            request.trace_group,
            request.api,
            version,
            correlation,
            json_values.encode(response),
        )

    async def _learn_ids(self, entity: Any, address: tuple[str, int]) -> None:
        """Topic ids in ``entity``, and topics it subscribes to by name, that no forwarded
        Metadata answer named (a topic created since, or by a request the proxy does not
        read): asked of the broker itself, once until the topics change."""
        names = set(getattr(entity, "subscribed_topic_names", None) or ())
        unknown = (_topic_ids_in(entity) - set(self.topics.ids.values())) | (
            names - self.topics.partitions.keys()
        )
        if not unknown - self.topics.asked:
            return
        self.topics.asked |= unknown
        try:
            connection = await Connection.open(*address, UPSTREAM_TIMEOUT_S, self.security)
            try:
                version = min(connection.versions.get(METADATA, range(1)).stop - 1, 12)
                answer = await connection.call(
                    METADATA,
                    version,
                    {"topics": None, "allow_auto_topic_creation": False},
                    UPSTREAM_TIMEOUT_S,
                )
            finally:
                await connection.close()
        except WireError as exc:
            self.recorder.skipped(f"the topic ids of {address[0]}:{address[1]}: {exc}")
            return
        self.topics.learn(answer.topics)

    async def _rewrite(self, key: int, version: int, frame: bytes) -> bytes:
        """Broker addresses in Metadata and FindCoordinator become this proxy's listeners."""
        cls = kio.index.load_response_schema(key, version)
        header, offset = entity_reader(cls.__header_schema__)(frame, 0)
        body, _ = entity_reader(cls)(frame, offset)
        if key == METADATA:
            self.topics.learn(body.topics)
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


def _topic_ids_in(entity: Any) -> set[uuid.UUID]:
    """Every ``topic_id`` in a decoded kio entity, however deep."""
    found: set[uuid.UUID] = set()
    if isinstance(entity, tuple):
        for item in entity:
            found |= _topic_ids_in(item)
    elif dataclasses.is_dataclass(entity):
        for field in dataclasses.fields(entity):
            value = getattr(entity, field.name)
            if field.name == "topic_id" and isinstance(value, uuid.UUID):
                found.add(value)
            elif isinstance(value, tuple) or dataclasses.is_dataclass(value):
                found |= _topic_ids_in(value)
    return found


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
