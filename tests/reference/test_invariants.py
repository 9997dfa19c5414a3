"""Every named invariant can fail: a deliberately broken coordinator (a mutant, patched
in for one test) must be caught under exactly that invariant's name. ``MUTANTS`` holds one
per entry of ``INVARIANTS``."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from driver import Driver, protocols

from coordspec import reference
from coordspec.reference.consumer_protocol import Assignment as ConsumerAssignment
from coordspec.reference.consumer_protocol import TopicPartitions, encode_assignment
from coordspec.reference.errors import ErrorCode, InvariantViolation
from coordspec.reference.failover import invariants as failover
from coordspec.reference.group import Heartbeat, coordinator, membership, offsets, rebalance, state
from coordspec.reference.group.consumer import invariants as consumer
from coordspec.reference.group.invariants import INVARIANTS
from coordspec.reference.group.transitions import COMPLETING, STABLE
from coordspec.reference.replication import invariants as replication


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


def coordinator_without_fencing(monkeypatch):
    monkeypatch.setattr(offsets, "validate_offset_commit", lambda group, req: None)
    d = Driver()
    leader, follower = stable_pair(d)
    d.join(leader, session_timeout_ms=10_000)  # a rebalance: generation 1 is ending
    d.join(follower, session_timeout_ms=10_000)
    assert d.group().generation_id == 2
    with expect_violation("NoStaleGenerationCommit"):
        d.commit({("foo", 0): 5}, generation_id=1, member_id=follower)


def generation_that_goes_back(monkeypatch):
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


def leader_that_left(monkeypatch):
    def remove_keeping_leader(self, member_id, choices):
        self.members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)

    monkeypatch.setattr(state.Group, "remove", remove_keeping_leader)
    d = Driver()
    leader, _ = stable_pair(d)
    with expect_violation("LeaderIsMember"):
        d.leave(leader)


def assignment_handed_to_everyone(monkeypatch):
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


def stable_before_the_write(monkeypatch):
    def eager(c, group, req):
        group.transition_to(STABLE, "AppendCompleted", c.now_ms)

    monkeypatch.setattr(membership, "write_leader_assignment", eager)
    d = Driver()
    join = d.join(session_timeout_ms=10_000)
    d.sleep(3_000)
    assert d.group().state == COMPLETING
    with expect_violation("StableImpliesAllSynced"):
        d.sync(join.response.member_id, 1)


def replacement_that_keeps_the_old_id(monkeypatch):
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


def transition_outside_the_table(monkeypatch):
    def straight_to_stable(c, group):
        group.generation_id += 1
        group.transition_to(STABLE, "CompleteJoin", c.now_ms)

    monkeypatch.setattr(rebalance, "init_next_generation", straight_to_stable)
    d = Driver()
    d.join(session_timeout_ms=10_000)
    with expect_violation("ValidTransition"):
        d.sleep(3_000)


def protocol_not_every_member_supports(monkeypatch):
    def every_members_protocols(self):
        return {p.name for m in self.members.values() for p in m.protocols}

    monkeypatch.setattr(state.Group, "candidate_protocols", every_members_protocols)
    d = Driver()
    d.join(session_timeout_ms=10_000, protocol_names=("range", "roundrobin"))
    d.join(session_timeout_ms=10_000, protocol_names=("range",))
    d.join(session_timeout_ms=10_000, protocol_names=("roundrobin",))  # outvoted, and lacks range
    with expect_violation("SelectedProtocolSupported"):
        d.sleep(3_000)


def request_answered_twice(monkeypatch):
    def heartbeat_twice(c, req):
        membership.heartbeat(c, req)
        membership.heartbeat(c, req)

    monkeypatch.setitem(coordinator._HANDLERS, Heartbeat, heartbeat_twice)
    d = Driver()
    leader, _ = stable_pair(d)
    with expect_violation("AtMostOneReply"):
        d.heartbeat(leader, 1)


MUTANTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "NoStaleGenerationCommit": coordinator_without_fencing,
    "GenerationMonotonic": generation_that_goes_back,
    "LeaderIsMember": leader_that_left,
    "AtMostOneOwnerPerPartition": assignment_handed_to_everyone,
    "StableImpliesAllSynced": stable_before_the_write,
    "StaticMembersMapped": replacement_that_keeps_the_old_id,
    "ValidTransition": transition_outside_the_table,
    "SelectedProtocolSupported": protocol_not_every_member_supports,
    "AtMostOneReply": request_answered_twice,
}


@pytest.mark.parametrize("invariant", MUTANTS)
def test_the_mutant_of_each_invariant_is_caught_under_its_name(monkeypatch, invariant):
    MUTANTS[invariant](monkeypatch)


def test_every_invariant_has_a_mutant():
    assert MUTANTS.keys() == INVARIANTS.keys()


def names_raised_in_the_reference() -> set[str]:
    names = set()
    for path in (Path(reference.__file__).parent).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "InvariantViolation"
            ):
                first = node.args[0]
                assert isinstance(first, ast.Constant), f"{path}: name the invariant literally"
                names.add(first.value)
    return names


def test_every_name_raised_in_the_reference_is_registered():
    registered = (
        INVARIANTS.keys()
        | replication.INVARIANTS.keys()
        | failover.INVARIANTS.keys()
        | consumer.INVARIANTS.keys()
    )
    raised = names_raised_in_the_reference()
    assert raised <= registered, f"raised but not registered: {sorted(raised - registered)}"
    assert len(raised) == len(registered)  # and every registered name is raised somewhere


def test_the_unbroken_coordinator_passes_the_same_scenarios():
    d = Driver()
    leader, follower = stable_pair(d)
    d.join(leader, session_timeout_ms=10_000)
    d.join(follower, session_timeout_ms=10_000)
    stale = d.commit({("foo", 0): 5}, generation_id=1, member_id=follower)
    assert stale.response.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    assert protocols("range")  # the driver's default protocols decode as consumer subscriptions
