"""The outputs of the ZooKeeper model, in the order ZooKeeper sends them: a request's
watch notifications come before its reply (a client sees the event first)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from coordspec.reference.frozen import quicken
from coordspec.reference.zookeeper.ops import Op
from coordspec.reference.zookeeper.results import Result


class EventType(StrEnum):
    """``Watcher.Event.EventType``: what a fired watch reports."""

    NodeCreated = "NodeCreated"
    NodeDeleted = "NodeDeleted"
    NodeDataChanged = "NodeDataChanged"
    NodeChildrenChanged = "NodeChildrenChanged"


@dataclass(frozen=True, slots=True)
class Reply:
    session_id: int
    op: Op
    result: Result


@dataclass(frozen=True, slots=True)
class SessionOpened:
    session_id: int
    timeout_ms: int  # negotiated: clamped to [min, max] session timeout


@dataclass(frozen=True, slots=True)
class SessionClosed:
    session_id: int


@dataclass(frozen=True, slots=True)
class SessionExpired:
    session_id: int


@dataclass(frozen=True, slots=True)
class WatchFired:
    """A one-shot watch of ``session_id`` on ``path`` fired (and is gone)."""

    session_id: int
    path: str
    type: EventType


Effect = Reply | SessionOpened | SessionClosed | SessionExpired | WatchFired


quicken(globals())  # cheaper constructors (reference/frozen.py)
