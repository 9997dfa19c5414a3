"""Kafka's classic consumer-group coordinator (Kafka 4.x), as a sans-IO state machine.

Inputs are in :mod:`reference.group.requests`, outputs in :mod:`reference.group.effects`
and :mod:`reference.group.responses`, the state rules in :mod:`reference.group.transitions`.
"""

from reference.group.config import GroupConfig
from reference.group.coordinator import GroupCoordinator
from reference.group.effects import AppendRecords, Effect, Reply
from reference.group.requests import (
    AppendCompleted,
    Assignment,
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    FetchTopic,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    LoadGroups,
    MemberIdentity,
    OffsetCommit,
    OffsetFetch,
    Protocol,
    SyncGroup,
    Tick,
    UnloadGroups,
)
from reference.group.transitions import GroupState

__all__ = [
    "AppendCompleted",
    "AppendRecords",
    "Assignment",
    "CommitPartition",
    "CommitTopic",
    "DeleteGroups",
    "DescribeGroups",
    "Effect",
    "FetchTopic",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "Heartbeat",
    "JoinGroup",
    "LeaveGroup",
    "ListGroups",
    "LoadGroups",
    "MemberIdentity",
    "OffsetCommit",
    "OffsetFetch",
    "Protocol",
    "Reply",
    "SyncGroup",
    "Tick",
    "UnloadGroups",
]
