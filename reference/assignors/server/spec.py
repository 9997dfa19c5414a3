"""What a server-side assignor (KIP-848) takes and returns: Kafka's ``GroupSpec``,
``MemberSubscription``, ``SubscribedTopicDescriber`` and ``GroupAssignment``, by topic name.

The interface, for the consumer-group coordinator::

    from coordspec.reference.assignors.server import ASSIGNORS, GroupSpec, MemberSpec
    spec = GroupSpec(members, topics, subscription_type(members))
    target = ASSIGNORS["uniform"](spec)  # {member_id: {topic: frozenset(partitions)}}

- ``members``: member id -> :class:`MemberSpec`: the topic names it subscribes to, its
  ``instance_id`` and ``rack_id``, and its ``assignment``: its partitions in the group's
  current *target* assignment (the previous result). A static member that replaced another
  (same ``instance_id``, new member id) brings the replaced member's target assignment, as
  Kafka's ``TargetAssignmentBuilder`` does.
- ``topics``: topic name -> partition count, for the topics that exist (the metadata
  image). A subscribed name that is not there is ignored, as Kafka's ``TopicIds`` skips
  names it cannot resolve; a topic in an assignment that is not there has been deleted and
  is dropped.
- ``subscription_type``: Kafka computes it from the subscribed names and passes it in;
  :func:`subscription_type` computes it the same way.

An assignor is a pure function ``assign(spec) -> Assignment``. The result holds every
member, each with the topics it gets and their partitions (never an empty set). Kafka
leaves out members that get nothing, and its coordinator reads a missing member as empty.
Neither assignor reads ``rack_id``: Kafka 4.0 removed rack awareness from both (KAFKA-16694).

A spec no coordinator could build raises :class:`UsageError` (see :func:`check`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from coordspec.reference.assignors.range import java_string_key
from coordspec.reference.errors import UsageError

Assignment = dict[str, dict[str, frozenset[int]]]  # member id -> topic -> partitions


class SubscriptionType(Enum):
    HOMOGENEOUS = "Homogeneous"  # every member subscribes to the same topic names
    HETEROGENEOUS = "Heterogeneous"


@dataclass(frozen=True)
class MemberSpec:
    subscribed_topics: frozenset[str]
    assignment: Mapping[str, frozenset[int]] = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class GroupSpec:
    members: Mapping[str, MemberSpec]
    topics: Mapping[str, int]  # topic name -> partition count
    subscription_type: SubscriptionType


def subscription_type(members: Mapping[str, MemberSpec]) -> SubscriptionType:
    """SA-2, Kafka's ``ModernGroup.subscriptionType``: homogeneous when every subscribed name has
    every member as a subscriber, that is when all members subscribe to the same names
    (whether the topics exist or not)."""
    if len({m.subscribed_topics for m in members.values()}) <= 1:
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def in_java_order(strings: Iterable[str]) -> list[str]:
    """SA-5: the order the reference iterates member ids and topic names in, where Kafka iterates
    a hash map or set (whose order any Kafka outcome may follow): Java's string order."""
    ordered = sorted(strings)
    if all(s.isascii() for s in ordered):
        return ordered  # Java's order is Python's for ASCII, without the key's encoding
    return sorted(ordered, key=java_string_key)


def known_subscriptions(spec: GroupSpec, member_id: str) -> list[str]:
    """The member's subscribed topics that exist, in Java string order."""
    return in_java_order(t for t in spec.members[member_id].subscribed_topics if t in spec.topics)


def check(spec: GroupSpec) -> None:
    """SA-1: raise :class:`UsageError` for a spec Kafka's coordinator never builds: a negative
    partition count, an assigned partition outside its topic or held by two members, or a
    homogeneous type over different subscriptions (Kafka's homogeneous paths read only one
    member's subscription)."""
    for topic, count in spec.topics.items():
        if count < 0:
            raise UsageError(f"topic {topic!r} has a negative partition count {count}")
    held: dict[str, set[int]] = {}  # by topic: whole sets compared, not partition by partition
    for member_id, member in spec.members.items():
        for topic, partitions in member.assignment.items():
            if not partitions:
                continue
            size = spec.topics.get(topic)
            if min(partitions) < 0 or (size is not None and max(partitions) >= size):
                p = min(p for p in partitions if p < 0 or (size is not None and p >= size))
                raise UsageError(
                    f"member {member_id!r} is assigned {topic}-{p}, which does not exist"
                )
            others = held.setdefault(topic, set())
            if not others.isdisjoint(partitions):
                p = min(others.intersection(partitions))
                other = next(m for m, x in spec.members.items() if p in x.assignment.get(topic, ()))
                raise UsageError(
                    f"{topic}-{p} is in the assignments of both {other!r} and {member_id!r}"
                )
            others.update(partitions)
    subscriptions = {m.subscribed_topics for m in spec.members.values()}
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS and len(subscriptions) > 1:
        raise UsageError("subscription type HOMOGENEOUS, but the members' subscriptions differ")
