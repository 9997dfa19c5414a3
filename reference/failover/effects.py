"""Outputs of a broker's coordinator host. A driver executes them in order.

Replies are :class:`coordspec.reference.group.effects.Reply`. Records go to the replicated offsets
partition as :class:`AppendToPartition`; the host predicts the offset, as Kafka's
coordinator runtime does, and the driver must append exactly there or refuse with
:class:`~coordspec.reference.failover.events.AppendFailed`.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.group.effects import Reply
from coordspec.reference.group.records import Record


@dataclass(frozen=True, slots=True)
class AppendToPartition:
    """Append ``records`` as one batch at ``offset`` of the partition this broker leads at
    ``leader_epoch``; the writes it carries complete once the high watermark passes it."""

    partition: int
    leader_epoch: int
    offset: int
    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class LoadPartition:
    """Read the partition's log and answer with :class:`~coordspec.reference.failover.events.LoadGroup`."""

    partition: int
    leader_epoch: int


HostEffect = Reply | AppendToPartition | LoadPartition
