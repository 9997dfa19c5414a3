"""Kafka's error codes, and the two failures that are not protocol outcomes.

Three kinds of failure are kept apart in the reference:

* a peer's invalid-but-expected input is a normal outcome: a response carrying an
  :class:`ErrorCode`;
* a caller's misuse of the reference raises :class:`UsageError`, naming the state and
  the input;
* a broken invariant raises :class:`InvariantViolation` (an ``AssertionError``), which
  means the reference itself is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ErrorCode(IntEnum):
    """The subset of ``org.apache.kafka.common.protocol.Errors`` the group APIs use."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    INVALID_FETCH_SIZE = 4
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    NOT_ENOUGH_REPLICAS = 19
    REQUEST_TIMED_OUT = 7
    RECORD_LIST_TOO_LARGE = 18
    INVALID_REQUEST = 42
    NOT_LEADER_OR_FOLLOWER = 6
    MESSAGE_TOO_LARGE = 10
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128


# How a failed append of coordinator records reaches the client (Kafka 4.x,
# CoordinatorOperationExceptionHelper): storage-level errors become coordinator errors.
_APPEND_ERROR_MAPPING = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def append_error_to_response_error(error: ErrorCode) -> ErrorCode:
    """The error a client sees when the coordinator's append failed with ``error``."""
    return _APPEND_ERROR_MAPPING.get(error, error)


class UsageError(Exception):
    """The caller misused the reference: the message names the state and the input."""


class InvariantViolation(AssertionError):
    """A named invariant does not hold: the reference (or a checked target) is wrong."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant} violated: {detail}")
        self.invariant = invariant
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Invariant:
    """A safety property, under the name an :class:`InvariantViolation` of it carries."""

    name: str
    rule: str  # the spec rule (spec/*.md) it upholds
    meaning: str
    tla: bool  # TLC checks it too, under the same name (tla/MC*.cfg)


def registry(*invariants: Invariant) -> dict[str, Invariant]:
    """Invariants by name, as each model's ``INVARIANTS``."""
    return {invariant.name: invariant for invariant in invariants}
