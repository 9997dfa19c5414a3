"""A coordinator is data: a copy taken while writes are in flight lives on by itself, made
by ``copy.deepcopy`` or by its own :meth:`GroupCoordinator.copy`.

The oracle branches by copying coordinators (conformance/suite/oracle.py); what a copy
does to its pending writes must not reach the original, nor the other way round.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from coordspec.reference.choices import SeededChoices
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


def own_copy(c: GroupCoordinator) -> GroupCoordinator:
    observer = Monitor() if c.observer is not None else None  # a Monitor that starts afresh
    return c.copy(SeededChoices(), observer)


COPIES = pytest.mark.parametrize("twin_of", [copy.deepcopy, own_copy], ids=["deepcopy", "copy"])


@COPIES
def test_a_failed_write_on_the_copy_leaves_the_original_its_group(twin_of: Callable):
    c = GroupCoordinator(complete_appends=False)
    join(c, 1)
    twin = twin_of(c)
    twin.handle(AppendCompleted(twin.pending_appends()[0], 1, ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert list(twin.groups) == []
    assert list(c.groups) == ["g"]
    assert c.pending_appends() == [1]


@COPIES
def test_a_successful_write_on_the_copy_is_not_written_for_the_original(twin_of: Callable):
    c = GroupCoordinator(complete_appends=False)
    join(c, 1)
    twin = twin_of(c)
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


@COPIES
def test_every_pending_write_of_a_copy_evolves_independently(twin_of: Callable):
    original = coordinator_with_every_kind_of_write_in_flight()
    expected = twin_of(original)
    twin = twin_of(original)
    twin_effects = complete_all(twin, ErrorCode.NOT_LEADER_OR_FOLLOWER, 3_001)
    effects = complete_all(original, ErrorCode.NONE, 3_001)
    assert effects == complete_all(expected, ErrorCode.NONE, 3_001)
    assert effects != twin_effects
    assert str(original.groups["g"].state) == "Stable"
    assert "simple" not in original.groups
    assert str(twin.groups["g"].state) == "PreparingRebalance"
    assert "simple" not in twin.groups  # the failed commit reverted the group it created


def mutable_parts(value: object, where: str, found: dict[str, object]) -> dict[str, object]:
    """Every dict, list and set reachable from ``value`` through containers and the
    reference's own objects, by where it is."""
    if isinstance(value, (dict, list, set)):
        found[where] = value
    if isinstance(value, dict):
        for key, item in value.items():
            mutable_parts(item, f"{where}[{key!r}]", found)
    elif isinstance(value, (list, tuple, set)):
        for i, item in enumerate(sorted(value, key=repr) if isinstance(value, set) else value):
            mutable_parts(item, f"{where}[{i}]", found)
    elif type(value).__module__.startswith("coordspec.reference"):
        names = list(getattr(value, "__dict__", {})) or [
            n for k in type(value).__mro__ for n in getattr(k, "__slots__", ())
        ]
        for name in names:
            if name not in ("config", "choices", "observer", "substeps") and hasattr(value, name):
                mutable_parts(getattr(value, name), f"{where}.{name}", found)
    return found


def test_the_copy_shares_no_mutable_part_with_the_original():
    """What one copy changes in place, the other cannot see: no dict, list or set of the
    state (groups, members, timers, pending writes) is shared."""
    original = coordinator_with_every_kind_of_write_in_flight()
    twin = own_copy(original)
    mine, theirs = mutable_parts(original, "c", {}), mutable_parts(twin, "c", {})
    assert mine.keys() == theirs.keys()
    # the walk reached the groups, their members, the timers and a deletion's waiting set
    assert {"c.groups['g'].members", "c.timers._heap", "c.deletions[4].waiting"} <= mine.keys()
    shared = [where for where, part in mine.items() if theirs[where] is part]
    assert shared == []


@COPIES
def test_a_copy_is_the_same_state_until_a_step_sets_them_apart(twin_of: Callable):
    """``same_state``: the oracle merges hypotheses whose coordinators compare so."""
    original = coordinator_with_every_kind_of_write_in_flight()
    twin = twin_of(original)
    assert original.same_state(twin)
    complete_all(twin, ErrorCode.NOT_LEADER_OR_FOLLOWER, 3_001)
    assert not original.same_state(twin)
    again = twin_of(original)
    complete_all(original, ErrorCode.NONE, 3_001)
    complete_all(again, ErrorCode.NONE, 3_001)
    assert original.same_state(again)
    original.handle(Tick(3_002))
    assert not original.same_state(again)  # its clock moved on
