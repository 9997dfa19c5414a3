"""ZooKeeper's session tracker: deadlines in tick-sized buckets.

A session's deadline is ``now + timeout`` rounded up to the next multiple of tickTime
(ZooKeeper's ExpiryQueue: ``(t / tick + 1) * tick``); every request and ping moves it
on; it expires when the time reaches it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from enum import StrEnum


class SessionState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    EXPIRED = "expired"


@dataclass(slots=True)
class Session:
    session_id: int
    timeout_ms: int
    deadline_ms: int
    state: SessionState = SessionState.OPEN


class SessionTracker:
    def __init__(self, tick_time_ms: int) -> None:
        self.tick_time_ms = tick_time_ms
        self.sessions: dict[int, Session] = {}
        self._heap: list[tuple[int, int]] = []  # (deadline, session id); stale entries skipped

    def _deadline(self, now_ms: int, timeout_ms: int) -> int:
        return ((now_ms + timeout_ms) // self.tick_time_ms + 1) * self.tick_time_ms

    def open(self, session_id: int, timeout_ms: int, now_ms: int) -> Session:
        session = Session(session_id, timeout_ms, self._deadline(now_ms, timeout_ms))
        self.sessions[session_id] = session
        heapq.heappush(self._heap, (session.deadline_ms, session_id))
        return session

    def touch(self, session: Session, now_ms: int) -> None:
        deadline = self._deadline(now_ms, session.timeout_ms)
        if deadline > session.deadline_ms:
            session.deadline_ms = deadline
            heapq.heappush(self._heap, (deadline, session.session_id))

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, session_id = heap[0]
            session = self.sessions[session_id]
            if session.state == SessionState.OPEN and session.deadline_ms == deadline:
                return
            heapq.heappop(heap)

    def next_deadline_ms(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> Session | None:
        """The open session with the earliest deadline at or before ``now_ms``, or None."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, session_id = heapq.heappop(self._heap)
        return self.sessions[session_id]
