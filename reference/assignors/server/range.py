"""Kafka's server-side ``range`` assignor (``RangeAssignor`` of the group coordinator).

Topic by topic, the members subscribed to the topic, in order, get contiguous ranges of
its partitions: ``partitions // subscribers`` each, and the first
``partitions % subscribers`` one more. The order puts static members first, by instance
id, then the others by member id (the classic range assignor's order), so a static member
that rejoins under a new member id gets its ranges back. When the subscriptions are the
same and the topics have the same partition count, each member gets the same partition
numbers of every topic (co-partitioning).

The assignor is not sticky: it ignores the current assignment. Kafka has one path per
subscription type, and both compute what the single path here does (for a homogeneous
group every member subscribes to every topic). Its result depends on no hash-map order.
"""

from __future__ import annotations

from coordspec.reference.assignors.range import member_order_key
from coordspec.reference.assignors.server.spec import (
    Assignment,
    GroupSpec,
    check,
    known_subscriptions,
)


def assign(spec: GroupSpec) -> Assignment:
    """SA-1, SA-6: the range assignor's target assignment."""
    check(spec)
    ordered = sorted(spec.members, key=lambda m: member_order_key(m, spec.members[m].instance_id))
    subscriptions = {m: known_subscriptions(spec, m) for m in ordered}
    subscribers: dict[str, int] = {}
    for topics in subscriptions.values():
        for topic in topics:
            subscribers[topic] = subscribers.get(topic, 0) + 1
    next_start = dict.fromkeys(subscribers, 0)
    dealt = dict.fromkeys(subscribers, 0)  # members that already got their range
    target: Assignment = {}
    for member_id in ordered:
        target[member_id] = {}
        for topic in subscriptions[member_id]:
            quota, extra = divmod(spec.topics[topic], subscribers[topic])
            start = next_start[topic]
            end = start + quota + (1 if dealt[topic] < extra else 0)
            next_start[topic], dealt[topic] = end, dealt[topic] + 1
            if start < end:
                target[member_id][topic] = frozenset(range(start, end))
    return {m: target[m] for m in spec.members}
