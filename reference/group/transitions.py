"""Every rule that moves a classic group between states lives in this file.

Two tables:

``TRANSITIONS``
    the edges a group may take, each labelled with the input that causes it. The
    coordinator asserts every state change against this table, the totality test walks
    it, and ``coordspec diagram`` (conformance/cli/diagram.py) draws it into spec/.

``OUTCOMES``
    what a request from a valid member of the current generation gets, per group
    state. The coordinator's SyncGroup and Heartbeat handlers dispatch on it, and the
    (state x request) walk in the tests checks it. Requests that fail validation never
    reach it: their errors come from the validation order in the handlers.

Follows Apache Kafka 4.x (``ClassicGroupState``, ``GroupMetadataManager``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from coordspec.reference.errors import ErrorCode


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD


@dataclass(frozen=True, slots=True)
class Transition:
    source: GroupState
    target: GroupState
    cause: str  # the input (request, timer or driver event) that makes the move
    rule: str  # the spec rule that describes it


TRANSITIONS: tuple[Transition, ...] = (
    # A first member arrives: the initial rebalance, delayed by group.initial.rebalance.delay.ms.
    Transition(EMPTY, PREPARING, "JoinGroup", "GM-10"),
    # A rebalance starts: the leader or a changed member rejoins, or a new member arrives.
    Transition(STABLE, PREPARING, "JoinGroup", "GM-11"),
    Transition(COMPLETING, PREPARING, "JoinGroup", "GM-11"),
    # A member leaves or is dropped.
    Transition(STABLE, PREPARING, "LeaveGroup", "GM-31"),
    Transition(COMPLETING, PREPARING, "LeaveGroup", "GM-31"),
    Transition(STABLE, PREPARING, "ExpireSession", "GM-33"),
    Transition(COMPLETING, PREPARING, "ExpireSession", "GM-33"),
    Transition(STABLE, PREPARING, "ExpirePendingSync", "GM-34"),
    Transition(COMPLETING, PREPARING, "ExpirePendingSync", "GM-34"),
    # The leader's assignment could not be written.
    Transition(COMPLETING, PREPARING, "AppendCompleted", "GM-23"),
    # A loaded group is larger than group.max.size.
    Transition(STABLE, PREPARING, "LoadGroups", "GM-42"),
    # The join phase completes: a new generation, with members or without.
    Transition(PREPARING, COMPLETING, "CompleteJoin", "GM-14"),
    Transition(PREPARING, EMPTY, "CompleteJoin", "GM-14"),
    # The leader's assignment was written.
    Transition(COMPLETING, STABLE, "AppendCompleted", "GM-22"),
    # The coordinator loses the group's partition.
    *(Transition(state, DEAD, "UnloadGroups", "GM-43") for state in GroupState if state != DEAD),
)

_ALLOWED = {(t.source, t.target, t.cause) for t in TRANSITIONS}


def is_allowed(source: GroupState, target: GroupState, cause: str) -> bool:
    return (source, target, cause) in _ALLOWED


class Outcome(StrEnum):
    """What happens to a valid request besides an error code."""

    PARK = "park"  # held until the phase completes
    ANSWER = "answer"  # answered at once with the group's current data
    REBALANCE = "rebalance"  # starts (or joins) a rebalance


OUTCOMES: dict[tuple[str, GroupState], Outcome | ErrorCode] = {
    # SyncGroup from a member of the current generation.
    ("SyncGroup", PREPARING): ErrorCode.REBALANCE_IN_PROGRESS,
    ("SyncGroup", COMPLETING): Outcome.PARK,
    ("SyncGroup", STABLE): Outcome.ANSWER,
    # Heartbeat from a member of the current generation (re-arms its session otherwise).
    ("Heartbeat", EMPTY): ErrorCode.UNKNOWN_MEMBER_ID,
    ("Heartbeat", PREPARING): ErrorCode.REBALANCE_IN_PROGRESS,
    ("Heartbeat", COMPLETING): ErrorCode.NONE,
    ("Heartbeat", STABLE): ErrorCode.NONE,
    # JoinGroup from a known member with unchanged protocols (a follower in Stable).
    ("JoinGroup", PREPARING): Outcome.PARK,
    ("JoinGroup", COMPLETING): Outcome.ANSWER,
    ("JoinGroup", STABLE): Outcome.ANSWER,
    # OffsetCommit from a member of the current generation.
    ("OffsetCommit", PREPARING): ErrorCode.NONE,
    ("OffsetCommit", COMPLETING): ErrorCode.REBALANCE_IN_PROGRESS,
    ("OffsetCommit", STABLE): ErrorCode.NONE,
}
# Every request to a Dead group: the group moved to another coordinator.
for _api in ("SyncGroup", "Heartbeat", "JoinGroup", "OffsetCommit", "LeaveGroup"):
    OUTCOMES[(_api, DEAD)] = ErrorCode.COORDINATOR_NOT_AVAILABLE
del _api
