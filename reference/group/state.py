"""A classic group and its members, as the coordinator holds them in memory.

Mirrors Kafka 4.x ``ClassicGroup`` / ``ClassicGroupMember``. Members keep join order
(a dict), which is the order the reference offers to :class:`~coordspec.reference.choices.Choices`
where Kafka iterates a hash map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar

from coordspec.reference.choices import Choices
from coordspec.reference.consumer_protocol import MalformedConsumerProtocol, decode_subscription
from coordspec.reference.errors import ErrorCode, InvariantViolation
from coordspec.reference.frozen import quicken
from coordspec.reference.group.records import (
    NO_PRODUCER_ID,
    OffsetCommitKey,
    OffsetCommitValue,
)
from coordspec.reference.group.requests import Protocol
from coordspec.reference.group.responses import JoinGroupMember
from coordspec.reference.group.transitions import EMPTY, GroupState, is_allowed

CONSUMER_PROTOCOL_TYPE = "consumer"


_T = TypeVar("_T")


def _copy_slots(obj: _T) -> _T:
    """A shallow copy of a slotted dataclass instance, without calling its __init__."""
    cls = type(obj)
    other = cls.__new__(cls)
    for name in cls.__slots__:  # type: ignore[attr-defined]
        setattr(other, name, getattr(obj, name))
    return other


@dataclass(frozen=True, slots=True)
class PendingOffset:
    """An offset a transaction wrote, not yet committed or aborted (GM-57)."""

    value: OffsetCommitValue
    position: int  # its record's place in the log (Kafka's record offset)


@dataclass(frozen=True, slots=True)
class Parked:
    """A request held by the coordinator until it can be answered."""

    request_id: int | str
    api_version: int


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    is_new: bool = False

    def copy(self) -> Member:
        """Every field is immutable: a shallow copy is independent."""
        return _copy_slots(self)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol_name: str) -> bytes:
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        raise InvariantViolation(
            "SelectedProtocolSupported", f"member {self.member_id} lacks protocol {protocol_name}"
        )

    def matches(self, protocols: tuple[Protocol, ...]) -> bool:
        """Same names, same order, same metadata bytes (ClassicGroupMember.matches)."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for protocol in self.protocols:
            if protocol.name in candidates:
                return protocol.name
        raise InvariantViolation(
            "SelectedProtocolSupported",
            f"member {self.member_id} supports none of {sorted(candidates)}",
        )

    def has_satisfied_heartbeat(self) -> bool:
        """A member waiting on the coordinator is not expired, unless it is new."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = EMPTY
    previous_state: GroupState = EMPTY
    state_timestamp_ms: int | None = None
    state_cause: str | None = None  # the input that made the last move, as TRANSITIONS names it
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, None] = field(
        default_factory=dict
    )  # ids given out by MEMBER_ID_REQUIRED
    pending_sync: dict[str, None] = field(default_factory=dict)  # members yet to send SyncGroup
    new_member_added: bool = False
    # Whether a write naming this group has completed: Describe/ListGroups read only
    # groups that exist in the committed log, as Kafka reads them at the committed offset.
    in_log: bool = False
    # The initial rebalance's delay and extension budget (Kafka's InitialDelayedJoin).
    in_initial_delay: bool = False
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    # Topics the consumer members subscribed to when this generation formed (None: unknown).
    subscribed_topics: set[str] | None = None
    # The generation whose leader's assignment is in the members' ``assignment``.
    assignment_generation: int | None = None
    offsets: dict[tuple[str, int], OffsetCommitValue] = field(default_factory=dict)
    # Where each committed offset's record is in the log: a transaction that commits after a
    # newer plain commit of the same partition does not replace it (GM-58).
    offset_positions: dict[tuple[str, int], int] = field(default_factory=dict)
    # GM-57: offsets of transactions not yet ended, by producer id. A producer stays listed
    # (its transaction open) when tombstones removed its offsets, until its marker.
    pending_offsets: dict[int, dict[tuple[str, int], PendingOffset]] = field(default_factory=dict)
    # Which of the groups this coordinator created or loaded: a group deleted (or reverted)
    # and created again under the same id is another incarnation.
    incarnation: int = 0

    def copy(self) -> Group:
        """An independent copy: its containers copied, the values in them shared where they
        are immutable (offsets, protocols), its members copied."""
        other = _copy_slots(self)
        other.members = {k: m.copy() for k, m in self.members.items()}
        other.static_members = dict(self.static_members)
        other.pending_members = dict(self.pending_members)
        other.pending_sync = dict(self.pending_sync)
        other.subscribed_topics = (
            None if self.subscribed_topics is None else set(self.subscribed_topics)
        )
        other.offsets = dict(self.offsets)
        other.offset_positions = dict(self.offset_positions)
        other.pending_offsets = {p: dict(o) for p, o in self.pending_offsets.items()}
        return other

    # -- state -----------------------------------------------------------------

    def transition_to(self, target: GroupState, cause: str, now_ms: int) -> None:
        if not is_allowed(self.state, target, cause):
            raise InvariantViolation(
                "ValidTransition",
                f"group {self.group_id!r}: {self.state} -> {target} caused by {cause} is not in TRANSITIONS",
            )
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms
        self.state_cause = cause

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    # -- membership ------------------------------------------------------------

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str, choices: Choices) -> Member | None:
        """Drop a member or a pending member; a removed leader hands over (ClassicGroup.remove)."""
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = choices.leader(list(self.members)) if self.members else None
        self.pending_members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        return member

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID, or None for a known member."""
        if group_instance_id is not None:
            known = self.static_members.get(group_instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
            return None
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.awaiting_join is not None for m in self.members.values()
        )

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols -------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """Protocol names every member supports."""
        members = iter(self.members.values())
        first = next(members, None)
        if first is None:
            return set()
        candidates = {p.name for p in first.protocols}
        for member in members:
            candidates &= {p.name for p in member.protocols}
        return candidates

    def supports_protocols(self, protocol_type: str, protocols: tuple[Protocol, ...]) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        # Kafka counts the members supporting each protocol and compares with the member
        # count: in a group rebalancing with no members left, every protocol qualifies.
        candidates = self.candidate_protocols()
        return any(not self.members or p.name in candidates for p in protocols)

    def select_protocol(self, choices: Choices) -> str:
        """Each member votes for its first candidate; most votes wins (ties: Choices)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best = max(votes.values())
        return choices.protocol([name for name, count in votes.items() if count == best])

    def leader_members(self) -> tuple[JoinGroupMember, ...]:
        """What the leader's JoinGroup response lists: every member's chosen metadata."""
        assert self.protocol_name is not None
        return tuple(
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # -- offsets ---------------------------------------------------------------

    def replay_offset(
        self, key: OffsetCommitKey, value: OffsetCommitValue | None, producer_id: int, position: int
    ) -> None:
        """One offset record, written or loaded (Kafka's ``OffsetMetadataManager.replay``): a
        transaction's offset waits for its marker; a tombstone removes the partition's
        committed offset and every transaction's pending one."""
        partition = (key.topic, key.partition)
        if value is None:
            self.offsets.pop(partition, None)
            self.offset_positions.pop(partition, None)
            for pending in self.pending_offsets.values():
                pending.pop(partition, None)
        elif producer_id == NO_PRODUCER_ID:
            self.offsets[partition] = value
            self.offset_positions[partition] = position
        else:
            self.pending_offsets.setdefault(producer_id, {})[partition] = PendingOffset(
                value, position
            )

    def end_transaction(self, producer_id: int, result: str) -> None:
        """GM-58: a marker ends the producer's transaction. On COMMIT each pending offset
        becomes the committed one unless a newer record already committed that partition."""
        pending = self.pending_offsets.pop(producer_id, None)
        if pending is None or result != "COMMIT":
            return
        for partition, offset in pending.items():
            current = self.offset_positions.get(partition)
            if current is None or offset.position > current:
                self.offsets[partition] = offset.value
                self.offset_positions[partition] = offset.position

    def has_pending_offset(self, partition: tuple[str, int]) -> bool:
        return any(partition in pending for pending in self.pending_offsets.values())

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """GM-63: by the generation's subscriptions when known; unknown ones count as
        subscribed for a consumer group (ClassicGroup.isSubscribedToTopic)."""
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the consumer members subscribe to; None when unknown (ClassicGroup.computeSubscribedTopics)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            subscribed = _subscribed_topics(member.metadata(self.protocol_name))
            if subscribed is None:
                return None
            topics.update(subscribed)
        return topics


# Members rejoin with the same metadata, generation after generation: decoding it once is
# enough (a pure function of the bytes).
@lru_cache(maxsize=4096)
def _subscribed_topics(metadata: bytes) -> tuple[str, ...] | None:
    """The topics of a consumer subscription; None if it is malformed."""
    try:
        return decode_subscription(metadata).topics
    except MalformedConsumerProtocol:
        return None


quicken(globals())  # cheaper constructors (reference/frozen.py)
