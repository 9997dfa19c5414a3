"""Kafka's RoundRobinAssignor (protocol name "roundrobin").

All partitions of all subscribed topics, topics in name order and partitions in number
order, are dealt one at a time to the members in ``MemberInfo`` order (static members by
group.instance.id, then dynamic members by member id), cycling. A member not subscribed to
the partition's topic is skipped, and the cycle resumes after whichever member took the
partition. With identical subscriptions the counts differ by at most one; otherwise the
result can be badly unbalanced (Kafka's own javadoc example).

The assignor has no rack-aware variant; ``Subscription.rack_id`` is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordspec.reference.assignors.base import Assignment, TopicPartition
from coordspec.reference.assignors.range import java_string_key, member_order_key
from coordspec.reference.consumer_protocol import Subscription


def _all_partitions_sorted(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> list[TopicPartition]:
    topics = sorted({t for sub in subscriptions.values() for t in sub.topics}, key=java_string_key)
    return [(topic, p) for topic in topics for p in range(partitions_per_topic.get(topic, 0))]


class RoundRobinAssignor:
    name = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        assignment: dict[str, list[TopicPartition]] = {member_id: [] for member_id in subscriptions}
        members = sorted(
            subscriptions, key=lambda m: member_order_key(m, subscriptions[m].group_instance_id)
        )
        topics_of = {m: set(subscriptions[m].topics) for m in members}
        cursor = 0  # index of the member the circular iterator would return next
        for tp in _all_partitions_sorted(partitions_per_topic, subscriptions):
            # Some member subscribes to tp's topic (that is how the topic got listed), so this ends.
            while tp[0] not in topics_of[members[cursor]]:
                cursor = (cursor + 1) % len(members)
            assignment[members[cursor]].append(tp)
            cursor = (cursor + 1) % len(members)
        return {member_id: sorted(tps) for member_id, tps in assignment.items()}
