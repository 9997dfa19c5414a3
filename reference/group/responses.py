"""Responses of the group coordinator, in Kafka's field names.

A response is built once, at the version of the request it answers: fields a version
does not carry hold their schema default (``None`` for absent strings), so comparing a
broker's decoded response with the reference's is a plain equality.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from coordspec.reference.errors import ErrorCode
from coordspec.reference.frozen import quicken
from coordspec.reference.group.records import TopicPartitions


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None  # v7+
    protocol_name: str | None = None  # "" below v7 when there is none
    leader: str = ""
    skip_assignment: bool = False  # v9+
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()

    def at_version(self, version: int) -> JoinGroupResponse:
        """Kafka's JoinGroupResponse: no protocol type below v7, null protocol name sent as ""."""
        if version >= 7:
            return self
        return JoinGroupResponse(
            error_code=self.error_code,
            generation_id=self.generation_id,
            protocol_type=None,
            protocol_name=self.protocol_name or "",
            leader=self.leader,
            skip_assignment=False,
            member_id=self.member_id,
            members=tuple(
                JoinGroupMember(
                    m.member_id, m.group_instance_id if version >= 5 else None, m.metadata
                )
                for m in self.members
            ),
        )


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+
    assignment: bytes = b""

    def at_version(self, version: int) -> SyncGroupResponse:
        if version >= 5:
            return self
        return SyncGroupResponse(self.error_code, None, None, self.assignment)


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveMemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveMemberResponse, ...] = ()  # v3+

    def at_version(self, version: int) -> LeaveGroupResponse:
        """Below v3 a single member's error becomes the top-level error."""
        if version >= 3:
            return self
        if self.error_code != ErrorCode.NONE or not self.members:
            return LeaveGroupResponse(self.error_code)
        return LeaveGroupResponse(self.members[0].error_code)


@dataclass(frozen=True, slots=True)
class CommitPartitionResponse:
    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class CommitTopicResponse:
    name: str
    partitions: tuple[CommitPartitionResponse, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    """OffsetCommit has no top-level error: group errors repeat on every partition."""

    topics: tuple[CommitTopicResponse, ...]


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    """TxnOffsetCommit answers per partition too (GM-57)."""

    topics: tuple[CommitTopicResponse, ...]


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1  # v5+
    metadata: str | None = ""
    error_code: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    name: str
    partitions: tuple[FetchPartitionResponse, ...]


@dataclass(frozen=True, slots=True)
class FetchGroupResponse:
    """The answer to a group an OffsetFetch v8+ names after its first."""

    group_id: str
    error_code: ErrorCode = ErrorCode.NONE
    topics: tuple[FetchTopicResponse, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    """The first group's answer at the top; ``other_groups`` answer the request's others."""

    error_code: ErrorCode  # v2+; below v2 it is copied into every partition
    topics: tuple[FetchTopicResponse, ...] = ()
    other_groups: tuple[FetchGroupResponse, ...] = ()  # v8+

    def at_version(self, version: int) -> OffsetFetchResponse:
        topics = self.topics
        if version < 5:
            topics = tuple(
                FetchTopicResponse(t.name, tuple(_replace_epoch(p) for p in t.partitions))
                for t in topics
            )
        if version >= 2 or self.error_code == ErrorCode.NONE:
            return OffsetFetchResponse(self.error_code, topics, self.other_groups)
        return OffsetFetchResponse(
            ErrorCode.NONE,
            tuple(
                FetchTopicResponse(
                    t.name,
                    tuple(
                        FetchPartitionResponse(p.partition_index, error_code=self.error_code)
                        for p in t.partitions
                    ),
                )
                for t in topics
            ),
        )


def _replace_epoch(partition: FetchPartitionResponse) -> FetchPartitionResponse:
    return FetchPartitionResponse(
        partition.partition_index,
        partition.committed_offset,
        -1,
        partition.metadata,
        partition.error_code,
    )


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None  # v4+
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str | None
    group_state: str
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]

    def at_version(self, version: int) -> DescribeGroupsResponse:
        """Members carry their group instance id from v4."""
        if version >= 4:
            return self
        return DescribeGroupsResponse(
            tuple(
                DescribedGroup(
                    g.error_code,
                    g.group_id,
                    g.group_state,
                    g.protocol_type,
                    g.protocol_data,
                    tuple(dataclasses.replace(m, group_instance_id=None) for m in g.members),
                )
                for g in self.groups
            )
        )


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str  # v4+
    group_type: str = "classic"  # v5+: "classic" or "consumer" (CG-30)


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...] = ()

    def at_version(self, version: int) -> ListGroupsResponse:
        """Groups carry their state from v4 and their type from v5 (below, the type reads as
        the field's default)."""
        if version >= 5:
            return self
        return ListGroupsResponse(
            self.error_code,
            tuple(
                ListedGroup(g.group_id, g.protocol_type, g.group_state if version >= 4 else "")
                for g in self.groups
            ),
        )


@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeletePartitionResponse:
    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class OffsetDeleteTopicResponse:
    name: str
    partitions: tuple[OffsetDeletePartitionResponse, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    """A group-level error is the top-level error, with no topics; otherwise each partition's."""

    error_code: ErrorCode
    topics: tuple[OffsetDeleteTopicResponse, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    """An error answer carries only its code (Kafka's message is not compared)."""

    error_code: ErrorCode
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None  # None: unchanged since the last


@dataclass(frozen=True, slots=True)
class DescribedTopicPartitions:
    topic_id: str  # the reference's id (CG-70)
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]


AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    error_code: ErrorCode
    group_id: str | None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
    authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedConsumerGroup, ...]


Response = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | DeleteGroupsResponse
    | OffsetDeleteResponse
    | TxnOffsetCommitResponse
    | ConsumerGroupHeartbeatResponse
    | ConsumerGroupDescribeResponse
)


quicken(globals())  # cheaper constructors (reference/frozen.py)
