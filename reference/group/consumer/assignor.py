"""The server-side assignors a consumer group may name (``group.consumer.assignors``; the
first is the default), and the target assignment they compute (CG-10..CG-13, Kafka 4.0
``TargetAssignmentBuilder``).

The interface: ``assign(members, topics, current)`` with each member's subscribed topics, the
partition count of each subscribed topic that exists, and each member's current target; it
returns each member's partitions by topic. The placeholder below is deterministic and gives
each topic's partitions in contiguous ranges to its subscribers in member id order; the real
``uniform`` and ``range`` of Kafka come with reference/assignors/server/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from coordspec.reference.group.consumer.state import ConsumerMember, Partitions

MemberTopics = Mapping[str, frozenset[str]]
TopicSizes = Mapping[str, int]
Current = Mapping[str, Mapping[str, frozenset[int]]]
Assignment = dict[str, dict[str, frozenset[int]]]
Assignor = Callable[[MemberTopics, TopicSizes, Current], Assignment]


def ranges(members: MemberTopics, topics: TopicSizes, current: Current) -> Assignment:
    result: Assignment = {member_id: {} for member_id in members}
    for topic, count in sorted(topics.items()):
        subscribers = sorted(m for m, subscribed in members.items() if topic in subscribed)
        if not subscribers:
            continue
        share, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            size = share + (1 if index < extra else 0)
            if size:
                result[member_id][topic] = frozenset(range(start, start + size))
            start += size
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": ranges, "range": ranges}
DEFAULT_ASSIGNOR = "uniform"


def preferred_assignor(members: Mapping[str, ConsumerMember]) -> str:
    """The assignor most members name (ConsumerGroup.computePreferredServerAssignor); Kafka
    breaks a tie by hash-map order, the reference by name."""
    counts: dict[str, int] = {}
    for member in members.values():
        if member.server_assignor is not None:
            counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
    if not counts:
        return DEFAULT_ASSIGNOR
    return min(counts, key=lambda name: (-counts[name], name))


def subscribed_topics(
    members: Mapping[str, ConsumerMember], topics: Mapping[str, int] | None
) -> dict[str, int]:
    """The subscription metadata: each topic some member subscribes to that exists."""
    names = {t for m in members.values() for t in m.subscribed_topic_names}
    known = topics or {}
    return {t: known[t] for t in sorted(names) if t in known}


def target_assignment(
    members: Mapping[str, ConsumerMember],
    metadata: Mapping[str, int],
    current: Mapping[str, Partitions],
) -> dict[str, Partitions]:
    """Every member's new target, by the assignor the members prefer."""
    assign = ASSIGNORS[preferred_assignor(members)]
    by_topic: dict[str, dict[str, frozenset[int]]] = {m: {} for m in members}
    for member_id, partitions in current.items():
        if member_id in by_topic:
            for topic, partition in partitions:
                by_topic[member_id][topic] = by_topic[member_id].get(topic, frozenset()) | {
                    partition
                }
    assigned = assign(
        {m: frozenset(member.subscribed_topic_names) for m, member in members.items()},
        metadata,
        by_topic,
    )
    return {
        m: frozenset((t, p) for t, ps in assigned.get(m, {}).items() for p in ps) for m in members
    }
