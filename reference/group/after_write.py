"""What the coordinator does once a write it issued is answered, each case as a value.

A handler that appends records says, with one of these values, what must follow when the
append completes; the coordinator keeps the value with the pending append and, on
``AppendCompleted``, dispatches it by its type (``coordinator._AFTER_WRITE``). Because
they are plain data, a coordinator with writes in flight can be deep-copied and the copy
lives on independently (the oracle branches that way). A value names its group by id and
incarnation, so that a write answered after its group was deleted, or reverted and
created again, leaves the group now under that id alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from coordspec.reference.errors import ErrorCode
from coordspec.reference.frozen import quicken
from coordspec.reference.group.consumer.state import ConsumerGroup
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import (
    ConsumerGroupHeartbeat,
    DeleteGroups,
    LeaveGroup,
    OffsetCommit,
    OffsetDelete,
    Protocol,
    TxnOffsetCommit,
)
from coordspec.reference.group.responses import (
    ConsumerGroupHeartbeatResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    TxnOffsetCommitResponse,
)
from coordspec.reference.group.state import Group


@dataclass(frozen=True, slots=True)
class NewGroupWritten:
    """GM-2: the empty-group record of a group that JoinGroup ``request_id`` created."""

    group_id: str
    incarnation: int
    request_id: int | str


@dataclass(frozen=True, slots=True)
class LeaderAssignmentWritten:
    """GM-22/GM-23: the leader's assignment for ``generation_id``."""

    group_id: str
    incarnation: int
    generation_id: int
    assignment: tuple[tuple[str, bytes], ...]  # member id -> assignment, in the written order


@dataclass(frozen=True, slots=True)
class StaticReplacementWritten:
    """GM-6: a static member's new id, written while Stable; a failure restores the old id
    and the settings the member had before its JoinGroup."""

    group_id: str
    incarnation: int
    member_id: str
    old_member_id: str
    instance_id: str
    leader_before: str | None
    generation_id: int
    api_version: int
    old_protocols: tuple[Protocol, ...]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int


@dataclass(frozen=True, slots=True)
class OffsetsWritten:
    """GM-50..GM-52, GM-57: the accepted partitions of a (Txn)OffsetCommit; ``created`` when
    the commit created the (simple) group."""

    group_id: str
    incarnation: int
    created: bool
    request: OffsetCommit | TxnOffsetCommit
    records: tuple[Record, ...]
    response: OffsetCommitResponse | TxnOffsetCommitResponse


@dataclass(frozen=True, slots=True)
class MarkerWritten:
    """GM-58: a transaction's marker; once written, the producer's offsets end with it."""

    producer_id: int
    result: str


@dataclass(frozen=True, slots=True)
class OffsetsDeleted:
    """GM-63: the tombstones of an OffsetDelete, and the answer they wait for."""

    request: OffsetDelete
    records: tuple[Record, ...]
    response: OffsetDeleteResponse


@dataclass(frozen=True, slots=True)
class GroupsDeleted:
    """GM-62: one group's tombstones, of the DeleteGroups request ``request_id``."""

    group_id: str
    request_id: int | str


@dataclass(frozen=True, slots=True)
class OffsetsExpired:
    """GM-55: tombstones for expired offsets, and for the group when it went with them."""

    group_id: str
    incarnation: int
    expired: tuple[tuple[str, int], ...]
    delete_group: bool


@dataclass(frozen=True, slots=True)
class ConsumerGroupWritten:
    """CG-40: the records of a consumer group step, already applied to the group. The request
    (None for a timer's) is answered once they are written; a failed write puts the group
    back as it was (``before``; None: it did not exist), as Kafka reverts its snapshot."""

    group_id: str
    request: ConsumerGroupHeartbeat | LeaveGroup | None
    response: ConsumerGroupHeartbeatResponse | LeaveGroupResponse | None
    before: ConsumerGroup | None


AfterWrite = (
    NewGroupWritten
    | LeaderAssignmentWritten
    | StaticReplacementWritten
    | OffsetsWritten
    | MarkerWritten
    | OffsetsDeleted
    | GroupsDeleted
    | OffsetsExpired
    | ConsumerGroupWritten
)


@dataclass(slots=True)
class Deletion:
    """A DeleteGroups request whose answer waits for its groups' tombstones."""

    request: DeleteGroups
    results: dict[str | None, ErrorCode]
    waiting: set[str]

    def copy(self) -> Deletion:
        return Deletion(self.request, dict(self.results), set(self.waiting))


def same_group(groups: Mapping[str, Group], group_id: str, incarnation: int) -> Group | None:
    """The group a write was for, unless it was deleted or replaced since."""
    group = groups.get(group_id)
    return group if group is not None and group.incarnation == incarnation else None


quicken(globals())  # cheaper constructors (reference/frozen.py)
