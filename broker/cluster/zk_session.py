"""One broker's ZooKeeper session through kazoo, in the reference's own types.

The replication model asks for ZooKeeper work as ``ZkCall(call_id, op)`` effects and
learns what happened from ``ZkResult``, ``ZkWatch``, ``ZkSessionStarted`` and
``ZkSessionExpired`` events. :class:`ZkSession` runs each op on the broker's
``KazooClient`` and hands those events to ``deliver`` on the asyncio loop, in the order
kazoo saw them (its callbacks run on one thread; ``call_soon_threadsafe`` keeps order).

Every call and watch belongs to one session *generation*. When kazoo reports the session
LOST, the generation ends: results and watches of the old session that arrive later are
dropped, because the model forgets its outstanding calls on ``ZkSessionExpired`` (as a
ZooKeeper handle whose session is gone never answers them). kazoo then opens a new
session by itself, which is ``ZkSessionStarted`` for the model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import ZookeeperError
from kazoo.protocol.states import EventType as KEventType
from kazoo.protocol.states import KazooState

from coordspec.broker.zookeeper import kazoo_calls
from coordspec.reference.replication.effects import ZkCall
from coordspec.reference.replication.events import (
    ZkResult,
    ZkSessionExpired,
    ZkSessionStarted,
    ZkWatch,
)
from coordspec.reference.zookeeper import Code, Create, Delete, EventType, Multi, SetData
from coordspec.reference.zookeeper.results import failure

_EVENT_TYPES = {
    KEventType.CREATED: EventType.NodeCreated,
    KEventType.DELETED: EventType.NodeDeleted,
    KEventType.CHANGED: EventType.NodeDataChanged,
    KEventType.CHILD: EventType.NodeChildrenChanged,
}


def now_ms() -> int:
    return int(time.time() * 1000)


class ZkSession:
    def __init__(
        self,
        hosts: str,
        timeout_ms: int,
        deliver: Callable[[object], object],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        retry = {"max_tries": -1, "delay": 0.05, "backoff": 2, "max_jitter": 0.0, "max_delay": 0.5}
        self.client = KazooClient(hosts, timeout=timeout_ms / 1000, connection_retry=retry)
        self._deliver = deliver
        self._loop = loop
        self.generation = 0  # counts sessions; 0 until the first one opens
        self._lost = True
        self._session_id: int | None = None

    def start(self, timeout_s: float = 10.0) -> None:
        self.client.add_listener(self._on_state)
        self.client.start(timeout=timeout_s)

    def stop(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()

    # -- session ---------------------------------------------------------------------

    def _post(self, generation: int, event: object) -> None:
        """Hand ``event`` to the loop, unless its session ended before it gets there."""

        def deliver() -> None:
            if generation == self.generation and not self._lost:
                self._deliver(event)

        self._loop.call_soon_threadsafe(deliver)

    def _on_state(self, state: KazooState) -> None:
        # kazoo calls listeners on its connection thread; CONNECTED after LOST is a new session.
        if state == KazooState.LOST:
            self._loop.call_soon_threadsafe(self._expired)
        elif state == KazooState.CONNECTED:
            session_id = self.client.client_id[0] if self.client.client_id else None
            self._loop.call_soon_threadsafe(self._connected, session_id)

    def _expired(self) -> None:
        if not self._lost:
            self._lost = True
            self._deliver(ZkSessionExpired(now_ms()))

    def _connected(self, session_id: int | None) -> None:
        if not self._lost and session_id == self._session_id:
            return  # the same session reconnected
        if (
            not self._lost
        ):  # a new session before LOST was reported: the old one is gone all the same
            self._deliver(ZkSessionExpired(now_ms()))
        self._session_id, self._lost = session_id, False
        self.generation += 1
        self._deliver(ZkSessionStarted(now_ms()))

    # -- operations ------------------------------------------------------------------

    def run(self, call: ZkCall) -> None:
        generation = self.generation
        op = call.op
        try:
            pending = self._send(op, generation)
        except ZookeeperError as e:
            self._post(generation, ZkResult(now_ms(), call.call_id, failure(op, Code(e.code))))
            return

        def done(async_result) -> None:
            try:
                result = kazoo_calls.result(op, async_result.get())
            except ZookeeperError as e:
                result = failure(op, Code(e.code))
            except Exception:  # noqa: BLE001 - kazoo's own failures (closing, timeouts) lose the connection
                result = failure(op, Code.CONNECTIONLOSS)
            self._post(generation, ZkResult(now_ms(), call.call_id, result))

        pending.rawlink(done)

    def _watcher(self, generation: int) -> Callable:
        def watch(event) -> None:
            if event.type in _EVENT_TYPES:  # NONE: the session's state, not a node event
                self._post(generation, ZkWatch(now_ms(), event.path, _EVENT_TYPES[event.type]))

        return watch

    def _send(self, op, generation: int):
        client = self.client
        watch = self._watcher(generation) if getattr(op, "watch", False) else None
        if isinstance(op, Multi):
            transaction = client.transaction()
            for o in op.ops:
                if isinstance(o, Create):
                    transaction.create(o.path, o.data, ephemeral=o.ephemeral, sequence=o.sequential)
                elif isinstance(o, Delete):
                    transaction.delete(o.path, o.version)
                elif isinstance(o, SetData):
                    transaction.set_data(o.path, o.data, o.version)
                else:
                    transaction.check(o.path, o.version)
            return transaction.commit_async()
        return kazoo_calls.send(client, op, watch)
