"""Kafka's CooperativeStickyAssignor (protocol name "cooperative-sticky").

The sticky assignment (``coordspec.reference.assignors.sticky``), with ownership read from the
subscription: ``owned_partitions``, and the generation from ``generation_id`` (subscription
v2+) or, for older subscriptions, from the assignor's user data (an int32 generation).

Cooperative rebalancing never moves a partition in one step: a partition whose owner
changes is left out of the new owner's assignment, so its previous owner, seeing it gone,
revokes it and triggers another rebalance, in which the now-unowned partition is assigned.
Which partitions change owner comes from the constrained algorithm's own bookkeeping when
all subscriptions are equal; otherwise it is every partition some member gains while
another member loses it.

Rack-aware assignment (KIP-881) is not implemented, as in ``sticky``: the interface does
not carry replica racks, and Kafka takes the non-rack-aware path when they are unknown.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from coordspec.reference.assignors.base import Assignment, TopicPartition
from coordspec.reference.assignors.sticky import (
    DEFAULT_GENERATION,
    MemberData,
    StickyOutcome,
    sticky_assign,
)
from coordspec.reference.consumer_protocol import Subscription


def encode_user_data(generation: int) -> bytes:
    """The user data a cooperative-sticky member sends: its last generation, as an int32."""
    return struct.pack(">i", generation)


def decode_generation(user_data: bytes | None) -> int | None:
    """The generation in cooperative-sticky user data; -1 if the bytes are too short for
    one (Kafka's fallback), None if there is no user data at all."""
    if user_data is None:
        return None
    if len(user_data) < 4:
        return DEFAULT_GENERATION
    return int(struct.unpack_from(">i", user_data)[0])


def owned_partitions(subscription: Subscription) -> tuple[TopicPartition, ...]:
    return tuple((tps.topic, p) for tps in subscription.owned_partitions for p in tps.partitions)


def _changing_owner(
    subscriptions: Mapping[str, Subscription], assignment: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """Partitions a member gains that another member (or the same one, had it listed the
    partition twice) loses, with the member gaining them."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member_id, assigned in assignment.items():
        owned = owned_partitions(subscriptions[member_id])
        owned_set, assigned_set = set(owned), set(assigned)
        added.update((tp, member_id) for tp in assigned if tp not in owned_set)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: member_id for tp, member_id in added.items() if tp in revoked}


class CooperativeStickyAssignor:
    name = "cooperative-sticky"

    def member_data(self, subscription: Subscription) -> MemberData:
        if subscription.generation_id >= 0:
            return MemberData(owned_partitions(subscription), subscription.generation_id)
        return MemberData(owned_partitions(subscription), decode_generation(subscription.user_data))

    def assign_with_details(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> StickyOutcome:
        outcome = sticky_assign(partitions_per_topic, subscriptions, self.member_data)
        withheld = outcome.partitions_transferring_ownership
        if withheld is None:
            withheld = _changing_owner(subscriptions, outcome.assignment)
        for tp, member_id in withheld.items():
            outcome.assignment[member_id].remove(tp)
        outcome.withheld = dict(withheld)
        return outcome

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        return self.assign_with_details(partitions_per_topic, subscriptions).sorted_assignment()
