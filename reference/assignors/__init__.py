"""Kafka's consumer partition assignors (classic protocol), keyed by protocol name.

Each is pure and deterministic; see ``base`` for the interface. None implements the
rack-aware variants (KIP-881): the interface carries no replica racks, and Kafka falls
back to the paths implemented here when those racks are unknown.
"""

from __future__ import annotations

from coordspec.reference.assignors.base import Assignment, Assignor, TopicPartition
from coordspec.reference.assignors.cooperative_sticky import CooperativeStickyAssignor
from coordspec.reference.assignors.range import RangeAssignor
from coordspec.reference.assignors.round_robin import RoundRobinAssignor
from coordspec.reference.assignors.sticky import StickyAssignor

ASSIGNORS: dict[str, Assignor] = {
    assignor.name: assignor
    for assignor in (
        RangeAssignor(),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
    )
}

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "TopicPartition",
]
