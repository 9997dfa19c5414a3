"""Drives a group coordinator with real clients and real time, for both brokers.

The single broker's :class:`~coordspec.broker.group_service.GroupService` drives a
``GroupCoordinator``, a cluster broker's :class:`~coordspec.broker.cluster.node.ClusterNode`
a ``CoordinatorHost``. Each runs the coordinator's steps (``step``) and carries out its
writes; the driver does the rest, the same for both:

- ``call``: a client's request gets a request id and the time, waits its turn behind its
  group's writes in flight (:mod:`coordspec.broker.group_turns`, stamped again with the time
  if it waited), is traced, runs, and its caller waits for its reply;
- ``reply``: a reply is traced and wakes its caller (whose connection may be gone);
- one timer for the coordinator's earliest deadline, at which a ``Tick`` runs. A timer armed
  for an earlier deadline is kept: a Tick with nothing due does nothing and re-arms, and
  most steps (a heartbeat's among them) only push deadlines later. Nothing else moves the
  timer, so no other work of the broker (a cluster's replication) postpones a deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Protocol

from coordspec.broker.group_turns import GroupTurns
from coordspec.reference.group import Tick
from coordspec.reference.group.effects import Reply

log = logging.getLogger(__name__)


class CallTrace(Protocol):
    """Where the driver traces each request as it runs and each reply."""

    def request(self, client: str, request: Any) -> None: ...

    def reply(self, now_ms: int, reply: Reply, resigning: bool) -> None: ...


class GroupDriver:
    def __init__(
        self,
        step: Callable[[Any], None],
        next_deadline_ms: Callable[[], int | None],
        now_ms: Callable[[], int],
        trace: CallTrace | None,
    ) -> None:
        """``step`` runs one event (a request or a Tick) through the coordinator, calls
        ``reply`` for its replies and ``arm_timer`` at its end."""
        self.turns = GroupTurns()
        self._step = step
        self._next_deadline_ms = next_deadline_ms
        self._now_ms = now_ms
        self._trace = trace  # None: no trace, and none of its cost
        self._replies: dict[int, asyncio.Future] = {}
        self._request_ids = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline = 0  # what _timer is armed for
        self._stopped = False

    async def call(self, client: str, make: Callable[[int, int], Any]) -> Any:
        """Send the request ``make(request_id, now_ms)`` builds for ``client``; wait for its reply."""
        self._request_ids += 1
        request = make(self._request_ids, self._now_ms())
        group_id = request.trace_group
        if await self.turns.wait(group_id, request):
            request = dataclasses.replace(request, now_ms=self._now_ms())
        future = asyncio.get_running_loop().create_future()
        self._replies[request.request_id] = future
        if self._trace is not None:
            self._trace.request(client, request)
        try:
            try:
                self._step(request)
            finally:  # the next request of the group may now go, if its writes allow
                self.turns.ran(group_id)
            return await future
        finally:
            self._replies.pop(request.request_id, None)

    def reply(self, now_ms: int, reply: Reply, resigning: bool = False) -> None:
        """``resigning``: the coordinator gave it as it lost the group (the cluster's trace leaves it out)."""
        if self._trace is not None:
            self._trace.reply(now_ms, reply, resigning)
        future = self._replies.get(reply.request_id)
        if future is not None and not future.done():  # its connection may be gone
            future.set_result(reply.response)

    def arm_timer(self) -> None:
        """One timer for the coordinator's earliest deadline; one armed earlier is kept."""
        if self._stopped:
            return
        deadline = self._next_deadline_ms()
        if self._timer is not None:
            if deadline is not None and self._timer_deadline <= deadline:
                return
            self._timer.cancel()
            self._timer = None
        if deadline is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # loading before the server runs: start() arms it
            return
        self._timer_deadline = deadline
        self._timer = loop.call_later(max(0.0, (deadline - self._now_ms()) / 1000), self._tick)

    def _tick(self) -> None:
        self._timer = None
        try:
            self._step(Tick(self._now_ms()))
        except Exception:  # a bug in a timer's step: log it and keep serving
            log.exception("group coordinator failed on a timer")
        self.arm_timer()

    def start(self) -> None:
        """Arm the first timer once the event loop runs (sessions of loaded groups)."""
        self.arm_timer()

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
