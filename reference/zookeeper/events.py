"""The inputs of the ZooKeeper model. Every one carries ``now_ms``; time only moves when
an event says so.

Session ids are the driver's names for sessions (positive ints, never reused), as request
ids are in the group coordinator: a real server picks its own 64-bit ids, and a driver
that talks to one (``coordspec.broker.zookeeper.executor``) maps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from coordspec.reference.errors import UsageError
from coordspec.reference.frozen import quicken
from coordspec.reference.zookeeper.ops import OPS, Op


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_time(name: str, now_ms: object) -> None:
    _require(
        _is_int(now_ms) and now_ms >= 0,
        f"{name}: now_ms must be a non-negative int, got {now_ms!r}",
    )


def _check_session(name: str, session_id: object) -> None:
    _require(
        _is_int(session_id) and session_id > 0,
        f"{name}: session_id must be a positive int, got {session_id!r}",
    )


@dataclass(frozen=True, slots=True)
class OpenSession:
    """A client connects and asks for ``timeout_ms``; the server negotiates it."""

    now_ms: int
    session_id: int
    timeout_ms: int

    def __post_init__(self) -> None:
        _check_time("OpenSession", self.now_ms)
        _check_session("OpenSession", self.session_id)
        _require(
            _is_int(self.timeout_ms) and self.timeout_ms >= 0,
            f"OpenSession: timeout_ms must be a non-negative int, got {self.timeout_ms!r}",
        )


@dataclass(frozen=True, slots=True)
class CloseSession:
    """The client closes its session: its ephemeral nodes and watches go."""

    now_ms: int
    session_id: int

    def __post_init__(self) -> None:
        _check_time("CloseSession", self.now_ms)
        _check_session("CloseSession", self.session_id)


@dataclass(frozen=True, slots=True)
class Ping:
    """The client's heartbeat: it only keeps the session alive."""

    now_ms: int
    session_id: int

    def __post_init__(self) -> None:
        _check_time("Ping", self.now_ms)
        _check_session("Ping", self.session_id)


@dataclass(frozen=True, slots=True)
class Request:
    """Session ``session_id`` sends ``op`` (which also keeps the session alive)."""

    now_ms: int
    session_id: int
    op: Op

    def __post_init__(self) -> None:
        _check_time("Request", self.now_ms)
        _check_session("Request", self.session_id)
        _require(
            isinstance(self.op, OPS),
            f"Request: op must be a ZooKeeper operation, got {type(self.op).__name__}",
        )


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes: sessions whose deadline is due expire."""

    now_ms: int

    def __post_init__(self) -> None:
        _check_time("Tick", self.now_ms)


Event = OpenSession | CloseSession | Ping | Request | Tick


quicken(globals())  # cheaper constructors (reference/frozen.py)
