"""Answers a broker gives without consulting a group: Kafka 4.0's service checks, and the
error responses of a request whose partition this broker does not serve (CF-2, CF-5).

Shapes follow ``GroupCoordinatorService`` (the ``handleOperationException`` lambdas) and the
``getError*`` helpers of Kafka's request classes; version shaping is the group
reference's own ``at_version``.
"""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.offsets import commit_error_response
from coordspec.reference.group.requests import (
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    DeleteGroups,
    DescribeGroups,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
    Request,
    SyncGroup,
)
from coordspec.reference.group.responses import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeletableGroupResult,
    DeleteGroupsResponse,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    Response,
    SyncGroupResponse,
)

# Requests that Kafka 4.0 schedules as write operations: their reply waits until every
# record the partition wrote before is committed (CF-6). JoinGroup and SyncGroup are
# writes too, but the classic group completes their futures itself. A stable OffsetFetch
# is one as well; the host holds it before it reads (CoordinatorHost._forward).
DEFERRED_REPLY_APIS = (
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetDelete",
    "DeleteGroups",
    "ConsumerGroupHeartbeat",
)


def is_deferred_write(request: Request) -> bool:
    return request.api in DEFERRED_REPLY_APIS


def service_check(request: Request, config: GroupConfig) -> Response | None:
    """GM-1: the checks ``GroupCoordinatorService`` makes before it looks for the partition."""
    if (
        isinstance(request, (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetDelete))
        and not request.group_id
    ):
        return refusal(request, ErrorCode.INVALID_GROUP_ID)
    if isinstance(request, JoinGroup) and not (
        config.min_session_timeout_ms <= request.session_timeout_ms <= config.max_session_timeout_ms
    ):
        return JoinGroupResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=request.member_id)
    if isinstance(request, (OffsetCommit, OffsetFetch)) and request.group_id is None:
        return refusal(request, ErrorCode.INVALID_GROUP_ID)
    return None


def refusal(request: Request, error: ErrorCode) -> Response:
    """The response to ``request`` as a whole failing with ``error``."""
    if isinstance(request, JoinGroup):
        # The service echoes the member id for its own checks; an operation error does not.
        member_id = request.member_id if error == ErrorCode.INVALID_GROUP_ID else ""
        return JoinGroupResponse(error, member_id=member_id)
    if isinstance(request, SyncGroup):
        return SyncGroupResponse(error)
    if isinstance(request, Heartbeat):
        # "The group is still loading, so blindly respond" (both coordinators).
        return HeartbeatResponse(
            ErrorCode.NONE if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error
        )
    if isinstance(request, LeaveGroup):
        return LeaveGroupResponse(error)
    if isinstance(request, OffsetCommit):
        return commit_error_response(request, error)
    if isinstance(request, OffsetFetch):
        return OffsetFetchResponse(error)
    if isinstance(request, OffsetDelete):
        return OffsetDeleteResponse(error)
    if isinstance(request, ListGroups):
        return ListGroupsResponse(error)
    if isinstance(request, DescribeGroups):
        # DescribeGroupsRequest.getErrorDescribedGroupList: only the id and the error.
        return DescribeGroupsResponse(tuple(DescribedGroup(error, g, "") for g in request.groups))
    if isinstance(request, DeleteGroups):
        return DeleteGroupsResponse(
            tuple(DeletableGroupResult(g, error) for g in request.groups_names)
        )
    if isinstance(request, ConsumerGroupHeartbeat):
        return ConsumerGroupHeartbeatResponse(error)
    if isinstance(request, ConsumerGroupDescribe):
        # ConsumerGroupDescribeRequest.getErrorDescribedGroupList
        return ConsumerGroupDescribeResponse(
            tuple(DescribedConsumerGroup(error, g) for g in request.group_ids)
        )
    raise UsageError(f"refusal: {type(request).__name__} is not a group request")
