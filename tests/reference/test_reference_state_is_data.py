"""A coordinator is data: a deep copy taken while writes are in flight lives on by itself.

The oracle branches by deep-copying coordinators (conformance/suite/oracle.py); what a
copy does to its pending writes must not reach the original, nor the other way round.
"""

from __future__ import annotations

import copy

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import (
    AppendCompleted,
    Assignment,
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    GroupCoordinator,
    JoinGroup,
    OffsetCommit,
    Protocol,
    SyncGroup,
    Tick,
)
from coordspec.reference.group.effects import Effect, Reply
from coordspec.reference.group.invariants import Monitor


def join(c: GroupCoordinator, request_id: int, now_ms: int = 0) -> None:
    c.handle(
        JoinGroup(
            request_id=request_id,
            api_version=3,
            now_ms=now_ms,
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocols=(Protocol("range", b""),),
        )
    )


def complete_all(c: GroupCoordinator, error: ErrorCode, now_ms: int) -> list[Effect]:
    effects: list[Effect] = []
    for append_id in c.pending_appends():
        effects += c.handle(AppendCompleted(append_id, now_ms, error))
    return effects


def test_a_failed_write_on_the_copy_leaves_the_original_its_group():
    c = GroupCoordinator(complete_appends=False)
    join(c, 1)
    twin = copy.deepcopy(c)
    twin.handle(AppendCompleted(twin.pending_appends()[0], 1, ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert list(twin.groups) == []
    assert list(c.groups) == ["g"]
    assert c.pending_appends() == [1]


def test_a_successful_write_on_the_copy_is_not_written_for_the_original():
    c = GroupCoordinator(complete_appends=False)
    join(c, 1)
    twin = copy.deepcopy(c)
    twin.handle(AppendCompleted(twin.pending_appends()[0], 1, ErrorCode.NONE))
    assert twin.groups["g"].in_log and twin.pending_appends() == []
    assert not c.groups["g"].in_log and c.pending_appends() == [1]


def coordinator_with_every_kind_of_write_in_flight() -> GroupCoordinator:
    """A leader's assignment, an offset commit that creates a group, and a deletion."""
    c = GroupCoordinator(complete_appends=False, observer=Monitor())
    join(c, 1)
    c.handle(AppendCompleted(c.pending_appends()[0], 1, ErrorCode.NONE))
    (reply,) = [e for e in c.handle(Tick(3_000)) if isinstance(e, Reply)]
    leader = reply.response.member_id
    c.handle(
        SyncGroup(
            request_id=2,
            api_version=3,
            now_ms=3_000,
            group_id="g",
            generation_id=1,
            member_id=leader,
            assignments=(Assignment(leader, b"a"),),
        )
    )
    c.handle(
        OffsetCommit(
            request_id=3,
            api_version=8,
            now_ms=3_000,
            group_id="simple",
            topics=(CommitTopic("t", (CommitPartition(0, 5),)),),
        )
    )
    c.handle(DeleteGroups(request_id=4, api_version=2, now_ms=3_000, groups_names=("simple",)))
    assert len(c.pending_appends()) == 3
    return c


def test_every_pending_write_of_a_copy_evolves_independently():
    original = coordinator_with_every_kind_of_write_in_flight()
    expected = copy.deepcopy(original)
    twin = copy.deepcopy(original)
    twin_effects = complete_all(twin, ErrorCode.NOT_LEADER_OR_FOLLOWER, 3_001)
    effects = complete_all(original, ErrorCode.NONE, 3_001)
    assert effects == complete_all(expected, ErrorCode.NONE, 3_001)
    assert effects != twin_effects
    assert str(original.groups["g"].state) == "Stable"
    assert "simple" not in original.groups
    assert str(twin.groups["g"].state) == "PreparingRebalance"
    assert "simple" not in twin.groups  # the failed commit reverted the group it created
