"""Deadlines as state. The coordinator never sleeps: a driver asks
:meth:`Timers.next_deadline_ms` and sends an event carrying a later ``now_ms``.

Each timer has a key (``("ExpireSession", group_id, member_id)``, ...); scheduling a key
again replaces its deadline, as Kafka's coordinator timer does. Timers due at the same
instant fire in the order they were scheduled.
"""

from __future__ import annotations

import heapq
import math

TimerKey = tuple[str, ...]  # the timer's kind, then the group (and member) it is for


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerKey]] = []
        # key -> its entry in the heap: an entry in the heap that is not its key's is stale
        self._live: dict[TimerKey, tuple[int, int, TimerKey]] = {}
        self._seq = 0
        # No timer is due before this (the heap's first entry, stale or not): a step reads it
        # instead of asking whether a timer is due.
        self.first_deadline_ms: float = math.inf

    def copy(self) -> Timers:
        other = Timers()
        other._heap, other._live, other._seq = list(self._heap), dict(self._live), self._seq
        other.first_deadline_ms = self.first_deadline_ms
        return other

    def same(self, other: Timers) -> bool:
        """The same timers due at the same times, firing in the same order: stale heap
        entries never fire, and every later timer is numbered after all of these in both."""
        return self._live == other._live

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        self._seq += 1
        entry = self._live[key] = (deadline_ms, self._seq, key)
        heapq.heappush(self._heap, entry)
        self.first_deadline_ms = min(self.first_deadline_ms, deadline_ms)

    def cancel(self, key: TimerKey) -> None:
        self._live.pop(key, None)

    def deadline(self, key: TimerKey) -> int | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def _drop_stale(self) -> None:
        heap, live = self._heap, self._live
        while heap and live.get(heap[0][2]) != heap[0]:
            heapq.heappop(heap)
        self.first_deadline_ms = heap[0][0] if heap else math.inf

    def next_deadline_ms(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def due(self, now_ms: int) -> list[tuple[TimerKey, int]]:
        """The timers due by ``now_ms`` with their deadlines, earliest first (none removed)."""
        return sorted(
            ((key, deadline) for key, (deadline, _, _) in self._live.items() if deadline <= now_ms),
            key=lambda entry: (entry[1], self._live[entry[0]][1]),
        )

    def pop_due(self, now_ms: int) -> tuple[TimerKey, int] | None:
        """The earliest timer due at ``now_ms``, removed, with its deadline; or None."""
        heap = self._heap
        if not heap or heap[0][0] > now_ms:
            return None  # the common case, and stale entries beyond now_ms can wait
        self._drop_stale()
        if not heap or heap[0][0] > now_ms:
            return None
        deadline, _, key = heapq.heappop(heap)
        del self._live[key]
        self.first_deadline_ms = heap[0][0] if heap else math.inf
        return key, deadline

    def __len__(self) -> int:
        return len(self._live)
