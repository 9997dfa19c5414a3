"""A broker with planted bugs: the project's single broker (``coordspec broker``) behind a proxy
that changes some of its answers, for the tests of ``coordspec conform``'s diagnosis.

Each bug in ``BUGS`` is one a real broker could have, of one severity class; any of them can
be switched on by name, several at once, and with none on the proxy is transparent. The proxy
reads frames as ``coordspec record``'s does, decodes a response with kio only where a bug
could change it, and re-encodes it. Metadata and FindCoordinator name the proxy, so clients
stay behind it. Responses leave in the order they were asked for: a delayed answer delays the
connection's later ones, and a dropped one holds them all, as a broker that hangs would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import kio.index
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from coordspec.broker.testing import BrokerProcess

OFFSET_FETCH, METADATA, FIND_COORDINATOR, JOIN_GROUP, LEAVE_GROUP, DELETE_GROUPS = (
    9,
    3,
    10,
    11,
    13,
    42,
)


@dataclass
class Exchange:
    """One response on its way to the client, and what the bugs make of it."""

    key: int
    version: int
    request: Any  # the decoded request body, for the APIs a bug looks at
    body: Any  # the decoded response body
    delay_s: float = 0.0
    dropped: bool = False
    cut: int = 0  # bytes taken off the end of the encoded body


def _join_member_id_required_fields(x: Exchange) -> None:
    if x.version >= 7 and x.body.error_code == ErrorCode.member_id_required:
        x.body = dataclasses.replace(x.body, protocol_type="consumer", protocol_name="")


def _delete_non_empty_group(x: Exchange) -> None:
    results = tuple(
        dataclasses.replace(r, error_code=ErrorCode.none)
        if r.error_code == ErrorCode.non_empty_group
        else r
        for r in x.body.results
    )
    x.body = dataclasses.replace(x.body, results=results)


def _join_empty_group_id_unanswered(x: Exchange) -> None:
    x.dropped = x.request.group_id == ""


def _offset_fetch_truncated(x: Exchange) -> None:
    if 2 <= x.version <= 7:
        x.cut = 3


def _leave_unknown_member_accepted(x: Exchange) -> None:
    def accepted(code: ErrorCode) -> ErrorCode:
        return ErrorCode.none if code == ErrorCode.unknown_member_id else code

    x.body = dataclasses.replace(x.body, error_code=accepted(x.body.error_code))
    if x.version >= 3:  # the batch form: one error per member
        members = tuple(
            dataclasses.replace(m, error_code=accepted(m.error_code)) for m in x.body.members
        )
        x.body = dataclasses.replace(x.body, members=members)


def _join_answer_late(x: Exchange) -> None:
    if x.body.error_code == ErrorCode.none:
        x.delay_s = 2.5


@dataclass(frozen=True)
class Bug:
    severity: str  # the class the diagnosis must give it
    api_key: int
    plant: Callable[[Exchange], None]
    what: str


BUGS = {
    "join-member-id-required-fields": Bug(
        "cosmetic",
        JOIN_GROUP,
        _join_member_id_required_fields,
        "JoinGroup v7+ MEMBER_ID_REQUIRED carries protocol_type 'consumer' and protocol_name ''",
    ),
    "delete-non-empty-group": Bug(
        "safety",
        DELETE_GROUPS,
        _delete_non_empty_group,
        "DeleteGroups answers NONE where the broker answered NON_EMPTY_GROUP",
    ),
    "join-empty-group-id-unanswered": Bug(
        "liveness",
        JOIN_GROUP,
        _join_empty_group_id_unanswered,
        "a JoinGroup with an empty group id is never answered",
    ),
    "offset-fetch-truncated": Bug(
        "wire",
        OFFSET_FETCH,
        _offset_fetch_truncated,
        "OffsetFetch v2-v7 answers lose their last 3 bytes",
    ),
    "leave-unknown-member-accepted": Bug(
        "protocol",
        LEAVE_GROUP,
        _leave_unknown_member_accepted,
        "LeaveGroup answers NONE where the broker answered UNKNOWN_MEMBER_ID",
    ),
    "join-answer-late": Bug(
        "timing",
        JOIN_GROUP,
        _join_answer_late,
        "JoinGroup answers with a generation (error NONE) come 2.5 s late",
    ),
}


# A part of the catalog that meets each bug, at versions where no bug hides another: JoinGroup
# v7 for the cosmetic fields, v6 (no MEMBER_ID_REQUIRED fields to differ) for the late answer,
# OffsetFetch v7 for the cut, LeaveGroup v5 alone (its error sits in one place). 9 runs, ~5 s.
SCENARIOS = [
    "member-id-required",
    "delete-group-during-rebalance",
    "empty-group-id-is-invalid",
    "offset-fetch-all-partitions",
    "leave-unknown-member",
]
VERSIONS = (
    "JoinGroup=6-7,LeaveGroup=5,SyncGroup=5,DescribeGroups=5,OffsetCommit=8,OffsetFetch=7,"
    "DeleteGroups=2,Heartbeat=4"
)


class PlantingProxy:
    def __init__(self, upstream: tuple[str, int], bugs: Iterable[str]) -> None:
        self.upstream = upstream
        self.bugs = [BUGS[name] for name in bugs]
        self.keys = {bug.api_key for bug in self.bugs}
        self.host, self.port = "127.0.0.1", 0
        self.server: asyncio.base_events.Server | None = None
        self.tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.tasks.add(task)
        try:
            await self._forward(client_r, client_w)
        except asyncio.CancelledError:
            pass  # the proxy closes
        finally:
            self.tasks.discard(task)

    async def _forward(
        self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            return
        pending: deque[tuple[int, int, Any]] = deque()
        outgoing: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()
        parts = [
            asyncio.create_task(self._requests(client_r, up_w, pending)),
            asyncio.create_task(self._responses(up_r, pending, outgoing)),
            asyncio.create_task(_send_in_order(outgoing, client_w)),
        ]
        try:
            await asyncio.wait(parts, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for part in parts:
                part.cancel()
            await asyncio.gather(*parts, return_exceptions=True)
            for writer in (client_w, up_w):
                writer.close()

    async def _requests(self, reader, upstream, pending: deque) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await _frame(reader)
                key, version = struct.unpack_from(">hh", frame, 0)
                request = None
                if key in self.keys:
                    cls = kio.index.load_request_schema(key, version)
                    offset = entity_reader(cls.__header_schema__)(frame, 0)[1]
                    request = entity_reader(cls)(frame, offset)[0]
                pending.append((key, version, request))  # the tests send no acks=0 Produce
                upstream.write(struct.pack(">i", len(frame)) + frame)
                await upstream.drain()

    async def _responses(self, reader, pending: deque, outgoing: asyncio.Queue) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await _frame(reader)
                key, version, request = pending.popleft()
                if key not in self.keys | {METADATA, FIND_COORDINATOR}:
                    outgoing.put_nowait((time.monotonic(), frame))
                    continue
                cls = kio.index.load_response_schema(key, version)
                header, offset = entity_reader(cls.__header_schema__)(frame, 0)
                x = Exchange(key, version, request, entity_reader(cls)(frame, offset)[0])
                if key in (METADATA, FIND_COORDINATOR):
                    x.body = self._rewrite(key, version, x.body)
                for bug in self.bugs:
                    if bug.api_key == key:
                        bug.plant(x)
                out = io.BytesIO()
                entity_writer(cls.__header_schema__)(out, header)
                entity_writer(cls)(out, x.body)
                body = out.getvalue()
                outgoing.put_nowait(
                    (
                        time.monotonic() + x.delay_s,
                        None if x.dropped else body[: len(body) - x.cut],
                    )
                )

    def _rewrite(self, key: int, version: int, body: Any) -> Any:
        """Every broker address becomes the proxy's: there is one broker behind it."""
        here = {"host": self.host, "port": self.port}
        if key == METADATA:
            return dataclasses.replace(
                body, brokers=tuple(dataclasses.replace(b, **here) for b in body.brokers)
            )
        if version >= 4:
            found = tuple(
                dataclasses.replace(c, **here) if c.port >= 0 else c for c in body.coordinators
            )
            return dataclasses.replace(body, coordinators=found)
        return dataclasses.replace(body, **here) if body.port >= 0 else body


async def _send_in_order(outgoing: asyncio.Queue, client: asyncio.StreamWriter) -> None:
    """Each response at its time, none before the one ahead of it; a dropped one holds the rest."""
    while True:
        at, frame = await outgoing.get()
        if frame is None:
            await asyncio.Event().wait()  # hangs until the connection closes
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        client.write(struct.pack(">i", len(frame)) + frame)
        await client.drain()


async def _frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


class ProxyThread:
    """The proxy in a thread of its own, with its own event loop, in front of ``upstream``::

    with ProxyThread(("127.0.0.1", 9092), ["delete-non-empty-group"]) as proxy:
        proxy.bootstrap
    """

    def __init__(self, upstream: tuple[str, int], bugs: Iterable[str] = ()) -> None:
        self.bugs = list(bugs)
        unknown = set(self.bugs) - BUGS.keys()
        if unknown:
            raise ValueError(f"no planted bug named {sorted(unknown)}; known: {sorted(BUGS)}")
        self.proxy = PlantingProxy(upstream, self.bugs)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"{self.proxy.host}:{self.proxy.port}"

    def start(self) -> Self:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop).result(10)
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.proxy.close(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        self.loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PlantedBroker:
    """``coordspec broker`` (``broker_args`` go to it) behind the proxy::

    with PlantedBroker(tmp_path / "data", ["delete-non-empty-group"]) as broker:
        broker.bootstrap  # the proxy
    """

    def __init__(self, data_dir: Path, bugs: Iterable[str] = (), *broker_args: str) -> None:
        self.broker = BrokerProcess(data_dir, *broker_args)
        self.bugs = list(bugs)
        self.proxy: ProxyThread | None = None

    @property
    def bootstrap(self) -> str:
        assert self.proxy is not None
        return self.proxy.bootstrap

    def start(self) -> Self:
        self.broker.start()
        try:
            self.proxy = ProxyThread((self.broker.host, self.broker.port), self.bugs).start()
        except BaseException:
            self.broker.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        self.broker.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
