"""Every named invariant can fail: a deliberately broken coordinator (a mutant, patched
in for one test) must be caught by the Monitor under exactly that invariant's name."""

from __future__ import annotations

import pytest
from driver import Driver, protocols

from coordspec.reference.consumer_protocol import Assignment as ConsumerAssignment
from coordspec.reference.consumer_protocol import TopicPartitions, encode_assignment
from coordspec.reference.errors import ErrorCode, InvariantViolation
from coordspec.reference.group import membership, offsets, rebalance, state
from coordspec.reference.group.invariants import INVARIANTS
from coordspec.reference.group.transitions import COMPLETING, STABLE


def owns(*partitions: int) -> bytes:
    return encode_assignment(ConsumerAssignment((TopicPartitions("foo", partitions),)))


def stable_pair(d: Driver) -> tuple[str, str]:
    """Two consumers, Stable at generation 1, each owning half of foo."""
    a = d.join(session_timeout_ms=10_000)
    b = d.join(session_timeout_ms=10_000)
    d.sleep(3_000)
    leader, follower = a.response.member_id, b.response.member_id
    d.sync(leader, 1, assignments={leader: owns(0, 1), follower: owns(2, 3)})
    d.sync(follower, 1)
    return leader, follower


def expect_violation(name: str):
    assert name in INVARIANTS
    return pytest.raises(InvariantViolation, match=f"^{name} violated")


def test_no_stale_generation_commit_catches_a_coordinator_without_fencing(monkeypatch):
    monkeypatch.setattr(offsets, "validate_offset_commit", lambda group, req: None)
    d = Driver()
    leader, follower = stable_pair(d)
    d.join(leader, session_timeout_ms=10_000)  # a rebalance: generation 1 is ending
    d.join(follower, session_timeout_ms=10_000)
    assert d.group().generation_id == 2
    with expect_violation("NoStaleGenerationCommit"):
        d.commit({("foo", 0): 5}, generation_id=1, member_id=follower)


def test_generation_monotonic_catches_a_generation_that_goes_back(monkeypatch):
    original = rebalance.init_next_generation

    def forgetful(c, group):
        original(c, group)
        if group.generation_id > 1:
            group.generation_id = 0

    monkeypatch.setattr(rebalance, "init_next_generation", forgetful)
    d = Driver()
    leader, follower = stable_pair(d)
    with expect_violation("GenerationMonotonic"):
        d.leave(leader, follower)  # the group empties: generation 2, which the mutant turns into 0


def test_leader_is_member_catches_a_leader_that_left(monkeypatch):
    def remove_keeping_leader(self, member_id, choices):
        self.members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)

    monkeypatch.setattr(state.Group, "remove", remove_keeping_leader)
    d = Driver()
    leader, _ = stable_pair(d)
    with expect_violation("LeaderIsMember"):
        d.leave(leader)


def test_at_most_one_owner_catches_an_assignment_handed_to_everyone(monkeypatch):
    def everyone_gets_the_leaders(c, group, assignment):
        leaders = assignment[group.leader_id]
        rebalance.set_and_propagate_assignment(c, group, {m: leaders for m in group.members})

    monkeypatch.setattr(membership, "set_and_propagate_assignment", everyone_gets_the_leaders)
    d = Driver()
    a = d.join(session_timeout_ms=10_000)
    b = d.join(session_timeout_ms=10_000)
    d.sleep(3_000)
    leader, follower = a.response.member_id, b.response.member_id
    d.sync(follower, 1)
    with expect_violation("AtMostOneOwnerPerPartition"):
        d.sync(leader, 1, assignments={leader: owns(0, 1), follower: owns(2, 3)})


def test_stable_implies_all_synced_catches_stable_before_the_write(monkeypatch):
    def eager(c, group, req):
        group.transition_to(STABLE, "AppendCompleted", c.now_ms)

    monkeypatch.setattr(membership, "write_leader_assignment", eager)
    d = Driver()
    join = d.join(session_timeout_ms=10_000)
    d.sleep(3_000)
    assert d.group().state == COMPLETING
    with expect_violation("StableImpliesAllSynced"):
        d.sync(join.response.member_id, 1)


def test_static_members_mapped_catches_a_replacement_that_keeps_the_old_id(monkeypatch):
    original = membership.replace_static_member

    def half_replace(c, group, instance_id, old_member_id, new_member_id):
        member = original(c, group, instance_id, old_member_id, new_member_id)
        group.static_members[instance_id] = old_member_id
        return member

    monkeypatch.setattr(membership, "replace_static_member", half_replace)
    d = Driver()
    d.join(version=5, group_instance_id="i", session_timeout_ms=10_000)
    d.sleep(3_000)
    with expect_violation("StaticMembersMapped"):
        d.join(version=5, group_instance_id="i", session_timeout_ms=10_000)


def test_every_invariant_has_a_mutant():
    tested = {
        "NoStaleGenerationCommit",
        "GenerationMonotonic",
        "LeaderIsMember",
        "AtMostOneOwnerPerPartition",
        "StableImpliesAllSynced",
        "StaticMembersMapped",
    }
    assert tested == set(INVARIANTS)


def test_the_unbroken_coordinator_passes_the_same_scenarios():
    d = Driver()
    leader, follower = stable_pair(d)
    d.join(leader, session_timeout_ms=10_000)
    d.join(follower, session_timeout_ms=10_000)
    stale = d.commit({("foo", 0): 5}, generation_id=1, member_id=follower)
    assert stale.response.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    assert protocols("range")  # the driver's default protocols decode as consumer subscriptions
