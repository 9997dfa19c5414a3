"""Kafka's sticky assignment (AbstractStickyAssignor) and StickyAssignor (protocol "sticky").

The sticky assignment balances partition counts first and, within that, keeps each
partition with the member that owned it before. It has two algorithms:

* the constrained one, used when every member subscribes to the same topics: each member
  keeps up to its quota (``floor`` or ``ceil`` of partitions / members) of what it owned,
  then the rest is dealt round-robin to the members still under quota;
* the general one, used otherwise: keep what is still valid, give each unassigned
  partition to the least-loaded member that can take it, then move partitions from the
  most- to the less-loaded members until no move improves the balance, keeping the result
  only if it is better balanced than before the moves.

What a member owned comes from ``member_data``: StickyAssignor (eager) reads it from its
own user data (``StickyAssignorUserData``: the previous assignment and, from v1, the
generation); CooperativeStickyAssignor (``cooperative_sticky``) reads the subscription's
``owned_partitions`` and ``generation_id``. When two members claim the same partition the
higher generation keeps it, and a tie invalidates it for both.

Partition counts are first restricted to subscribed topics with at least one partition,
as Kafka's leader does before calling the assignor (``AbstractPartitionAssignor.assign``).

Rack-aware assignment (KIP-881) needs the racks of each partition's replicas, which the
``Assignor`` interface does not carry. Kafka takes the path implemented here whenever no
partition racks are known, so ``Subscription.rack_id`` is ignored.

Iteration order. Kafka's result depends on the iteration order of some Java hash maps
and sets: which members keep ``ceil`` quotas (the owned-partitions map), which claim wins
a generation tie (the subscriptions map), and which partition moves back when a move is
undone (a ``HashSet<TopicPartition>``). Instead of inventing an order, this module
reproduces OpenJDK's: ``JavaHashOrder`` models a ``java.util.HashMap`` (String and
TopicPartition hash codes, bucket index, capacity growth, insertion order within a
bucket). The subscriptions map is taken to be filled in the order of the ``subscriptions``
mapping given to ``assign``, as Kafka's leader fills it in JoinGroup member order. Not
modelled: buckets that Java turns into trees (8+ colliding keys in a table of 64+ slots).

Kafka's quirks are kept, since the reference must give Kafka's output for the same input:
members with no topics met before the first member with topics pass for "identical
subscriptions" (and get partitions of topics they do not subscribe to); a repeated topic
can make different subscriptions compare equal; an owned partition past the topic's
partition count is kept, and can make a partition go to two members; and where Kafka fails
with a NullPointerException (a previous-generation owner that was set aside), this raises
``StickyAssignorError``. One difference: Kafka's assignor object remembers the highest
generation it has seen across rebalances, while this one, being pure, looks only at the
subscriptions it is given.
"""

from __future__ import annotations

import bisect
import struct
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from coordspec.reference.assignors.base import Assignment, TopicPartition
from coordspec.reference.assignors.range import java_string_key
from coordspec.reference.consumer_protocol import Subscription

DEFAULT_GENERATION = -1
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
_INT32 = 0xFFFFFFFF


class StickyAssignorError(RuntimeError):
    """Where Kafka's sticky assignment throws: the constrained algorithm running out of
    members to fill (an IllegalStateException Kafka considers unreachable), or the general
    one moving a partition back to a member it set aside (a NullPointerException)."""


# --- Java hash ordering ---------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit value."""
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & _INT32
    return h


def topic_partition_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode()``: 31 * (31 + partition) + topic.hashCode()."""
    return (31 * ((31 + tp[1]) & _INT32) + java_string_hash(tp[0])) & _INT32


class JavaHashOrder(Generic[K]):
    """The iteration order of a ``java.util.HashMap`` (or ``HashSet``) created with the
    default capacity: keys go by bucket (spread hash & (capacity - 1)), and within a bucket
    by insertion, since Java appends to a bucket's chain and resizing keeps relative order.
    Capacity starts at 16 and doubles when the size passes 3/4 of it, or when a chain grows
    past 8 in a table smaller than 64 (Java resizes instead of building a tree there)."""

    def __init__(self, hash_code: Callable[[K], int]) -> None:
        self._hash_code = hash_code
        self._capacity = 16
        self._spread: dict[K, int] = {}
        self._inserted: dict[K, int] = {}
        self._chain_lengths: Counter[int] = Counter()
        self._next_insertion = 0

    def __len__(self) -> int:
        return len(self._inserted)

    def add(self, key: K) -> None:
        if key in self._inserted:
            return
        h = self._hash_code(key)
        self._spread[key] = h ^ (h >> 16)
        self._inserted[key] = self._next_insertion
        self._next_insertion += 1
        bucket = self._bucket(key)
        self._chain_lengths[bucket] += 1
        if self._chain_lengths[bucket] > 8 and self._capacity < 64:
            self._resize()
        if len(self._inserted) > self._capacity * 3 // 4:
            self._resize()

    def remove(self, key: K) -> None:
        if key in self._inserted:
            self._chain_lengths[self._bucket(key)] -= 1
            del self._inserted[key]
            del self._spread[key]

    def first(self) -> K:
        return min(self._inserted, key=self._position)

    def ordered(self) -> list[K]:
        return sorted(self._inserted, key=self._position)

    def _bucket(self, key: K) -> int:
        return self._spread[key] & (self._capacity - 1)

    def _position(self, key: K) -> tuple[int, int]:
        return (self._bucket(key), self._inserted[key])

    def _resize(self) -> None:
        self._capacity *= 2
        self._chain_lengths = Counter(self._bucket(k) for k in self._inserted)


def java_hash_map_order(
    keys: Iterable[str], hash_code: Callable[[str], int] = java_string_hash
) -> list[str]:
    """The order in which a default-capacity Java HashMap filled with ``keys`` (in this
    order) iterates them."""
    table = JavaHashOrder(hash_code)
    for key in keys:
        table.add(key)
    return table.ordered()


# --- StickyAssignorUserData --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberData:
    """What the leader learns about a member's previous assignment (Kafka's MemberData)."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None  # None: the member did not say (Optional.empty() in Kafka)


class _Truncated(Exception):
    pass


class _UserDataReader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _Truncated
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def array_size(self) -> int:
        # Kafka's ArrayOf: a negative size or one larger than the bytes left is an error.
        n = self.int32()
        if n < 0 or n > len(self.data) - self.pos:
            raise _Truncated
        return n

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise _Truncated
        # Java decodes malformed UTF-8 with U+FFFD instead of failing.
        return self._take(n).decode("utf-8", "replace")

    def topic_assignments(self) -> list[TopicPartition]:
        partitions: list[TopicPartition] = []
        for _ in range(self.array_size()):
            topic = self.string()
            partitions.extend((topic, self.int32()) for _ in range(self.array_size()))
        return partitions


def _grouped_topic_order(topics: Iterable[str]) -> list[str]:
    """Iteration order of the HashMap that Kafka's groupPartitionsByTopic fills with
    ``computeIfAbsent(topic)``, called once per partition. Unlike ``put``, that call puts a
    new key at the head of its bucket, grows the table before inserting (when the size
    already exceeds 3/4 of the capacity) and resizes for a chain of 8 (not 9)."""
    capacity = 16
    spread: dict[str, int] = {}
    inserted: dict[str, int] = {}
    chains: Counter[int] = Counter()
    for topic in topics:
        if len(inserted) > capacity * 3 // 4:
            capacity *= 2
            chains = Counter(spread[t] & (capacity - 1) for t in inserted)
        if topic in inserted:
            continue
        h = java_string_hash(topic)
        spread[topic] = h ^ (h >> 16)
        inserted[topic] = len(inserted)
        bucket = spread[topic] & (capacity - 1)
        chains[bucket] += 1
        if chains[bucket] >= 8 and capacity < 64:
            capacity *= 2
            chains = Counter(spread[t] & (capacity - 1) for t in inserted)
    return sorted(inserted, key=lambda t: (spread[t] & (capacity - 1), -inserted[t]))


def encode_user_data(
    partitions: Iterable[TopicPartition], generation: int, version: int = 1
) -> bytes:
    """StickyAssignor's subscription user data, byte for byte as Kafka writes it: the
    partitions grouped by topic (topics in the order of Kafka's grouping HashMap, each
    topic's partitions in the given order), then, in v1 (what Kafka sends), the
    generation. v0 is what members older than Kafka 2.3 send."""
    partitions = list(partitions)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = [struct.pack(">i", len(by_topic))]
    for topic in _grouped_topic_order(topic for topic, _ in partitions):
        raw = topic.encode()
        out.append(struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(by_topic[topic])))
        out.extend(struct.pack(">i", p) for p in by_topic[topic])
    if version >= 1:
        out.append(struct.pack(">i", generation))
    return b"".join(out)


def decode_user_data(data: bytes | None) -> MemberData:
    """Kafka's StickyAssignor.memberData: try v1 (partitions + generation), then v0
    (partitions only, no generation); bytes that parse as neither mean "owned nothing,
    generation -1". Bytes after the parsed fields are ignored, as Kafka ignores them."""
    if not data:
        return MemberData((), None)
    try:
        reader = _UserDataReader(data)
        partitions = reader.topic_assignments()
        return MemberData(tuple(partitions), reader.int32())
    except _Truncated:
        pass
    try:
        return MemberData(tuple(_UserDataReader(data).topic_assignments()), None)
    except _Truncated:
        return MemberData((), DEFAULT_GENERATION)


# --- the shared algorithm ----------------------------------------------------------------


@dataclass
class StickyOutcome:
    """An assignment with what Kafka's assignor keeps on the side (for tests and callers
    that need it). ``assignment`` lists are in Kafka's internal order, not sorted."""

    assignment: dict[str, list[TopicPartition]]
    # Kafka's partitionsTransferringOwnership: partitions that move from a previous owner,
    # with their new owner. Computed only by the constrained algorithm; None otherwise.
    partitions_transferring_ownership: dict[TopicPartition, str] | None
    movements: _PartitionMovements | None = None
    # Cooperative only: partitions left out of the assignment until their owner revokes them.
    withheld: dict[TopicPartition, str] = field(default_factory=dict)

    def is_sticky(self) -> bool:
        """Kafka's isSticky(): no partition of a topic moved both from A to B and from B to A."""
        return self.movements is None or self.movements.is_sticky()

    def sorted_assignment(self) -> Assignment:
        return {member_id: sorted(tps) for member_id, tps in self.assignment.items()}


def wire_generation(subscription: Subscription) -> int:
    """The subscription's own generation field as Kafka reads it (negative = absent = -1)."""
    return subscription.generation_id if subscription.generation_id >= 0 else DEFAULT_GENERATION


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Callable[[Subscription], MemberData],
) -> StickyOutcome:
    if not subscriptions:
        return StickyOutcome({}, {})
    counts = _subscribed_partition_counts(partitions_per_topic, subscriptions)
    members = java_hash_map_order(subscriptions)  # Kafka's iteration order of the subscriptions map
    data = {m: member_data(subscriptions[m]) for m in members}
    previous = _previous_ownership(counts, members, subscriptions, data)
    if previous.all_subscriptions_equal:
        builder = _ConstrainedAssignment(counts, previous.owned, previous.claimed_by_many)
        return StickyOutcome(builder.build(), builder.transferring)
    general = _GeneralAssignment(
        counts, previous.owned, members, subscriptions, data, previous.max_generation
    )
    return StickyOutcome(general.build(), None, general.movements)


def _subscribed_partition_counts(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> dict[str, int]:
    subscribed = {topic for sub in subscriptions.values() for topic in sub.topics}
    return {topic: n for topic, n in partitions_per_topic.items() if topic in subscribed and n > 0}


@dataclass
class _PreviousOwnership:
    owned: dict[
        str, list[TopicPartition]
    ]  # member -> partitions it keeps a claim on, in member order
    claimed_by_many: set[TopicPartition]  # claimed by several members of the same generation
    all_subscriptions_equal: bool
    max_generation: int


def _remove_first(items: list[T], item: T) -> None:
    if item in items:
        items.remove(item)


def _previous_ownership(
    counts: Mapping[str, int],
    members: list[str],
    subscriptions: Mapping[str, Subscription],
    data: Mapping[str, MemberData],
) -> _PreviousOwnership:
    """Kafka's allSubscriptionsEqual, which also settles conflicting ownership claims.

    Two Kafka quirks are kept on purpose. The first member's topics become the reference
    only once non-empty, so members with no topics that come before it count as "equal".
    And the generation a claim is compared against is the other member's subscription
    field, not its member data (they differ for StickyAssignor, whose member data comes
    from its user data)."""
    equal = True
    reference_topics: set[str] = set()
    claimant: dict[TopicPartition, str] = {}
    owned: dict[str, list[TopicPartition]] = {}
    claimed_by_many: set[TopicPartition] = set()
    max_generation = DEFAULT_GENERATION
    for member in members:
        topics = subscriptions[member].topics
        if not reference_topics:
            reference_topics.update(topics)
        elif equal and not (
            len(topics) == len(reference_topics) and reference_topics.issuperset(topics)
        ):
            equal = False
        generation = data[member].generation
        generation = DEFAULT_GENERATION if generation is None else generation
        max_generation = max(max_generation, generation)
        mine = owned[member] = []
        for tp in data[member].partitions:
            if tp[0] not in counts:
                continue
            other = claimant.get(tp)
            if other is None:
                mine.append(tp)
                claimant[tp] = member
                continue
            other_generation = wire_generation(subscriptions[other])
            if generation == other_generation:
                claimed_by_many.add(tp)
                _remove_first(owned[other], tp)
                claimant[tp] = member
            elif generation > other_generation:
                mine.append(tp)
                _remove_first(owned[other], tp)
                claimant[tp] = member
    return _PreviousOwnership(owned, claimed_by_many, equal, max_generation)


# --- constrained algorithm (identical subscriptions) ------------------------------------


class _ConstrainedAssignment:
    def __init__(
        self,
        counts: Mapping[str, int],
        owned: dict[str, list[TopicPartition]],
        claimed_by_many: set[TopicPartition],
    ) -> None:
        self.counts = counts
        self.owned = owned
        self.claimed_by_many = claimed_by_many
        total = sum(counts.values())
        self.min_quota, self.expected_over_min = divmod(total, len(owned))
        self.max_quota = self.min_quota + (1 if self.expected_over_min else 0)
        self.over_min = 0  # members holding max_quota (only counted when max_quota > min_quota)
        self.under_min: list[str] = []  # members that still need partitions to reach min_quota
        self.at_min: list[str] = []  # members at min_quota that may still take one more
        self.assignment: dict[str, list[TopicPartition]] = {m: [] for m in owned}
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> dict[str, list[TopicPartition]]:
        kept = self._keep_owned()
        unassigned = self._unassigned(kept)
        self.under_min.sort(key=java_string_key)
        self.at_min.sort(key=java_string_key)
        self._deal_round_robin(unassigned)
        self._check_all_filled()
        return self.assignment

    def _keep_owned(self) -> list[TopicPartition]:
        """Each member keeps what it owned, up to its quota. Members are visited in Java
        HashMap order: the first ones owning enough take the ceil quotas."""
        kept: list[TopicPartition] = []
        for member, owned in self.owned.items():
            candidates = sorted(owned, key=lambda tp: (tp[1], java_string_key(tp[0])))
            candidates = [tp for tp in candidates if tp not in self.claimed_by_many]
            if len(candidates) < self.min_quota:
                quota = len(candidates)
                self.under_min.append(member)
            elif len(candidates) >= self.max_quota and self.over_min < self.expected_over_min:
                quota = self.max_quota
                self.over_min += 1
                if self.over_min == self.expected_over_min:
                    self.at_min.clear()  # no one else may go above min_quota now
            else:
                quota = self.min_quota
                if self.over_min < self.expected_over_min:
                    self.at_min.append(member)
            self.assignment[member].extend(candidates[:quota])
            kept.extend(candidates[:quota])
            for tp in candidates[quota:]:
                self.maybe_revoked[tp] = member
        return kept

    def _unassigned(self, kept: list[TopicPartition]) -> list[TopicPartition]:
        """All partitions, topics in name order, minus ``kept``: Kafka walks both sorted
        lists in step. A kept partition that does not exist (a number past the topic's
        count) stalls the walk, and every later partition counts as unassigned; kept as is."""
        kept_sorted = sorted(kept, key=lambda tp: (java_string_key(tp[0]), tp[1]))
        all_partitions = [
            (t, p) for t in sorted(self.counts, key=java_string_key) for p in range(self.counts[t])
        ]
        return _difference_in_step(all_partitions, kept_sorted)

    def _deal_round_robin(self, unassigned: list[TopicPartition]) -> None:
        """Deal partitions to the members under min_quota in turn; once none is left, to the
        members at min_quota (first come, first served) until enough reach max_quota."""
        cursor = 0  # position of a Java iterator over under_min, restarted when exhausted
        for tp in unassigned:
            from_under_min = True
            if cursor < len(self.under_min):
                member = self.under_min[cursor]
                cursor += 1
            elif not self.under_min and not self.at_min:
                raise StickyAssignorError("No more unfilled consumers to be assigned.")
            elif not self.under_min:
                member, from_under_min = self.at_min.pop(0), False
            else:
                member, cursor = self.under_min[0], 1
            count = self._assign_new(tp, member)
            if count == self.min_quota and from_under_min:  # members at min_quota never get here
                cursor -= 1
                del self.under_min[cursor]
                self.at_min.append(member)
            elif count == self.max_quota:
                self.over_min += 1

    def _assign_new(self, tp: TopicPartition, member: str) -> int:
        self.assignment[member].append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != member) or tp in self.claimed_by_many:
            self.transferring[tp] = member
        return len(self.assignment[member])

    def _check_all_filled(self) -> None:
        if not self.under_min:
            return
        if self.over_min != self.expected_over_min:
            raise StickyAssignorError(
                "We haven't reached the expected number of members with "
                "more than the minQuota partitions, but no more partitions to be assigned"
            )
        for member in self.under_min:
            if len(self.assignment[member]) != self.min_quota:
                raise StickyAssignorError(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned"
                )


def _difference_in_step(
    all_sorted: list[TopicPartition], subset_sorted: list[TopicPartition]
) -> list[TopicPartition]:
    result, i = [], 0
    for tp in all_sorted:
        if i < len(subset_sorted) and subset_sorted[i] == tp:
            i += 1
        else:
            result.append(tp)
    return result


# --- general algorithm (differing subscriptions) -----------------------------------------


class _PartitionMovements:
    """Kafka's PartitionMovements: for each moved partition, where it came from and where it
    is now, grouped by topic and (source, destination) pair. When a partition is about to
    move back along a pair some partition already travelled the other way, Kafka moves that
    one instead (the first of a HashSet, hence the Java set order)."""

    def __init__(self) -> None:
        self._pair_of: dict[TopicPartition, tuple[str, str]] = {}
        self._by_topic: dict[str, dict[tuple[str, str], JavaHashOrder[TopicPartition]]] = {}

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self._pair_of:
            source, _ = self._remove_record(tp)
            if source != new:  # moving back to where it started erases the record
                self._add_record(tp, (source, new))
        else:
            self._add_record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        pairs = self._by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self._pair_of:
            old = self._pair_of[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()

    def is_sticky(self) -> bool:
        # Kafka searches for cycles but only reports those of length two.
        return not any(
            (dst, src) in pairs for pairs in self._by_topic.values() for src, dst in pairs
        )

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self._pair_of.pop(tp)
        pairs = self._by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self._by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._pair_of[tp] = pair
        pairs = self._by_topic.setdefault(tp[0], {})
        pairs.setdefault(pair, JavaHashOrder(topic_partition_hash)).add(tp)


class _MembersBySize:
    """Kafka's sortedCurrentSubscriptions: members ordered by (partition count, member id).
    Like the TreeSet it models, a member must be taken out before its count changes."""

    def __init__(self, assignment: dict[str, list[TopicPartition]]) -> None:
        self._assignment = assignment
        self._entries: list[tuple[int, bytes, str]] = []
        self._entry_of: dict[str, tuple[int, bytes, str]] = {}

    def add(self, member: str) -> None:
        if member not in self._entry_of:
            entry = (len(self._assignment[member]), java_string_key(member), member)
            bisect.insort(self._entries, entry)
            self._entry_of[member] = entry

    def remove(self, member: str) -> None:
        entry = self._entry_of.pop(member, None)
        if entry is not None:
            del self._entries[bisect.bisect_left(self._entries, entry)]

    def first(self) -> str:
        return self._entries[0][2]

    def last(self) -> str:
        return self._entries[-1][2]

    def __iter__(self) -> Iterator[str]:
        # Callers stop iterating as soon as they change the set.
        return (entry[2] for entry in self._entries)


def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    """Sum of |size(a) - size(b)| over all pairs of members (0 = perfectly balanced)."""
    sizes = sorted(len(tps) for tps in assignment.values())
    return sum((2 * i - len(sizes) + 1) * size for i, size in enumerate(sizes))


class _GeneralAssignment:
    def __init__(
        self,
        counts: Mapping[str, int],
        owned: dict[str, list[TopicPartition]],
        members: list[str],
        subscriptions: Mapping[str, Subscription],
        data: Mapping[str, MemberData],
        max_generation: int,
    ) -> None:
        self.counts = counts
        self.total = sum(counts.values())
        self.subscriptions = subscriptions
        self.members = members
        self.data = data
        self.max_generation = max_generation
        self.current = owned  # member -> partitions, mutated into the result
        self.topic_members: dict[str, list[str]] = {topic: [] for topic in counts}
        self.member_topics: dict[str, list[str]] = {}
        for member in members:
            topics = [t for t in subscriptions[member].topics if t in counts]
            self.member_topics[member] = topics
            for topic in topics:
                self.topic_members[topic].append(member)
        self.member_topic_sets = {m: set(ts) for m, ts in self.member_topics.items()}
        self.owner: dict[TopicPartition, str] = {
            tp: m for m, tps in self.current.items() for tp in tps
        }
        # topics with fewer potential members first, then by name
        topic_order = sorted(counts, key=lambda t: (len(self.topic_members[t]), java_string_key(t)))
        self.sorted_partitions = [(t, p) for t in topic_order for p in range(counts[t])]
        self.by_size = _MembersBySize(self.current)
        self.movements = _PartitionMovements()
        self.revocation_required = False

    def build(self) -> dict[str, list[TopicPartition]]:
        previous = self._previous_generation_owners()
        kept = self._keep_owned()
        unassigned = self._unassigned(kept)
        for member in self.current:
            self.by_size.add(member)
        self._balance(previous, unassigned)
        return self.current

    def _previous_generation_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """Owners from generations older than the newest: each partition's most recent one
        (the first met, in subscriptions order, among equals). A partition moved away from
        it is moved back when that owner is 2+ partitions lighter."""
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for member in self.members:
            md = self.data[member]
            if md.generation is not None and md.generation < self.max_generation:
                generation = md.generation
            elif md.generation is None and self.max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in md.partitions:
                if tp not in previous or generation > previous[tp][1]:
                    previous[tp] = (member, generation)
        return previous

    def _keep_owned(self) -> list[TopicPartition]:
        """Drop owned partitions of topics the owner no longer subscribes to (such a drop
        rules out the cheaper balancing pass later); everything else stays where it is."""
        kept: list[TopicPartition] = []
        for member, tps in self.current.items():
            topics = self.subscriptions[member].topics
            still_valid = []
            for tp in tps:
                if tp[0] in topics:
                    still_valid.append(tp)
                else:
                    self.revocation_required = True
            tps[:] = still_valid
            kept.extend(still_valid)
        return kept

    def _unassigned(self, kept: list[TopicPartition]) -> list[TopicPartition]:
        if not kept:
            return list(self.sorted_partitions)
        kept_sorted = sorted(
            kept, key=lambda tp: (len(self.topic_members[tp[0]]), java_string_key(tp[0]), tp[1])
        )
        return _difference_in_step(self.sorted_partitions, kept_sorted)

    # balancing

    def _balance(
        self, previous: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]
    ) -> None:
        initializing = not self.current[self.by_size.last()]
        for tp in unassigned:
            if self.topic_members[tp[0]]:
                self._assign_to_least_loaded(tp)

        # Only topics with 2+ potential members and members that could change take part.
        movable = {t for t, ms in self.topic_members.items() if len(ms) >= 2}
        self.sorted_partitions = [tp for tp in self.sorted_partitions if tp[0] in movable]
        unassigned = [tp for tp in unassigned if tp[0] in movable]
        fixed: dict[str, list[TopicPartition]] = {}
        for member in self.member_topics:
            if not self._can_member_change(member, movable):
                self.by_size.remove(member)
                fixed[member] = self.current.pop(member)

        before = {m: list(tps) for m, tps in self.current.items()}
        owner_before = dict(self.owner)
        if not self.revocation_required:
            self._reassign_until_balanced(
                unassigned, previous
            )  # first try moving only new partitions
        moved = self._reassign_until_balanced(self.sorted_partitions, previous)
        # Keep the moves only if they improved the balance (moves from the first pass never
        # trigger this check). Kafka does not roll back its movement records either.
        if not initializing and moved and _balance_score(self.current) >= _balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.owner = owner_before

        for member, tps in fixed.items():
            self.current[member] = tps
            self.by_size.add(member)

    def _assign_to_least_loaded(self, tp: TopicPartition) -> None:
        for member in self.by_size:
            if tp[0] in self.member_topic_sets[member]:
                self.by_size.remove(member)
                self.current[member].append(tp)
                self.owner[tp] = member
                self.by_size.add(member)
                return

    def _max_size(self, member: str) -> int:
        topics = self.member_topics[member]
        if len(topics) == len(self.counts):
            return self.total
        return sum(self.counts[t] for t in topics)

    def _can_member_change(self, member: str, movable: set[str]) -> bool:
        tps = self.current[member]
        return len(tps) < self._max_size(member) or any(tp[0] in movable for tp in tps)

    def _is_balanced(self) -> bool:
        """Counts differ by at most one, or no member could take a partition from a member
        holding 2+ more without breaking the balance."""
        if len(self.current[self.by_size.first()]) >= len(self.current[self.by_size.last()]) - 1:
            return True
        # Kafka looks at every partition of the member's topics that the member does not
        # hold; the member's own partitions never pass the test (n + 1 < n), so comparing
        # with the most loaded holder of each topic gives the same answer, faster.
        most_loaded_holder: dict[str, int] = {}
        for tps in self.current.values():
            for t, p in tps:
                if 0 <= p < self.counts[t]:
                    most_loaded_holder[t] = max(most_loaded_holder.get(t, 0), len(tps))
        for member in self.by_size:
            size = len(self.current[member])
            if size == self._max_size(member):
                continue
            if any(size + 1 < most_loaded_holder.get(t, 0) for t in self.member_topics[member]):
                return False
        return True

    def _reassign_until_balanced(
        self, partitions: list[TopicPartition], previous: dict[TopicPartition, tuple[str, int]]
    ) -> bool:
        """Sweep ``partitions`` moving each from a member holding 2+ more than some other
        potential member, until a sweep moves nothing. Returns whether anything moved."""
        moved = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                size = len(self.current[self.owner[tp]])
                if tp in previous and size > len(self._current_of(previous[tp][0])) + 1:
                    self._reassign(tp, previous[tp][0])  # back to its previous-generation owner
                    moved = modified = True
                    continue
                if any(size > len(self.current[other]) + 1 for other in self.topic_members[tp[0]]):
                    self._reassign(tp, self._least_loaded_for(tp[0]))
                    moved = modified = True
            if not modified:
                return moved

    def _current_of(self, member: str) -> list[TopicPartition]:
        if member not in self.current:
            # The previous owner is a member set aside as unable to change (say, it now
            # subscribes to nothing). Kafka fails here with a NullPointerException.
            raise StickyAssignorError(
                f"previous owner {member} of a movable partition is not taking part in the rebalance"
            )
        return self.current[member]

    def _least_loaded_for(self, topic: str) -> str:
        return next(m for m in self.by_size if topic in self.member_topic_sets[m])

    def _reassign(self, tp: TopicPartition, new_owner: str) -> None:
        tp = self.movements.partition_to_move(tp, self.owner[tp], new_owner)
        old_owner = self.owner[tp]
        self.by_size.remove(old_owner)
        self.by_size.remove(new_owner)
        self.movements.move(tp, old_owner, new_owner)
        self.current[old_owner].remove(tp)
        self.current[new_owner].append(tp)
        self.owner[tp] = new_owner
        self.by_size.add(new_owner)
        self.by_size.add(old_owner)


# --- the assignor --------------------------------------------------------------------------


class StickyAssignor:
    """Kafka's StickyAssignor: eager protocol; ownership comes from the member's user data."""

    name = "sticky"

    def member_data(self, subscription: Subscription) -> MemberData:
        return decode_user_data(subscription.user_data)

    def assign_with_details(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> StickyOutcome:
        return sticky_assign(partitions_per_topic, subscriptions, self.member_data)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        return self.assign_with_details(partitions_per_topic, subscriptions).sorted_assignment()
