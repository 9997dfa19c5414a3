"""Coordinator failover: a group's coordinator is the leader of its ``__consumer_offsets``
partition (spec/coordinator-failover.md, rules CF-1 … CF-23).

- :mod:`~coordspec.reference.failover.placement`: ``partition_for`` (CF-1), as Kafka computes it.
- :class:`CoordinatorHost`: one broker's coordinators, one per offsets partition it leads,
  sans-IO (events in :mod:`~coordspec.reference.failover.events`, effects in
  :mod:`~coordspec.reference.failover.effects`).
- :class:`Monitor`: the four failover invariants, checked after every host step.
- :class:`FailoverCluster`: hosts on every broker of the replication model's ``Cluster``.
"""

from coordspec.reference.failover.cluster import FailoverCluster
from coordspec.reference.failover.effects import AppendToPartition, LoadPartition
from coordspec.reference.failover.events import (
    AppendFailed,
    BecomeCoordinator,
    HighWatermarkUpdated,
    LoadGroup,
    ResignCoordinator,
)
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.failover.invariants import INVARIANTS, Monitor
from coordspec.reference.failover.partition import PartitionState
from coordspec.reference.failover.placement import (
    DEFAULT_OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    partition_for,
)

__all__ = [
    "DEFAULT_OFFSETS_PARTITIONS",
    "INVARIANTS",
    "OFFSETS_TOPIC",
    "AppendFailed",
    "AppendToPartition",
    "BecomeCoordinator",
    "CoordinatorHost",
    "FailoverCluster",
    "HighWatermarkUpdated",
    "LoadGroup",
    "LoadPartition",
    "Monitor",
    "PartitionState",
    "ResignCoordinator",
    "partition_for",
]
