"""ZooKeeper's watches: one-shot, per session and path, in two kinds.

A data watch (GetData, Exists) fires on NodeCreated, NodeDataChanged and NodeDeleted; a
child watch (GetChildren) on NodeChildrenChanged and NodeDeleted. A session has at most
one watch of each kind on a path, and a NodeDeleted that finds both sends it one event.
"""

from __future__ import annotations

from coordspec.reference.zookeeper.effects import EventType, WatchFired

_DATA_EVENTS = (EventType.NodeCreated, EventType.NodeDataChanged, EventType.NodeDeleted)
_CHILD_EVENTS = (EventType.NodeChildrenChanged, EventType.NodeDeleted)


class WatchManager:
    def __init__(self) -> None:
        self.data: dict[str, set[int]] = {}
        self.child: dict[str, set[int]] = {}

    def watch_data(self, path: str, session_id: int) -> None:
        self.data.setdefault(path, set()).add(session_id)

    def watch_children(self, path: str, session_id: int) -> None:
        self.child.setdefault(path, set()).add(session_id)

    def trigger(self, path: str, event_type: EventType) -> list[WatchFired]:
        sessions: set[int] = set()
        if event_type in _DATA_EVENTS:
            sessions |= self.data.pop(path, set())
        if event_type in _CHILD_EVENTS:
            sessions |= self.child.pop(path, set())
        return [WatchFired(s, path, event_type) for s in sorted(sessions)]

    def remove_session(self, session_id: int) -> None:
        for table in (self.data, self.child):
            for path in [p for p, sessions in table.items() if session_id in sessions]:
                table[path].discard(session_id)
                if not table[path]:
                    del table[path]
