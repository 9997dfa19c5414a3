"""What every assignor takes and returns (Kafka's ConsumerPartitionAssignor, classic protocol).

An assignor runs on the group leader: given the partition count of every topic and each
member's decoded subscription, it returns each member's partitions. Assignors are pure and
deterministic: the same input gives the same output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from coordspec.reference.consumer_protocol import Subscription

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]  # member id -> partitions, each list sorted


class Assignor(Protocol):
    name: str  # the protocol name members vote for: "range", "roundrobin", "sticky", "cooperative-sticky"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        """Every member id in ``subscriptions`` appears in the result, possibly with no partitions.
        Topics missing from ``partitions_per_topic`` are ignored, as Kafka ignores unknown topics."""
