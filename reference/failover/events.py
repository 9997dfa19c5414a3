"""Inputs of a broker's coordinator host, besides the group requests and ``Tick`` of
:mod:`coordspec.reference.group.requests`.

Leadership events come from the replication layer (the broker applied a LeaderAndIsr);
``LoadGroup`` answers a :class:`~coordspec.reference.failover.effects.LoadPartition` effect;
``HighWatermarkUpdated`` and ``AppendFailed`` report what became of
:class:`~coordspec.reference.failover.effects.AppendToPartition` effects. Every input carries ``now_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import Request, Tick


def _check(name: str, now_ms: object, partition: object) -> None:
    for field, value in (("now_ms", now_ms), ("partition", partition)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise UsageError(f"{name}: {field} must be a non-negative int, got {value!r}")


@dataclass(frozen=True, slots=True)
class BecomeCoordinator:
    """This broker now leads offsets partition ``partition`` at ``leader_epoch`` (CF-3)."""

    partition: int
    leader_epoch: int
    now_ms: int

    def __post_init__(self) -> None:
        _check("BecomeCoordinator", self.now_ms, self.partition)


@dataclass(frozen=True, slots=True)
class LoadGroup:
    """The partition's log as the leader read it for loading (CF-4): one batch of group
    records per log offset, from offset 0 to the log end offset, and its high watermark."""

    partition: int
    leader_epoch: int
    batches: tuple[tuple[Record, ...], ...]
    high_watermark: int
    now_ms: int

    def __post_init__(self) -> None:
        _check("LoadGroup", self.now_ms, self.partition)
        if not 0 <= self.high_watermark <= len(self.batches):
            raise UsageError(
                f"LoadGroup: high watermark {self.high_watermark} outside the log [0, {len(self.batches)}]"
            )


@dataclass(frozen=True, slots=True)
class ResignCoordinator:
    """This broker follows (or no longer hosts) the partition from ``leader_epoch`` on;
    ``None`` when the partition was deleted (CF-7)."""

    partition: int
    leader_epoch: int | None
    now_ms: int

    def __post_init__(self) -> None:
        _check("ResignCoordinator", self.now_ms, self.partition)


@dataclass(frozen=True, slots=True)
class HighWatermarkUpdated:
    """The leader's high watermark of the partition moved: offsets below it are committed."""

    partition: int
    high_watermark: int
    now_ms: int

    def __post_init__(self) -> None:
        _check("HighWatermarkUpdated", self.now_ms, self.partition)


@dataclass(frozen=True, slots=True)
class AppendFailed:
    """The log refused the append at ``offset`` (and so every later append of this step)."""

    partition: int
    offset: int
    error: ErrorCode
    now_ms: int

    def __post_init__(self) -> None:
        _check("AppendFailed", self.now_ms, self.partition)
        if self.error == ErrorCode.NONE:
            raise UsageError("AppendFailed: error must not be NONE")


HostEvent = (
    Request
    | Tick
    | BecomeCoordinator
    | LoadGroup
    | ResignCoordinator
    | HighWatermarkUpdated
    | AppendFailed
)
