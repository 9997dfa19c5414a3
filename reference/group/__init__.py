"""Kafka's classic consumer-group coordinator (Kafka 4.x), as a sans-IO state machine.

Inputs are in :mod:`coordspec.reference.group.requests`, outputs in :mod:`coordspec.reference.group.effects`
and :mod:`coordspec.reference.group.responses`, the state rules in :mod:`coordspec.reference.group.transitions`.
"""

from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import AppendRecords, Effect, Reply
from coordspec.reference.group.requests import (
    AppendCompleted,
    Assignment,
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    FailNextWrite,
    FetchGroup,
    FetchTopic,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    LoadGroups,
    MemberIdentity,
    NewMetadataImage,
    OffsetCommit,
    OffsetDelete,
    OffsetDeletePartition,
    OffsetDeleteTopic,
    OffsetFetch,
    Protocol,
    ResolveRegularExpressions,
    SyncGroup,
    Tick,
    TxnOffsetCommit,
    UnloadGroups,
    WriteTxnMarker,
)
from coordspec.reference.group.transitions import GroupState

__all__ = [
    "AppendCompleted",
    "AppendRecords",
    "Assignment",
    "CommitPartition",
    "CommitTopic",
    "DeleteGroups",
    "DescribeGroups",
    "Effect",
    "FailNextWrite",
    "FetchGroup",
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
    "NewMetadataImage",
    "OffsetCommit",
    "OffsetDelete",
    "OffsetDeletePartition",
    "OffsetDeleteTopic",
    "OffsetFetch",
    "Protocol",
    "Reply",
    "ResolveRegularExpressions",
    "SyncGroup",
    "Tick",
    "TxnOffsetCommit",
    "UnloadGroups",
    "WriteTxnMarker",
]
