"""The records a group coordinator writes to ``__consumer_offsets``.

Keys and values follow Kafka's schemas (GroupMetadataKey/Value, OffsetCommitKey/Value
in ``group-coordinator/src/main/resources/common/message``): key version 2 is a group's
metadata, key version 1 an offset commit; a ``None`` value is a tombstone. A consumer group
(KIP-848, CG-40) writes key versions 3, 5 to 8 and 16 (ConsumerGroup*Key/Value). A record written
by a transaction carries its producer id (Kafka keeps it in the batch header), and the
transaction ends with a control record, :class:`EndTransactionMarker` (GM-57, GM-58).
"""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.frozen import quicken


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


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """Partitions of one topic, by its id: the reference's ids are names (``name~N`` for a
    topic created again, CG-70); a classic group's records name topics."""

    topic_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group_id: str
    version: int = 3


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str
    version: int = 5


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str
    version: int = 6


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str
    version: int = 7


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str
    version: int = 8


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # Kafka's MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    """CG-68: the resolution of one regular expression a group's members subscribe to."""

    group_id: str
    regular_expression: str
    version: int = 16


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int  # the metadata image resolved against (the reference counts its images)
    timestamp: int


ConsumerGroupKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupRegularExpressionKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
)
ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)
CONSUMER_GROUP_KEYS = (
    ConsumerGroupMetadataKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupRegularExpressionKey,
)

NO_PRODUCER_ID = -1  # a record outside any transaction
TRANSACTION_RESULTS = ("COMMIT", "ABORT")


@dataclass(frozen=True, slots=True)
class Record:
    key: GroupMetadataKey | OffsetCommitKey | EndTransactionMarker | ConsumerGroupKey
    # None: a tombstone (or a marker)
    value: GroupMetadataValue | OffsetCommitValue | ConsumerGroupValue | None
    producer_id: int = NO_PRODUCER_ID  # a transactional offset commit's producer, or a marker's


quicken(globals())  # cheaper constructors (reference/frozen.py)
