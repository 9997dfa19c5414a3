"""Kafka's RangeAssignor (protocol name "range"), non-rack-aware path.

Topic by topic, the members subscribed to the topic are laid out in ``MemberInfo`` order
(static members first, by group.instance.id, then dynamic members by member id) and the
topic's partitions are cut into contiguous ranges: every member gets ``n // k`` partitions
and the first ``n % k`` members one more. Each topic is split on its own, so a member that
comes first for many topics collects the extra partition of every one of them: range
balances each topic, not the group.

Rack-aware assignment (KIP-881) needs the racks of each partition's replicas, which the
``Assignor`` interface does not carry. Kafka takes the path implemented here whenever no
partition racks are known, so ``Subscription.rack_id`` is ignored.

This module also holds the two orderings the other assignors share with Kafka's
``AbstractPartitionAssignor``: Java's ``String.compareTo`` and ``MemberInfo.compareTo``.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordspec.reference.assignors.base import Assignment, TopicPartition
from coordspec.reference.consumer_protocol import Subscription


def java_string_key(s: str) -> bytes:
    """Sort key that orders strings as Java's ``String.compareTo`` does (by UTF-16 code
    unit). It differs from Python's code-point order only when characters outside the
    Basic Multilingual Plane meet characters in U+E000..U+FFFF."""
    return s.encode("utf-16-be", "surrogatepass")


def member_order_key(member_id: str, group_instance_id: str | None) -> tuple[int, bytes, bytes]:
    """Kafka's ``MemberInfo`` order: members with a group.instance.id come first, ordered
    by it; the others follow, ordered by member id. Two members claiming the same instance
    id (which the coordinator never lets happen) tie in Kafka and keep their input order
    there; here the member id breaks the tie so the order never depends on the input."""
    if group_instance_id is not None:
        return (0, java_string_key(group_instance_id), java_string_key(member_id))
    return (1, java_string_key(member_id), b"")


def _members_per_topic(subscriptions: Mapping[str, Subscription]) -> dict[str, list[str]]:
    per_topic: dict[str, list[str]] = {}
    for member_id, sub in subscriptions.items():
        for topic in dict.fromkeys(sub.topics):  # a topic listed twice counts once
            per_topic.setdefault(topic, []).append(member_id)
    return per_topic


def _ranges(num_partitions: int, num_members: int) -> list[range]:
    """The i-th member's slice: the first ``num_partitions % num_members`` slices are one longer."""
    quota, extra = divmod(num_partitions, num_members)
    slices, start = [], 0
    for i in range(num_members):
        length = quota + (1 if i < extra else 0)
        slices.append(range(start, start + length))
        start += length
    return slices


class RangeAssignor:
    name = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        assignment: dict[str, list[TopicPartition]] = {member_id: [] for member_id in subscriptions}
        for topic, members in _members_per_topic(subscriptions).items():
            num_partitions = partitions_per_topic.get(topic, 0)
            if num_partitions <= 0:
                continue
            ordered = sorted(
                members, key=lambda m: member_order_key(m, subscriptions[m].group_instance_id)
            )
            for member_id, partitions in zip(
                ordered, _ranges(num_partitions, len(ordered)), strict=True
            ):
                assignment[member_id].extend((topic, p) for p in partitions)
        return {member_id: sorted(tps) for member_id, tps in assignment.items()}
