"""The transition tables, walked: every (group state x request) pair, and every edge.

``EXPECTED`` says what a request from the follower F of a two-member group gets in each
state; where ``coordspec.reference.group.transitions.OUTCOMES`` has an entry the two must agree, so
the table the coordinator dispatches on is the table this test checks. Every state change
observed must be an edge of ``TRANSITIONS``, and every edge must be observed.
"""

from __future__ import annotations

import driver
import pytest
from driver import Driver, kafka_test_config

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.rebalance import join_key
from coordspec.reference.group.transitions import (
    COMPLETING,
    DEAD,
    EMPTY,
    OUTCOMES,
    PREPARING,
    STABLE,
    TRANSITIONS,
    GroupState,
    Outcome,
)
from coordspec.reference.substeps import Unobserved

SESSION_MS = 5_000
REBALANCE_MS = 500


class Moves(Unobserved):
    def __init__(self) -> None:
        self.seen: set[tuple[GroupState, GroupState, str]] = set()

    def moved(self, subject: object, source: str, target: str, cause: str) -> None:
        self.seen.add((GroupState(source), GroupState(target), cause))


@pytest.fixture
def observed(monkeypatch):
    """Every (source, target, cause) a coordinator moved a group by, as it reports them."""
    moves = Moves()
    monkeypatch.setattr(driver, "SUBSTEPS", moves)
    return moves.seen


def two_member_group(target: GroupState) -> tuple[Driver, dict]:
    """A group with leader L and follower F, brought to ``target`` by real requests."""
    d = Driver()
    kw = dict(session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS)
    leader, follower = d.join(**kw), d.join(**kw)
    d.sleep(3_000)
    ids = {"L": leader.response.member_id, "F": follower.response.member_id}
    assert leader.response.leader == ids["L"]
    if target == COMPLETING:
        return d, ids
    d.sync(ids["L"], 1, assignments={ids["L"]: b"L", ids["F"]: b"F"})
    d.sync(ids["F"], 1)
    if target == STABLE:
        return d, ids
    if target == PREPARING:
        d.join(ids["L"], **kw)  # the leader's rejoin starts a rebalance; F has not rejoined
        return d, ids
    if target == DEAD:
        d.unload()
        return d, ids
    assert target == EMPTY
    d.leave(ids["L"], ids["F"])
    return d, ids


def send(d: Driver, ids: dict, api: str):
    g = d.group()
    F, generation = ids["F"], g.generation_id
    kw = dict(session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS)
    return {
        "JoinGroup(new)": lambda: d.join(**kw),
        "JoinGroup": lambda: d.join(F, **kw),
        "SyncGroup": lambda: d.sync(F, generation),
        "Heartbeat": lambda: d.heartbeat(F, generation),
        "OffsetCommit": lambda: d.commit({("t", 0): 1}, generation_id=generation, member_id=F),
        "LeaveGroup": lambda: d.leave(F),
        "OffsetFetch": lambda: d.fetch({"t": (0,)}),
        "DescribeGroups": lambda: d.describe("group-id"),
    }[api]()


# What F gets, per state: an error code, PARK (no reply yet), or (error, state after).
EXPECTED: dict[str, dict[GroupState, object]] = {
    "JoinGroup(new)": {
        EMPTY: (Outcome.PARK, PREPARING),
        PREPARING: (Outcome.PARK, PREPARING),
        COMPLETING: (Outcome.PARK, PREPARING),
        STABLE: (Outcome.PARK, PREPARING),
        DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    },
    "JoinGroup": {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,  # F is no member of an Empty group
        PREPARING: (
            ErrorCode.NONE,
            COMPLETING,
        ),  # parked, and the last to rejoin: the phase completes
        COMPLETING: (ErrorCode.NONE, COMPLETING),
        STABLE: (ErrorCode.NONE, STABLE),
        DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    },
    "SyncGroup": {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING: ErrorCode.REBALANCE_IN_PROGRESS,
        COMPLETING: (Outcome.PARK, COMPLETING),
        STABLE: (ErrorCode.NONE, STABLE),
        DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    },
    "Heartbeat": {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING: ErrorCode.REBALANCE_IN_PROGRESS,
        COMPLETING: ErrorCode.NONE,
        STABLE: ErrorCode.NONE,
        DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    },
    "OffsetCommit": {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING: ErrorCode.NONE,
        COMPLETING: ErrorCode.REBALANCE_IN_PROGRESS,
        STABLE: ErrorCode.NONE,
        DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    },
    "LeaveGroup": {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING: (ErrorCode.NONE, COMPLETING),  # the leader was the only one left to wait for
        COMPLETING: (ErrorCode.NONE, PREPARING),
        STABLE: (ErrorCode.NONE, PREPARING),
        DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    },
    "OffsetFetch": {state: ErrorCode.NONE for state in GroupState},
    "DescribeGroups": {state: ErrorCode.NONE for state in GroupState},
}


def error_of(pending) -> ErrorCode:
    response = pending.response
    if hasattr(response, "topics") and not hasattr(response, "error_code"):
        (topic,) = response.topics
        (partition,) = topic.partitions
        return partition.error_code
    if hasattr(response, "groups") and not hasattr(response, "error_code"):
        return response.groups[0].error_code
    if (
        getattr(response, "members", None)
        and response.error_code == ErrorCode.NONE
        and hasattr(response.members[0], "error_code")
    ):
        return response.members[0].error_code
    return response.error_code


@pytest.mark.parametrize("state", list(GroupState), ids=str)
@pytest.mark.parametrize("api", list(EXPECTED))
def test_every_state_and_request(api, state, observed):
    d, ids = two_member_group(state)
    assert d.group().state == state
    expected = EXPECTED[api][state]
    pending = send(d, ids, api)
    if isinstance(expected, tuple):
        outcome, after = expected
        if outcome == Outcome.PARK:
            assert not pending.done, f"{api} in {state} should be parked"
        else:
            assert error_of(pending) == outcome
        assert d.group().state == after
    else:
        assert error_of(pending) == expected
        assert d.group().state == state
    if api == "DescribeGroups":
        assert pending.response.groups[0].group_state == str(state)
    for source, target, cause in observed:
        assert (source, target, cause) in {(t.source, t.target, t.cause) for t in TRANSITIONS}


def walked_outcome(api: str, state: GroupState):
    """EXPECTED in OUTCOMES' terms: answered at once in the same state is ANSWER; parked,
    or answered only because the phase then completed, is PARK."""
    expected = EXPECTED[api][state]
    if not isinstance(expected, tuple):
        return expected
    outcome, after = expected
    if outcome == Outcome.PARK or after != state:
        return Outcome.PARK
    return Outcome.ANSWER if outcome == ErrorCode.NONE else outcome


@pytest.mark.parametrize("key", sorted(OUTCOMES, key=str), ids=lambda k: f"{k[0]}-{k[1]}")
def test_outcome_table_agrees_with_the_walk(key):
    api, state = key
    assert OUTCOMES[key] == walked_outcome(api, state)


def test_every_transition_is_taken(observed):
    """Walk the inputs that the request walk does not reach, then check every edge was seen."""
    for state in GroupState:
        for api in EXPECTED:
            d, ids = two_member_group(state)
            send(d, ids, api)

    # ExpireSession in Stable and CompletingRebalance; ExpirePendingSync in both.
    d, ids = two_member_group(STABLE)
    d.sleep(SESSION_MS)  # nobody heartbeats
    d, ids = two_member_group(COMPLETING)
    d.sleep(REBALANCE_MS)  # nobody syncs: the pending-sync timer fires first
    d = Driver()
    join = d.join(session_timeout_ms=10, rebalance_timeout_ms=10_000)
    d.sleep(3_000)
    d.sync(join.response.member_id, 1)
    other = d.join(session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    d.join(
        join.response.member_id, session_timeout_ms=10, rebalance_timeout_ms=10_000
    )  # completes: Completing
    assert d.group().state == COMPLETING and other.done
    d.sync(other.response.member_id, 2)
    d.sleep(10)  # the leader's 10 ms session expires before it syncs
    d = Driver()
    join = d.join(session_timeout_ms=10_000, rebalance_timeout_ms=10)
    d.sleep(3_000)
    d.sync(join.response.member_id, 1)
    d.join(session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    assert d.group().state == PREPARING
    d.sleep(10_000)  # the new member alone completes generation 2; the old member is dropped
    late = d.group().generation_id
    assert late == 2 and d.group().state == COMPLETING
    # In Stable, a follower that never syncs is removed by the pending-sync timer.
    d, ids = two_member_group(COMPLETING)
    d.sync(ids["L"], 1)
    assert d.group().state == STABLE
    d.sleep(REBALANCE_MS)
    # The leader's assignment fails to be written.
    d = Driver(complete_appends=False)
    join = d.join(session_timeout_ms=10_000)
    (created,) = d.appends  # the new group's empty snapshot
    d.complete(created)
    d.sleep(3_000)
    d.sync(join.response.member_id, 1)
    d.complete(d.appends[0], ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert d.group().state == PREPARING
    # The coordinator loses the partition, whatever state its groups are in.
    for state in (EMPTY, PREPARING, COMPLETING, STABLE):
        d, _ = two_member_group(state)
        d.unload()
        assert d.group().state == DEAD
    # A loaded group larger than group.max.size rebalances at once.
    source = Driver()
    for _ in range(2):
        source.join(session_timeout_ms=10_000)
    source.sleep(3_000)
    members = list(source.group().members)
    source.sync(members[0], 1)
    source.sync(members[1], 1)
    small = Driver(kafka_test_config(max_size=1))
    small.load(source.log)
    assert small.group().state == PREPARING
    assert small.coordinator.timers.deadline(join_key("group-id")) is not None

    taken = {(t.source, t.target, t.cause) for t in TRANSITIONS}
    missing = taken - observed
    assert not missing, f"transitions never taken: {sorted(missing, key=str)}"
