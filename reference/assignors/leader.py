"""What the group leader does between JoinGroup and SyncGroup (Kafka's ConsumerCoordinator
on the leader): decode each member's subscription from JoinGroup's member list, run the
assignor chosen by the group's protocol, and encode each member's assignment."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from coordspec.reference.assignors import ASSIGNORS
from coordspec.reference.assignors.base import Assignment
from coordspec.reference.consumer_protocol import Assignment as EncodedAssignment
from coordspec.reference.consumer_protocol import (
    Subscription,
    TopicPartitions,
    decode_subscription,
    encode_assignment,
)
from coordspec.reference.group.responses import JoinGroupMember


def subscriptions_of(members: Iterable[JoinGroupMember]) -> dict[str, Subscription]:
    """Each member's decoded subscription, with the instance id the leader was told."""
    subscriptions = {}
    for member in members:
        decoded = decode_subscription(member.metadata)
        subscriptions[member.member_id] = Subscription(
            decoded.topics,
            decoded.user_data,
            decoded.owned_partitions,
            decoded.generation_id,
            decoded.rack_id,
            member.group_instance_id,
        )
    return subscriptions


def encode_assignments(assignment: Assignment) -> dict[str, bytes]:
    """SyncGroup's per-member bytes: partitions grouped by topic, in the order given."""
    encoded = {}
    for member_id, partitions in assignment.items():
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(TopicPartitions(topic, tuple(ps)) for topic, ps in by_topic.items())
        encoded[member_id] = encode_assignment(EncodedAssignment(topics))
    return encoded


def lead(
    protocol_name: str, partitions_per_topic: Mapping[str, int], members: Iterable[JoinGroupMember]
) -> dict[str, bytes]:
    """The leader's SyncGroup assignments for the members JoinGroup listed."""
    assignor = ASSIGNORS[protocol_name]
    return encode_assignments(assignor.assign(partitions_per_topic, subscriptions_of(members)))
