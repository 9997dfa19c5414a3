"""One offsets partition as a broker hosts it: loading, then serving through its own
group coordinator (Kafka 4.0's ``CoordinatorRuntime.CoordinatorContext``).

A partition the broker does not lead has no ``HostedPartition`` at all, as Kafka removes
the context when it unloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import Request
from coordspec.reference.group.responses import Response


class PartitionState(Enum):
    LOADING = "Loading"  # answers COORDINATOR_LOAD_IN_PROGRESS (Kafka: LOADING)
    SERVING = "Serving"  # loaded: its group coordinator answers (Kafka: ACTIVE)

    def __str__(self) -> str:
        return self.value


@dataclass(slots=True)
class DeferredReply:
    """A write operation's reply, held until the high watermark reaches ``end_offset``.
    ``None`` for a stable OffsetFetch: it reads the offsets once the writes before it are
    committed, which is when Kafka's read of the latest state would be answered."""

    end_offset: int
    request: Request
    response: Response | None


@dataclass(slots=True)
class HostedPartition:
    partition: int
    leader_epoch: int
    state: PartitionState = PartitionState.LOADING
    coordinator: GroupCoordinator | None = None
    # The offset the next append goes to: Kafka's runtime predicts it and reloads when the
    # log disagrees; here a driver that disagrees is misusing the host.
    next_offset: int = 0
    high_watermark: int = 0
    # log offset -> (the coordinator's append id, the batch), awaiting the high watermark
    appends: dict[int, tuple[int, tuple[Record, ...]]] = field(default_factory=dict)
    deferred: list[DeferredReply] = field(default_factory=list)

    @property
    def serving(self) -> bool:
        return self.state is PartitionState.SERVING

    def uncommitted(self) -> bool:
        """Kafka's ``lastCommittedOffset < lastWrittenOffset``."""
        return self.high_watermark < self.next_offset
