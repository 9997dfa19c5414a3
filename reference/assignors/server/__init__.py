"""Kafka's server-side assignors for KIP-848 consumer groups, keyed by name.

Each is a pure function from a :class:`GroupSpec` to the group's target assignment; see
``spec`` for the interface. Kafka's ``group.consumer.assignors`` defaults to
``uniform, range``; the first is the one used when a member names none.
"""

from __future__ import annotations

from collections.abc import Callable

from coordspec.reference.assignors.server import range as range_assignor
from coordspec.reference.assignors.server import uniform
from coordspec.reference.assignors.server.spec import (
    Assignment,
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    subscription_type,
)

ASSIGNORS: dict[str, Callable[[GroupSpec], Assignment]] = {
    "uniform": uniform.assign,
    "range": range_assignor.assign,
}

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "GroupSpec",
    "MemberSpec",
    "SubscriptionType",
    "subscription_type",
]
