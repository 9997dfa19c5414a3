"""A consumer group and its members, as the coordinator holds them (Kafka 4.0
``ConsumerGroup`` / ``ConsumerGroupMember``). Partitions are ``(topic, partition)`` pairs."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from coordspec.reference.frozen import quicken
from coordspec.reference.group.records import ConsumerGroupMemberMetadataValue, TopicPartitions
from coordspec.reference.group.state import Group

Partition = tuple[str, int]
Partitions = frozenset[Partition]
NO_PARTITIONS: Partitions = frozenset()

# Kafka's MemberState, by the byte its records carry.
STABLE = 0
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberAssignment(NamedTuple):
    """A member's current assignment: what its current-assignment record carries."""

    state: int
    member_epoch: int
    previous_member_epoch: int
    assigned: Partitions
    pending_revocation: Partitions


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """Immutable: a change is a new member, so copies of a group share its members."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    assigned: Partitions = NO_PARTITIONS
    pending_revocation: Partitions = NO_PARTITIONS

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch

    def assignment(self) -> MemberAssignment:
        return MemberAssignment(
            self.state,
            self.member_epoch,
            self.previous_member_epoch,
            self.assigned,
            self.pending_revocation,
        )

    def changed(self, **changes: Any) -> ConsumerMember:
        """``dataclasses.replace`` at half its cost (every field is an init field)."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return ConsumerMember(**fields)

    def with_metadata(self, value: ConsumerGroupMemberMetadataValue) -> ConsumerMember:
        """This member with the fields of a member-metadata record."""
        return ConsumerMember(
            member_id=self.member_id,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=value.subscribed_topic_names,
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state,
            assigned=self.assigned,
            pending_revocation=self.pending_revocation,
        )

    def with_assignment(
        self,
        state: int,
        member_epoch: int,
        previous_member_epoch: int,
        assigned: Partitions,
        pending_revocation: Partitions,
    ) -> ConsumerMember:
        """This member with the fields of its current-assignment record changed (a
        heartbeat's hot path: cheaper still than ``changed``)."""
        return ConsumerMember(
            member_id=self.member_id,
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.subscribed_topic_names,
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            member_epoch=member_epoch,
            previous_member_epoch=previous_member_epoch,
            state=state,
            assigned=assigned,
            pending_revocation=pending_revocation,
        )


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Partitions] = field(default_factory=dict)  # member id -> target
    # The epoch of the member holding each partition (assigned or pending revocation).
    partition_epochs: dict[Partition, int] = field(default_factory=dict)
    # The epoch each member's rebalance timer was set at (not written: timers are not).
    revoking_epochs: dict[str, int] = field(default_factory=dict)
    # CG-68: each regular expression's topics, as last resolved (ConsumerGroupRegularExpression).
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    # CG-70: the partition count of each subscribed topic, by id, when the target was last
    # computed (Kafka 4.0 writes it as ConsumerGroupPartitionMetadata; the reference keeps it),
    # and the metadata image it was last checked against (a heartbeat looks again only after
    # a new image).
    subscription_metadata: dict[str, int] = field(default_factory=dict)
    metadata_version: int = -1
    # CG-60: the group's offsets, kept as a classic group keeps them (only its offset fields
    # are used), so that one copy of the offset code serves both kinds.
    offset_store: Group | None = None

    def __post_init__(self) -> None:
        if self.offset_store is None:
            self.offset_store = Group(self.group_id)

    @property
    def store(self) -> Group:
        assert self.offset_store is not None
        return self.offset_store

    def copy(self, store: Group | None = None) -> ConsumerGroup:
        """An independent copy, with ``store`` as its offsets (default: a copy of these)."""
        return ConsumerGroup(
            self.group_id,
            self.group_epoch,
            self.assignment_epoch,
            dict(self.members),
            dict(self.static_members),
            dict(self.target),
            dict(self.partition_epochs),
            dict(self.revoking_epochs),
            dict(self.resolved_regexes),
            dict(self.subscription_metadata),
            self.metadata_version,
            self.store.copy() if store is None else store,
        )

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState, as DescribeGroups and ListGroups name it (CG-30)."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def subscription(self, member: ConsumerMember) -> frozenset[str]:
        """CG-66: the topics a member subscribes to: its names, and the topics its regex was
        last resolved to (none while it is unresolved)."""
        names = frozenset(member.subscribed_topic_names)
        regex = member.subscribed_topic_regex
        return names | self.resolved_regexes.get(regex, frozenset()) if regex else names

    def partition_epoch(self, partition: Partition) -> int:
        return self.partition_epochs.get(partition, -1)

    def target_of(self, member_id: str, instance_id: str | None) -> Partitions:
        """A member's target; a static member taking over an instance id gets its
        predecessor's (ConsumerGroup.targetAssignment(memberId, instanceId))."""
        if member_id in self.target:
            return self.target[member_id]
        if instance_id is not None and instance_id in self.static_members:
            return self.target.get(self.static_members[instance_id], NO_PARTITIONS)
        return NO_PARTITIONS


# Both conversions are pure and their results immutable: a heartbeat's records and replies
# mostly repeat a few partition sets, so each conversion is remembered.
@lru_cache(maxsize=4096)
def to_topic_partitions(partitions: Partitions) -> tuple[TopicPartitions, ...]:
    """Grouped by topic, topics and partitions in order (the reference's canonical form)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())


@lru_cache(maxsize=4096)
def from_topic_partitions(topics: tuple[TopicPartitions, ...]) -> Partitions:
    return frozenset((t.topic_id, p) for t in topics for p in t.partitions)


quicken(globals())  # cheaper constructors (reference/frozen.py)
