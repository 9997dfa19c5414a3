"""Inputs of the replication model. Each carries ``now_ms``; time moves only when an
event says so.

:class:`~coordspec.reference.replication.controller.Controller` takes ``ControllerStartup``,
``ZkResult``, ``ZkWatch`` and ``ZkSessionExpired``;
:class:`~coordspec.reference.replication.broker.Broker` takes every event here and hands the
ZooKeeper ones for its controller on.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.frozen import quicken
from coordspec.reference.replication.log import Record
from coordspec.reference.replication.messages import ControllerRequest
from coordspec.reference.zookeeper import EventType, Result


@dataclass(frozen=True, slots=True)
class ZkResult:
    """The result of the ZooKeeper operation emitted as ``ZkCall(call_id, op)``."""

    now_ms: int
    call_id: int
    result: Result


@dataclass(frozen=True, slots=True)
class ZkWatch:
    """A watch this session set on ``path`` fired."""

    now_ms: int
    path: str
    type: EventType


@dataclass(frozen=True, slots=True)
class ZkSessionStarted:
    """The broker's (new) ZooKeeper session is open: register, stand for controller."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class ZkSessionExpired:
    """The session is gone (its ephemerals and watches with it); results of calls still
    outstanding will not come."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class ControllerStartup:
    """Stand for controller (the broker sends it once its registration is written)."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class DeliverRequest:
    """A controller's request reaches this broker."""

    now_ms: int
    request: ControllerRequest


@dataclass(frozen=True, slots=True)
class Produce:
    """A client's produce with acks=all of one record to this broker."""

    now_ms: int
    topic: str
    partition: int
    payload_id: int
    value: object = None


@dataclass(frozen=True, slots=True)
class Fetch:
    """A follower's fetch (to its leader) at the leader epoch it follows, with the offset
    and epoch of its log's end (KIP-595's truncation-by-fetch, Kafka 2.7+; see ISR-14)."""

    now_ms: int
    replica_id: int
    topic: str
    partition: int
    leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """The leader's answer to a :class:`Fetch`. ``error`` is a Kafka error name (None if
    none); ``diverging`` is (epoch, end offset) when the follower must truncate first."""

    now_ms: int
    leader_id: int
    topic: str
    partition: int
    leader_epoch: int
    error: str | None
    diverging: tuple[int, int] | None
    base_offset: int  # the fetch offset the records start at
    records: tuple[Record, ...]
    high_watermark: int


@dataclass(frozen=True, slots=True)
class BrokerTick:
    """Time passes: a leader shrinks the ISR of followers that lag too long."""

    now_ms: int


ControllerEvent = ControllerStartup | ZkResult | ZkWatch | ZkSessionExpired
BrokerEvent = (
    ZkSessionStarted
    | ZkSessionExpired
    | ZkResult
    | ZkWatch
    | DeliverRequest
    | Produce
    | Fetch
    | FetchResponse
    | BrokerTick
)


quicken(globals())  # cheaper constructors (reference/frozen.py)
