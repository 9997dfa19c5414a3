"""The records a group coordinator writes to ``__consumer_offsets``.

Keys and values follow Kafka's schemas (GroupMetadataKey/Value, OffsetCommitKey/Value
in ``group-coordinator/src/main/resources/common/message``): key version 2 is a group's
metadata, key version 1 an offset commit; a ``None`` value is a tombstone. A record written
by a transaction carries its producer id (Kafka keeps it in the batch header), and the
transaction ends with a control record, :class:`EndTransactionMarker` (GM-57, GM-58).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str
    version: int = 2


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...]
    version: int = 3


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int
    version: int = 1


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1  # only in value v1, written when the commit carried a retention

    @property
    def version(self) -> int:
        return 1 if self.expire_timestamp != -1 else 3

    def __deepcopy__(self, memo: dict[int, object]) -> OffsetCommitValue:
        return self  # immutable: copies of a coordinator (the oracle's hypotheses) share it


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The control record that ends a producer's transaction: its offsets become committed
    (``COMMIT``) or are dropped (``ABORT``). It has no value."""

    result: str  # "COMMIT" or "ABORT", Kafka's TransactionResult


NO_PRODUCER_ID = -1  # a record outside any transaction
TRANSACTION_RESULTS = ("COMMIT", "ABORT")


@dataclass(frozen=True, slots=True)
class Record:
    key: GroupMetadataKey | OffsetCommitKey | EndTransactionMarker
    value: GroupMetadataValue | OffsetCommitValue | None  # None: a tombstone (or a marker)
    producer_id: int = NO_PRODUCER_ID  # a transactional offset commit's producer, or a marker's
