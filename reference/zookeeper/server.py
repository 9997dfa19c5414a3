"""A ZooKeeper server (ZooKeeper 3.8) as a sans-IO state machine: data tree, sessions,
watches.

    server = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=500))
    server.handle(OpenSession(now_ms=0, session_id=1, timeout_ms=4000))
    server.handle(Request(now_ms=5, session_id=1, op=Create("/a", b"x", ephemeral=True)))
    server.next_deadline_ms()   # when to send Tick(now_ms=...) for the next session expiry

``handle`` takes one event and returns the effects it caused, in order. Sessions whose
deadline is due by the event's ``now_ms`` expire first, each at its own deadline.

A request from a closed or expired session is answered SESSIONEXPIRED (what a client
handle reports once its session is gone). Using a session id never opened, reusing one,
or sending ``Check`` outside a ``Multi`` (ZooKeeper 3.8 has no standalone check) is a
caller's mistake: :class:`UsageError`.
"""

from __future__ import annotations

from coordspec.reference.errors import UsageError
from coordspec.reference.zookeeper.codes import Code, KeeperError
from coordspec.reference.zookeeper.config import ZooKeeperConfig
from coordspec.reference.zookeeper.effects import (
    Effect,
    EventType,
    Reply,
    SessionClosed,
    SessionExpired,
    SessionOpened,
)
from coordspec.reference.zookeeper.events import (
    CloseSession,
    Event,
    OpenSession,
    Ping,
    Request,
    Tick,
)
from coordspec.reference.zookeeper.ops import (
    Check,
    Exists,
    GetChildren,
    GetData,
    Multi,
    Op,
    ReadOp,
    WriteOp,
)
from coordspec.reference.zookeeper.results import (
    ExistsResult,
    GetChildrenResult,
    GetDataResult,
    MultiResult,
    Result,
    failed_multi,
    failure,
)
from coordspec.reference.zookeeper.sessions import Session, SessionState, SessionTracker
from coordspec.reference.zookeeper.tree import DataTree, Txn
from coordspec.reference.zookeeper.watches import WatchManager


class ZooKeeperServer:
    def __init__(
        self, config: ZooKeeperConfig | None = None, *, now_ms: int = 0, system_nodes: bool = True
    ) -> None:
        self.config = config or ZooKeeperConfig()
        self.now_ms = now_ms
        self.tree = DataTree(system_nodes=system_nodes)
        self.sessions = SessionTracker(self.config.tick_time_ms)
        self.watches = WatchManager()
        self._effects: list[Effect] = []

    # -- driving -------------------------------------------------------------------

    def handle(self, event: Event) -> list[Effect]:
        """Apply one event; return the effects it caused, in order."""
        if not isinstance(event, (OpenSession, CloseSession, Ping, Request, Tick)):
            raise UsageError(
                f"ZooKeeperServer.handle: {type(event).__name__} is not a ZooKeeper event"
            )
        if event.now_ms < self.now_ms:
            raise UsageError(
                f"{type(event).__name__}: now_ms {event.now_ms} is before the server's time {self.now_ms}"
            )
        if isinstance(event, Request) and isinstance(event.op, Check):
            raise UsageError("Request: ZooKeeper 3.8 accepts Check only inside a Multi")
        if (
            isinstance(event, (CloseSession, Ping, Request))
            and event.session_id not in self.sessions.sessions
        ):
            raise UsageError(
                f"{type(event).__name__}: session {event.session_id} was never opened (sessions: {sorted(self.sessions.sessions)})"
            )
        self._effects = []
        self._expire_due(event.now_ms)
        self.now_ms = event.now_ms
        if isinstance(event, OpenSession):
            self._open(event)
        elif isinstance(event, CloseSession):
            self._close(event.session_id)
        elif isinstance(event, Ping):
            self._touch(event.session_id)
        elif isinstance(event, Request):
            self._request(event.session_id, event.op)
        effects, self._effects = self._effects, []
        return effects

    def next_deadline_ms(self) -> int | None:
        """The earliest session deadline; ``Tick`` then to expire it."""
        return self.sessions.next_deadline_ms()

    # -- sessions --------------------------------------------------------------------

    def _open(self, event: OpenSession) -> None:
        if event.session_id in self.sessions.sessions:
            raise UsageError(
                f"OpenSession: session id {event.session_id} is already used (ids are never reused)"
            )
        timeout_ms = self.config.negotiate(event.timeout_ms)
        self.sessions.open(event.session_id, timeout_ms, self.now_ms)
        self._effects.append(SessionOpened(event.session_id, timeout_ms))

    def _live(self, session_id: int) -> Session | None:
        session = self.sessions.sessions[session_id]
        return session if session.state == SessionState.OPEN else None

    def _touch(self, session_id: int) -> Session | None:
        session = self._live(session_id)
        if session is not None:
            self.sessions.touch(session, self.now_ms)
        return session

    def _close(self, session_id: int) -> None:
        session = self._live(session_id)
        if session is None:
            return  # closing a dead session's handle changes nothing
        self._end(session, SessionState.CLOSED)
        self._effects.append(SessionClosed(session_id))

    def _expire_due(self, now_ms: int) -> None:
        while (session := self.sessions.pop_due(now_ms)) is not None:
            self.now_ms = session.deadline_ms
            self._effects.append(SessionExpired(session.session_id))
            self._end(session, SessionState.EXPIRED)

    def _end(self, session: Session, state: SessionState) -> None:
        """Close or expire: the session's watches go first (it hears nothing more), then
        its ephemerals, in path order (ZooKeeper's is its hash set's), firing others' watches."""
        session.state = state
        self.watches.remove_session(session.session_id)
        txn = Txn(self.tree, session.session_id)
        for path in sorted(self.tree.ephemerals.get(session.session_id, ())):
            txn.remove(path)
        self._fire(txn.commit())

    # -- requests --------------------------------------------------------------------

    def _request(self, session_id: int, op: Op) -> None:
        if self._touch(session_id) is None:
            result = failure(op, Code.SESSIONEXPIRED)
        elif isinstance(op, Multi):
            result = self._multi(session_id, op)
        elif isinstance(op, (GetData, Exists, GetChildren)):
            result = self._read(session_id, op)
        else:
            result = self._write(session_id, op)
        self._effects.append(Reply(session_id, op, result))

    def _write(self, session_id: int, op: WriteOp) -> Result:
        txn = Txn(self.tree, session_id)
        try:
            result = txn.apply(op)
        except KeeperError as e:
            return failure(op, e.code)
        self._fire(txn.commit())
        return result

    def _multi(self, session_id: int, multi: Multi) -> MultiResult:
        txn = Txn(self.tree, session_id)
        results = []
        for index, op in enumerate(multi.ops):
            try:
                results.append(txn.apply(op))
            except KeeperError as e:
                return failed_multi(len(multi.ops), index, e.code)
        self._fire(txn.commit())
        return MultiResult(Code.OK, tuple(results))

    def _read(self, session_id: int, op: ReadOp) -> Result:
        if isinstance(op, Exists) and "\0" in op.path:
            return ExistsResult(Code.BADARGUMENTS)
        node = self.tree.node(op.path)
        if op.watch and (node is not None or isinstance(op, Exists)):
            if isinstance(op, GetChildren):
                self.watches.watch_children(op.path, session_id)
            else:
                self.watches.watch_data(op.path, session_id)
        if node is None:
            return failure(op, Code.NONODE)
        if isinstance(op, GetData):
            return GetDataResult(Code.OK, node.data, node.stat())
        if isinstance(op, Exists):
            return ExistsResult(Code.OK, node.stat())
        return GetChildrenResult(Code.OK, tuple(sorted(node.children)), node.stat())

    def _fire(self, events: list[tuple[str, EventType]]) -> None:
        for path, event_type in events:
            self._effects.extend(self.watches.trigger(path, event_type))

    # -- inspection ------------------------------------------------------------------

    def live_sessions(self) -> list[int]:
        return [
            s.session_id for s in self.sessions.sessions.values() if s.state == SessionState.OPEN
        ]

    def session_state(self, session_id: int) -> SessionState:
        try:
            return self.sessions.sessions[session_id].state
        except KeyError:
            raise UsageError(
                f"no session {session_id} (sessions: {sorted(self.sessions.sessions)})"
            ) from None
