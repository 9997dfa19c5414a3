"""Apply the reference's ZooKeeper events to a real ZooKeeper through kazoo, and report
what happened in the reference's own types, so the two can be compared step by step.

    with KazooExecutor("127.0.0.1:2181", chroot="/run1") as zk:
        zk.handle(OpenSession(now_ms=0, session_id=1, timeout_ms=4000))   # [SessionOpened(1, 4000)]
        zk.handle(Request(now_ms=0, session_id=1, op=Create("/a")))       # [Reply(1, Create(...), CreateResult(OK, "/a"))]
        zk.expire(1)                                                      # [SessionExpired(1), WatchFired(...)...]

Each session is one ``KazooClient`` (its own connection). After every step, each live
session makes a round trip and drains kazoo's callback thread, so every watch event the
server sent because of the step has been seen: ZooKeeper sends a client its
notifications before the response to any later request of that client.

Where the real system cannot be asked:

* ``Tick``: real time is real. :meth:`expire` expires a session with ZooKeeper's standard
  trick instead: a second client joins the session with its id and password and closes it.
* A request from a session this executor closed or expired is answered SESSIONEXPIRED
  without sending it (kazoo would silently open a new session; a ZooKeeper handle whose
  session is gone fails every call with SESSIONEXPIRED).
* Watch events that reach a session after it was closed or expired are not reported.

Paths go to the server as given, after the chroot: a path kazoo would rewrite (``//``, a
trailing ``/``, a ``.`` segment) is sent as a raw request through kazoo's connection (its
``_call``). The one path kazoo cannot send is ``""`` (it goes out as null): a
:class:`UsageError`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Self

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, ZookeeperError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import CheckVersion, GetChildren2, Transaction
from kazoo.protocol.serialization import Create as KCreate
from kazoo.protocol.serialization import Delete as KDelete
from kazoo.protocol.serialization import Exists as KExists
from kazoo.protocol.serialization import GetData as KGetData
from kazoo.protocol.serialization import SetData as KSetData
from kazoo.protocol.states import Callback, KazooState, ZnodeStat
from kazoo.protocol.states import EventType as KEventType
from kazoo.security import OPEN_ACL_UNSAFE

from coordspec.broker.zookeeper import kazoo_calls, multi_wire
from coordspec.broker.zookeeper.multi_wire import MultiRequest, StatFields, create_flags
from coordspec.broker.zookeeper.process import four_letter_word
from coordspec.reference.errors import UsageError
from coordspec.reference.zookeeper import (
    Check,
    CloseSession,
    Code,
    Create,
    Delete,
    Effect,
    EventType,
    Exists,
    GetData,
    Multi,
    OpenSession,
    Ping,
    Reply,
    Request,
    Result,
    SessionClosed,
    SessionExpired,
    SessionOpened,
    SetData,
    Stat,
    Tick,
    WatchFired,
)
from coordspec.reference.zookeeper.results import failure

_EVENT_TYPES = {
    KEventType.CREATED: EventType.NodeCreated,
    KEventType.DELETED: EventType.NodeDeleted,
    KEventType.CHANGED: EventType.NodeDataChanged,
    KEventType.CHILD: EventType.NodeChildrenChanged,
}
_EXPIRE_ATTEMPTS = 5
_STATS_KEPT = 4096
_PATH = attrgetter("path")
# A kazoo stat's fields the model keeps: version, cversion, ephemeralOwner, dataLength, numChildren.
_STAT_FIELDS = itemgetter(4, 5, 7, 8, 9)


class ExecutorError(RuntimeError):
    """The real ZooKeeper did not answer in time, or kazoo failed outside the protocol."""


@dataclass(eq=False)
class _Session:
    session_id: int
    client: KazooClient
    live: bool = True
    events: list[WatchFired] = field(default_factory=list)
    lost: threading.Event = field(default_factory=threading.Event)  # kazoo said LOST
    _last_event: object = None

    def watcher(self, event) -> None:
        # kazoo calls a watcher once per kind it was registered under: a NodeDeleted that
        # clears both a data and a child watch calls it twice with the same event object.
        # When the session is lost it calls every watcher with type NONE: not a node event.
        if event is self._last_event or not self.live or event.type not in _EVENT_TYPES:
            return
        self._last_event = event
        self.events.append(WatchFired(self.session_id, event.path, _EVENT_TYPES[event.type]))


class KazooExecutor:
    def __init__(self, hosts: str, *, chroot: str = "", timeout_s: float = 10.0) -> None:
        if chroot and (not chroot.startswith("/") or chroot.endswith("/")):
            raise UsageError(
                f"KazooExecutor: chroot must be an absolute path without a trailing /, got {chroot!r}"
            )
        self.hosts = hosts
        self.chroot = chroot
        self.timeout_s = timeout_s
        self._sessions: dict[int, _Session] = {}
        self._owners: dict[int, int] = {0: 0}  # real session id -> the driver's session id
        self._observer: KazooClient | None = None
        self._stats: dict[tuple[int, ...], Stat] = {}  # see _stat

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- driving -------------------------------------------------------------------

    def handle(self, event) -> list[Effect]:
        """Apply one event to the real ZooKeeper; the effects, as the model reports them."""
        if isinstance(event, Tick):
            raise UsageError(
                "KazooExecutor.handle: a real server's time cannot be moved; use expire(session_id)"
            )
        if isinstance(event, OpenSession):
            return self._open(event)
        if not isinstance(event, (CloseSession, Ping, Request)):
            raise UsageError(
                f"KazooExecutor.handle: {type(event).__name__} is not a ZooKeeper event"
            )
        session = self._session(event.session_id)
        if isinstance(event, Ping):
            return []  # kazoo pings on its own
        if isinstance(event, CloseSession):
            if not session.live:
                return []
            session.live = False
            self._stop(session.client)
            return [*self._drain(), SessionClosed(session.session_id)]
        if isinstance(event.op, Check):
            raise UsageError("Request: ZooKeeper 3.8 accepts Check only inside a Multi")
        if not session.live:
            return [Reply(session.session_id, event.op, failure(event.op, Code.SESSIONEXPIRED))]
        result = self._apply(session, event.op)
        return [*self._drain(), Reply(session.session_id, event.op, result)]

    def expire(self, session_id: int) -> list[Effect]:
        """Expire a live session now, by ZooKeeper's standard trick, and wait until its
        own client has been told by the server that the session expired."""
        session = self._session(session_id)
        if not session.live:
            raise UsageError(f"expire: session {session_id} is not live")
        session.live = False
        real_id, password = session.client.client_id
        # When the twin joins, the server drops the session's own connection; if that
        # client reconnects before the twin's close, it takes the session back. Try again.
        for _ in range(_EXPIRE_ATTEMPTS):
            twin = self._client(client_id=(real_id, password))
            try:
                twin.start(timeout=self.timeout_s)
            except (ConnectionLoss, KazooTimeoutError):
                pass  # the session's own client took it back while the twin was connecting
            finally:
                self._stop(twin)
            if session.lost.wait(self.timeout_s / _EXPIRE_ATTEMPTS):
                break
        else:
            raise ExecutorError(
                f"session {session_id} (0x{real_id:x}) survived {_EXPIRE_ATTEMPTS} attempts to expire it in {self.timeout_s} s"
            )
        self._stop(session.client)
        return [SessionExpired(session_id), *self._drain()]

    def pipeline(self, session_id: int, ops) -> list[Result]:
        """Send ``ops`` back to back on one live session, then wait for all their results
        (ZooKeeper answers a session's requests in order), without the per-step round trip
        that :meth:`handle` makes to collect watch events: for drivers that time rounds of
        requests (benchmarks/failover_10k.py). Watch events are kept for the next
        :meth:`handle` of any session."""
        session = self._session(session_id)
        if not session.live:
            raise UsageError(f"pipeline: session {session_id} is not live")
        for op in ops:
            if isinstance(op, Check):
                raise UsageError("pipeline: ZooKeeper 3.8 accepts Check only inside a Multi")
        sent = [(op, self._send(session, op)) for op in ops]
        return [self._receive(session, op, pending) for op, pending in sent]

    def close(self) -> None:
        """Close every session still open (their ephemerals go) and stop every client."""
        clients = [session.client for session in self._sessions.values()]
        if self._observer is not None:
            clients.append(self._observer)
            self._observer = None
        for session in self._sessions.values():
            session.live = False
        for client in clients:
            self._stop(client)

    # -- inspection ------------------------------------------------------------------

    def live_sessions(self) -> list[int]:
        return [s.session_id for s in self._sessions.values() if s.live]

    def snapshot(self) -> dict[str, tuple[bytes, Stat]]:
        """Every node below the chroot with its data and stat, read by a client of its own
        (so no driver session is touched and no watch is set)."""
        if self._observer is None:
            self._observer = self._client()
            self._observer.start(timeout=self.timeout_s)
        nodes = {}
        pending = ["/"]
        while pending:
            path = pending.pop()
            data, stat = self._wait(self._observer.get_async(path))
            nodes[path] = (data, self._stat(stat))
            children = self._wait(self._observer.get_children_async(path))
            pending += [(path.rstrip("/") + "/" + child) for child in children]
        return nodes

    # -- sessions --------------------------------------------------------------------

    def _hosts(self) -> str:
        return self.hosts + self.chroot

    def _open(self, event: OpenSession) -> list[Effect]:
        if event.session_id in self._sessions:
            raise UsageError(
                f"OpenSession: session id {event.session_id} is already used (ids are never reused)"
            )
        client = self._client(timeout=event.timeout_ms / 1000)
        try:
            client.start(timeout=self.timeout_s)
        except Exception as e:
            self._stop(client)
            raise ExecutorError(f"could not open a ZooKeeper session on {self.hosts}: {e}") from e
        session = _Session(event.session_id, client)
        client.add_listener(lambda state: self._on_state(session, state))
        self._sessions[event.session_id] = session
        self._owners[client.client_id[0]] = event.session_id
        return [SessionOpened(event.session_id, self._negotiated_timeout_ms(client.client_id[0]))]

    def _negotiated_timeout_ms(self, real_id: int) -> int:
        """kazoo keeps the timeout it asked for, not the one granted: ask the server (``cons``)."""
        pattern = re.compile(rf"sid=0x{real_id:x},.*?\bto=(\d+)")
        for host in self.hosts.split(","):
            address, _, port = host.rpartition(":")
            try:
                match = pattern.search(
                    four_letter_word(int(port), "cons", host=address).decode(errors="replace")
                )
            except (OSError, ValueError):
                continue
            if match:
                return int(match.group(1))
        raise ExecutorError(
            f"no server of {self.hosts} lists session 0x{real_id:x} in its 'cons' answer (is the cons four-letter word whitelisted?)"
        )

    def _on_state(self, session: _Session, state: KazooState) -> None:
        if state == KazooState.LOST:
            session.live = False
            session.lost.set()

    def _client(self, **kwargs) -> KazooClient:
        # Reconnect soon: on loopback a dropped connection is news (an expired session).
        retry = {"max_tries": -1, "delay": 0.03, "backoff": 2, "max_jitter": 0.0, "max_delay": 0.5}
        return KazooClient(
            self._hosts(),
            timeout=kwargs.pop("timeout", self.timeout_s),
            connection_retry=retry,
            **kwargs,
        )

    def _session(self, session_id: int) -> _Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UsageError(
                f"session {session_id} was never opened (sessions: {sorted(self._sessions)})"
            ) from None

    def _stop(self, client: KazooClient) -> None:
        try:
            client.stop()
        finally:
            client.close()

    def _drain(self) -> list[WatchFired]:
        """Every watch event caused so far, per live session: a round trip (all sessions'
        at once), then the callback thread emptied up to a marker."""
        live = [session for session in self._sessions.values() if session.live]
        for trip in [session.client.exists_async("/") for session in live]:
            self._wait(trip)
        for session in live:
            done = threading.Event()
            session.client.handler.dispatch_callback(Callback("watch", done.set, ()))
            if not done.wait(self.timeout_s):
                raise ExecutorError(
                    f"session {session.session_id}: kazoo's callback thread did not drain in {self.timeout_s} s"
                )
        events = []
        for session in self._sessions.values():
            events += session.events
            session.events = []
        return events

    # -- operations ------------------------------------------------------------------

    def _wait(self, async_result):
        try:
            return async_result.get(timeout=self.timeout_s)
        except KazooTimeoutError:
            raise ExecutorError(f"ZooKeeper did not answer within {self.timeout_s} s") from None

    def _apply(self, session: _Session, op) -> Result:
        return self._receive(session, op, self._send(session, op))

    def _send(self, session: _Session, op):
        """Send ``op`` on the session's connection; what to wait on for its answer."""
        names = list(map(_PATH, op.ops)) if isinstance(op, Multi) else [op.path]
        if "" in names:
            raise UsageError(
                f"KazooExecutor: kazoo sends an empty path as null, so {op} cannot be asked"
            )
        client = session.client
        watch = session.watcher if getattr(op, "watch", False) else None
        if isinstance(op, Multi):
            # The wire request kazoo's transaction() would build, without its per-op
            # checks: the paths are sent exactly as given (after the chroot; "/" is
            # special, see _server_path).
            if "/" in names:
                paths = [self._server_path(o) for o in op.ops]
            else:
                paths = list(map(self.chroot.__add__, names))
            return self._call_async(client, MultiRequest(op.ops, paths))
        if self._raw(op):
            return self._call_async(client, self._request(op, watch))
        return kazoo_calls.send(client, op, watch)

    def _receive(self, session: _Session, op, pending) -> Result:
        try:
            value = self._wait(pending)
        except ZookeeperError as e:
            return failure(op, Code(e.code))
        if isinstance(op, Multi):  # MultiRequest's answer: its bytes
            (answer,) = value
            result = multi_wire.read(answer, self._stat_of, session.client.unchroot)
            if result is not None:
                if len(result.results) != len(op.ops):
                    raise ExecutorError(
                        f"a multi of {len(op.ops)} ops answered with {len(result.results)} results"
                    )
                return result
            value = Transaction.unchroot(session.client, multi_wire.decode(answer, 0))
        elif isinstance(op, Create) and self._raw(op):
            value = session.client.unchroot(value)  # a raw request's answer keeps the chroot
        return kazoo_calls.result(op, value, self._stat)

    def _stat(self, stat: ZnodeStat) -> Stat:
        return self._stat_of(_STAT_FIELDS(stat))

    def _stat_of(self, fields: StatFields) -> Stat:
        # A multi's answers mostly share their stat fields: one Stat for each kind.
        known = self._stats.get(fields)
        if known is not None:
            return known
        version, cversion, owner, data_length, num_children = fields
        if owner not in self._owners:
            raise ExecutorError(
                f"node owned by session 0x{owner:x}, which this executor did not open"
            )
        if len(self._stats) >= _STATS_KEPT:
            self._stats.clear()
        known = self._stats[fields] = Stat(
            version=version,
            cversion=cversion,
            ephemeral_owner=self._owners[owner],
            data_length=data_length,
            num_children=num_children,
        )
        return known

    # -- paths kazoo would rewrite -------------------------------------------------------

    def _server_path(self, op) -> str:
        """The path the server should see: the chroot, then the path as given (``/`` is
        the chroot itself, except as the prefix of a sequential create)."""
        if op.path == "/" and not (isinstance(op, Create) and op.sequential):
            return self.chroot or "/"
        return self.chroot + op.path

    def _raw(self, op) -> bool:
        """Whether kazoo would send another path than :meth:`_server_path`: it drops
        ``//`` and trailing ``/`` (keeping a sequential create's), and refuses ``.`` and
        ``..`` segments. (Multis always go raw: kazoo's transaction() drops that ``/`` too.)"""
        trailing = isinstance(op, Create) and op.sequential
        try:
            return _prefix_root(self.chroot, op.path, trailing=trailing) != self._server_path(op)
        except ValueError:
            return True

    def _request(self, op, watch):
        path = self._server_path(op)
        if isinstance(op, Create):
            return KCreate(path, op.data, OPEN_ACL_UNSAFE, create_flags(op))
        if isinstance(op, Delete):
            return KDelete(path, op.version)
        if isinstance(op, SetData):
            return KSetData(path, op.data, op.version)
        if isinstance(op, Check):
            return CheckVersion(path, op.version)
        if isinstance(op, GetData):
            return KGetData(path, watch)
        if isinstance(op, Exists):
            return KExists(path, watch)
        return GetChildren2(path, watch)

    def _call_async(self, client: KazooClient, request):
        async_result = client.handler.async_result()
        client._call(request, async_result)
        return async_result
