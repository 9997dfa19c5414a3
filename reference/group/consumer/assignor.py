"""The target assignment of a consumer group (CG-11, CG-13), as Kafka 4.0's
``TargetAssignmentBuilder``: the server-side assignor the members prefer (``uniform`` unless
they name another of ``group.consumer.assignors``) computes every member's partitions from
the members' subscriptions, the subscribed topics that exist and the current target."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from itertools import chain, repeat
from types import MappingProxyType

from coordspec.reference.assignors.server import (
    ASSIGNORS,
    GroupSpec,
    MemberSpec,
    subscription_type,
)
from coordspec.reference.group.consumer.state import ConsumerGroup, ConsumerMember, Partitions
from coordspec.reference.group.context import Context

DEFAULT_ASSIGNOR = "uniform"  # the first of Kafka's group.consumer.assignors


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
    group: ConsumerGroup,
    members: Mapping[str, ConsumerMember],
    topics: Mapping[str, int] | None,
    topic_ids: Mapping[str, str],
) -> dict[str, int]:
    """The subscription metadata: the partition count of each topic some member subscribes
    to that exists, by topic id (CG-70)."""
    names = {t for m in members.values() for t in group.subscription(m)}
    known = topics or {}
    return {topic_ids[t]: known[t] for t in sorted(names) if t in known}


def take_subscription_metadata(c: Context, group: ConsumerGroup) -> None:
    """CG-70: the subscription metadata of a target just written, or of a group loaded."""
    group.subscription_metadata = subscribed_topics(group, group.members, c.topics, c.topic_ids)
    group.metadata_version = c.metadata_version


def metadata_changed(c: Context, group: ConsumerGroup) -> bool:
    """CG-70: whether a subscribed topic was deleted or created again (a new id), created, or
    given more partitions since the target was computed, while the target is current (a
    group epoch ahead computes a new target anyway)."""
    if group.group_epoch != group.assignment_epoch or group.metadata_version == c.metadata_version:
        return False
    metadata = subscribed_topics(group, group.members, c.topics, c.topic_ids)
    if metadata != group.subscription_metadata:
        return True
    group.metadata_version = c.metadata_version  # the new image changed none of its topics
    return False


def target_assignment(
    group: ConsumerGroup,
    members: Mapping[str, ConsumerMember],
    metadata: Mapping[str, int],
    current: Mapping[str, Partitions],
    topic_ids: Mapping[str, str],
) -> dict[str, Partitions]:
    """Every member's new target; ``current``: each member's target so far (a static member
    that replaced another brings the other's). A member subscribes as ``group.subscription``
    says (CG-66); topics are known by id (``metadata`` and ``current`` are by id)."""
    specs = {
        member_id: MemberSpec(
            frozenset(topic_ids.get(t, t) for t in group.subscription(member)),
            _by_topic(current.get(member_id, frozenset())),
            member.instance_id,
            member.rack_id,
        )
        for member_id, member in members.items()
    }
    spec = GroupSpec(specs, metadata, subscription_type(specs))
    assigned = ASSIGNORS[preferred_assignor(members)](spec)
    return {m: _pairs(assigned.get(m, {})) for m in members}


def _pairs(by_topic: Mapping[str, frozenset[int]]) -> Partitions:
    return frozenset(chain.from_iterable(zip(repeat(t), ps) for t, ps in by_topic.items()))


# A member's target mostly stays as it was from one epoch to the next: remembered, read-only.
@lru_cache(maxsize=4096)
def _by_topic(partitions: Partitions) -> Mapping[str, frozenset[int]]:
    by_topic: dict[str, set[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, set()).add(partition)
    return MappingProxyType({t: frozenset(ps) for t, ps in by_topic.items()})
