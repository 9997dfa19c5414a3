"""The controller's decision rules (reference/replication/election.py), one partition at a
time: ElectLeader after brokers come and go, InitLeaders, and the reassignment's end."""

from __future__ import annotations

from coordspec.reference.replication.election import (
    elect_leader,
    elect_reassigned_leader,
    init_leader,
)
from coordspec.reference.replication.znodes import PartitionState

STATE = PartitionState(leader=3, leader_epoch=4, isr=(1, 2, 3), controller_epoch=1)


def test_a_live_leader_keeps_leading_and_dead_members_leave_the_isr():
    assert elect_leader((3, 1, 2), STATE, {1, 3}, 2, unclean=False) == PartitionState(
        3, 5, (1, 3), 2
    )


def test_nothing_is_written_when_every_isr_member_is_live():
    assert elect_leader((3, 1, 2), STATE, {1, 2, 3}, 2, unclean=False) is None


def test_the_first_live_isr_member_in_assignment_order_leads():
    # Assignment order (3, 2, 1) picks 2 although the ISR lists 1 first.
    assert elect_leader((3, 2, 1), STATE, {1, 2}, 2, unclean=False) == PartitionState(
        2, 5, (1, 2), 2
    )


def test_a_live_replica_outside_the_isr_is_not_elected_cleanly():
    state = PartitionState(3, 4, (3,), 1)
    offline = elect_leader((3, 2, 1), state, {1, 2}, 2, unclean=False)
    assert offline == PartitionState(-1, 5, (3,), 2), (
        "offline: leader -1, the ISR keeps the last leader (never empty)"
    )


def test_unclean_election_makes_the_first_live_replica_leader_alone():
    state = PartitionState(3, 4, (3,), 1)
    assert elect_leader((3, 2, 1), state, {1, 2}, 2, unclean=True) == PartitionState(2, 5, (2,), 2)


def test_an_offline_partition_stays_offline_without_writes():
    state = PartitionState(-1, 5, (3,), 2)
    assert elect_leader((3, 2, 1), state, {1, 2}, 2, unclean=False) is None


def test_an_offline_partition_comes_back_with_its_last_isr_member():
    state = PartitionState(-1, 5, (3,), 2)
    assert elect_leader((1, 2, 3), state, {1, 2, 3}, 2, unclean=False) == PartitionState(
        3, 6, (3,), 2
    )


def test_unclean_election_with_no_live_replica_goes_offline():
    assert elect_leader(
        (3,), PartitionState(3, 0, (3,), 1), set(), 1, unclean=True
    ) == PartitionState(-1, 1, (3,), 1)


def test_init_leaders_takes_the_first_live_replica_and_all_live_replicas_as_isr():
    assert init_leader((3, 1, 2), {1, 2}, 7) == PartitionState(1, 0, (1, 2), 7)
    assert init_leader((3,), {1, 2}, 7) is None, "no live replica: no state is written yet"


def test_a_reassignment_ends_with_a_target_leading_and_the_removed_replicas_out_of_the_isr():
    state = PartitionState(1, 3, (1, 2, 3), 1)
    assert elect_reassigned_leader((3, 2), state, {1, 2, 3}, 2) == PartitionState(3, 4, (2, 3), 2)
    assert elect_reassigned_leader((2, 1), state, {1, 2, 3}, 2) == PartitionState(1, 4, (1, 2), 2)
