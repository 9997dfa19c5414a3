"""Kafka's server-side ``uniform`` assignor (``UniformAssignor``), the default of KIP-848
consumer groups. Balance first, then stickiness: partition counts differ by at most one
where the subscriptions allow it, and within that each member keeps what it had.

Two algorithms, chosen by the subscription type:

* homogeneous (``UniformHomogeneousAssignmentBuilder``): every member has a quota,
  ``total // members``, and the first ``total % members`` members one more. Each member
  keeps what it had up to its quota; the partitions nobody holds and the ones given up are
  then dealt, in order, to the members under quota.
* heterogeneous (``UniformHeterogeneousAssignmentBuilder``): each member keeps what it had
  of the topics it still subscribes to. The unassigned partitions go, topic by topic, to
  the topic's least-loaded subscribers. Then, topic by topic, partitions move from the
  most- to the least-loaded subscribers until the counts of each topic's subscribers
  differ by at most one, for at most 16 passes over the topics. Topics are taken in
  descending order of partitions per subscriber, then ascending subscriber count, then name.

Iteration order: Kafka iterates the members, the subscribed topics and a member's
assigned topics in hash-map order, so its result may be any of those for some order of
member ids and topic ids. The reference takes Java's string order for all three (and the
partitions of a topic ascending), which is one of them. The heterogeneous algorithm breaks
its ties by topic id in Kafka and by topic name here.
"""

from __future__ import annotations

from itertools import repeat

from coordspec.reference.assignors.range import java_string_key
from coordspec.reference.assignors.server.spec import (
    Assignment,
    GroupSpec,
    SubscriptionType,
    check,
    in_java_order,
    known_subscriptions,
)

MAX_BALANCE_PASSES = 16  # Kafka's MAX_ITERATION_COUNT


def assign(spec: GroupSpec) -> Assignment:
    """SA-1, SA-3 … SA-5: the uniform assignor's target assignment."""
    check(spec)
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
        target = _homogeneous(spec)
    else:
        target = _Heterogeneous(spec).build()
    return {m: target.get(m, {}) for m in spec.members}


def _homogeneous(spec: GroupSpec) -> Assignment:
    """SA-3."""
    member_ids = in_java_order(spec.members)
    if not member_ids:
        return {}
    topics = known_subscriptions(spec, member_ids[0])
    held: dict[str, set[int]] = {}
    for member in spec.members.values():
        for topic, partitions in member.assignment.items():
            held.setdefault(topic, set()).update(partitions)
    unassigned = [
        (t, p) for t in topics for p in sorted(set(range(spec.topics[t])) - held.get(t, set()))
    ]
    quota, extra = divmod(sum(spec.topics[t] for t in topics), len(member_ids))

    subscribed = set(topics)
    target: Assignment = {}
    room: list[tuple[str, int]] = []  # members under quota, and by how much
    for i, member_id in enumerate(member_ids):
        left = quota + (1 if i < extra else 0)
        assignment = spec.members[member_id].assignment
        kept: dict[str, frozenset[int]] = {}
        for topic in in_java_order(t for t in assignment if t in subscribed):
            ordered = sorted(assignment[topic])
            keep, give_up = ordered[:left], ordered[left:]
            if keep:
                kept[topic] = frozenset(keep)
            unassigned.extend(zip(repeat(topic), give_up))
            left -= len(keep)
        target[member_id] = kept
        if left > 0:
            room.append((member_id, left))

    # The quotas add up to the partitions, so the room left is exactly what is unassigned.
    next_partition = 0
    for member_id, left in room:
        given: dict[str, list[int]] = {}
        for topic, p in unassigned[next_partition : next_partition + left]:
            given.setdefault(topic, []).append(p)
        for topic, dealt in given.items():
            target[member_id][topic] = target[member_id].get(topic, frozenset()).union(dealt)
        next_partition += left
    return target


class _Heterogeneous:
    """SA-4. Members are numbered by their place in Java string order; Kafka numbers them
    in its iteration order and breaks ties between equally loaded members by that number."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.member_ids = in_java_order(spec.members)
        self.subscriptions = [set(known_subscriptions(spec, m)) for m in self.member_ids]
        self.subscribers: dict[str, list[int]] = {}
        for index, topics in enumerate(self.subscriptions):
            for topic in topics:
                self.subscribers.setdefault(topic, []).append(index)
        self.owners = {t: [-1] * spec.topics[t] for t in self.subscribers}
        self.sizes = [0] * len(self.member_ids)
        self.target: list[dict[str, set[int]]] = [{} for _ in self.member_ids]

    def build(self) -> Assignment:
        if not self.subscribers:
            return {}
        self._keep_subscribed()
        self._assign_unassigned()
        self._balance()
        return {
            member_id: {t: frozenset(ps) for t, ps in self.target[i].items()}
            for i, member_id in enumerate(self.member_ids)
        }

    def _order(self, topics: list[str]) -> list[str]:
        def key(topic: str) -> tuple[float, int, bytes]:
            subscribers = len(self.subscribers[topic])
            # Kafka compares the ratios as doubles; Python's float division rounds the same.
            return (-(self.spec.topics[topic] / subscribers), subscribers, java_string_key(topic))

        return sorted(topics, key=key)

    def _keep_subscribed(self) -> None:
        for index, member_id in enumerate(self.member_ids):
            for topic, partitions in self.spec.members[member_id].assignment.items():
                if topic in self.subscriptions[index] and partitions:
                    self.target[index][topic] = set(partitions)
                    self.sizes[index] += len(partitions)
                    for p in partitions:
                        self.owners[topic][p] = index

    def _assign_unassigned(self) -> None:
        unassigned = {
            topic: [p for p, owner in enumerate(owners) if owner == -1]
            for topic, owners in self.owners.items()
        }
        balancer = _Balancer(self.sizes)
        for topic in self._order([t for t, ps in unassigned.items() if ps]):
            balancer.start(self.subscribers[topic])
            for p in unassigned[topic]:
                self._move(topic, p, balancer.next_least_loaded())

    def _balance(self) -> None:
        topics = self._order([t for t, s in self.subscribers.items() if len(s) >= 2])
        balancer = _Balancer(self.sizes)
        last_moved = -1  # the index of the last topic that moved partitions (or the first)
        for _ in range(MAX_BALANCE_PASSES):
            for index, topic in enumerate(topics):
                if index == last_moved:
                    return  # a whole pass over the topics moved nothing
                if self._balance_topic(topic, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def _balance_topic(self, topic: str, balancer: _Balancer) -> int:
        """Move the topic's partitions from its most- to its least-loaded subscribers, each
        time the last (highest) partition of the member giving one up."""
        if balancer.start(self.subscribers[topic]) <= 1:
            return 0
        owners = self.owners[topic]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        first: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for i, p in enumerate(partitions):
            first.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not balancer.balanced():
            giver = balancer.next_most_loaded()
            while giver is not None and end.get(giver, 0) - first.get(giver, 0) <= 0:
                balancer.exclude_last_most_loaded()
                giver = balancer.next_most_loaded()
            if giver is None:
                break  # no subscriber above the least-loaded has a partition of the topic
            end[giver] -= 1
            partition = partitions[end[giver]]
            taker = balancer.next_least_loaded()
            if balancer.balanced():
                break
            self._move(topic, partition, taker)
            moved += 1
        return moved

    def _move(self, topic: str, partition: int, member: int) -> None:
        owner = self.owners[topic][partition]
        if owner != -1:
            held = self.target[owner][topic]
            held.discard(partition)
            if not held:
                del self.target[owner][topic]
            self.sizes[owner] -= 1
        self.target[member].setdefault(topic, set()).add(partition)
        self.owners[topic][partition] = member
        self.sizes[member] += 1


class _Balancer:
    """Kafka's ``MemberAssignmentBalancer``: one topic's subscribers sorted by load, with a
    least-loaded range that grows rightwards as it receives partitions and a most-loaded
    range that grows leftwards as it gives them up. The topic is balanced once the two
    ranges' counts differ by at most one. ``sizes`` is shared with the builder, which
    applies each move."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = self.least_count = self.next_least = 0
        self.most_start = self.most_end = self.most_count = self.next_most = 0

    def start(self, members: list[int]) -> int:
        """Sort ``members`` by load (then number); return the spread of their counts."""
        self.members = sorted(members, key=lambda m: (self.sizes[m], m))
        low, high = self.sizes[self.members[0]], self.sizes[self.members[-1]]
        self.least_end = 0  # [0, least_end) is the least-loaded range
        self.least_count = low - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)  # [most_start, most_end)
        self.most_count = high + 1
        self.next_most = len(self.members) - 1
        return high - low

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            # Every member of the range got one more: raise its level and widen it.
            self.least_count += 1
            while (
                self.least_end < len(self.members)
                and self.sizes[self.members[self.least_end]] == self.least_count
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int | None:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Exclusions emptied the range: restart it at the next member's level, so
                # that it widens below.
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while (
                self.most_start > 0
                and self.sizes[self.members[self.most_start - 1]] == self.most_count
            ):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return None
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_last_most_loaded(self) -> None:
        """Drop the member ``next_most_loaded`` just returned from the most-loaded range:
        it has nothing of the topic to give up."""
        i = self.next_most + 1
        last = self.most_end - 1
        self.members[i], self.members[last] = self.members[last], self.members[i]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_count - self.least_count <= 1
