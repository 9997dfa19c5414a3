"""Replica logs (reference/replication/log.py) and the follower's truncation: fetching
with the epoch of its last record, a follower ends with exactly the prefix it shares with
its leader (what KIP-101/KIP-279's epoch exchange computes), whatever the two logs hold."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given

from coordspec.reference.replication.events import Fetch
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.messages import LeaderAndIsrPartition
from coordspec.reference.replication.partition import Partition
from coordspec.reference.replication.znodes import TopicPartition

TP = TopicPartition("t", 0)


def log_of(*epochs: int) -> ReplicaLog:
    return ReplicaLog([Record(e, i) for i, e in enumerate(epochs)])


def test_end_offset_for_epoch_is_the_start_of_the_next_epoch():
    log = log_of(0, 0, 2, 2, 5)
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(1) == (0, 2), "no epoch 1: the largest epoch below it"
    assert log.end_offset_for_epoch(2) == (2, 4)
    assert log.end_offset_for_epoch(7) == (5, 5)
    assert ReplicaLog().end_offset_for_epoch(3) == (-1, 0)
    assert log_of(4).end_offset_for_epoch(3) == (-1, 0)


def test_truncation_lowers_the_high_watermark():
    log = log_of(0, 0, 1)
    log.high_watermark = 3
    log.truncate_to(1)
    assert (log.log_end_offset, log.high_watermark) == (1, 1)


# Logs as replicas of one partition hold them: one leader per epoch, so histories share a
# prefix and then diverge, each appending at epochs that only grow.
histories = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=8)


def diverged(shared, leader_tail, follower_tail) -> tuple[ReplicaLog, ReplicaLog]:
    base = sorted(e for e, _ in shared)
    top = base[-1] if base else 0
    common = [Record(e, 1000 + i) for i, e in enumerate(base)]
    leader = common + [
        Record(top + 1 + e, 2000 + i) for i, e in enumerate(sorted(e for e, _ in leader_tail))
    ]
    top_leader = leader[-1].leader_epoch if leader else 0
    # The follower's own records come from an epoch the leader never wrote records of.
    follower = common + [
        Record(top_leader + 10 + e, 3000 + i)
        for i, e in enumerate(sorted(e for e, _ in follower_tail))
    ]
    return ReplicaLog(leader), ReplicaLog(follower)


def fetch_until_caught_up(leader_log: ReplicaLog, follower_log: ReplicaLog) -> int:
    epoch = max([r.leader_epoch for r in leader_log.records + follower_log.records] + [0]) + 100
    leader = Partition(TP, 1, leader_log)
    follower = Partition(TP, 2, follower_log)
    decision = LeaderAndIsrPartition("t", 0, 1, epoch, (1, 2), 0, (1, 2), 1)
    leader.apply(0, decision, 1)
    follower.apply(0, decision, 1)
    for fetches in range(1, 50):
        request = follower.fetch_request(0)
        response, _ = leader.serve_fetch(request, 1)
        follower.apply_fetch_response(response)
        if follower.log.records == leader.log.records:
            return fetches
    raise AssertionError("the follower never caught up")


@given(histories, histories, histories)
def test_a_follower_truncates_to_the_prefix_it_shares_with_its_leader(
    shared, leader_tail, follower_tail
):
    leader_log, follower_log = diverged(shared, leader_tail, follower_tail)
    expected = list(leader_log.records)
    assert fetch_until_caught_up(leader_log, follower_log) <= 3
    assert leader_log.records == expected


def test_a_fetch_at_another_leader_epoch_is_refused():
    leader = Partition(TP, 1, ReplicaLog())
    leader.apply(0, LeaderAndIsrPartition("t", 0, 1, 4, (1, 2), 0, (1, 2), 1), 1)
    stale, _ = leader.serve_fetch(Fetch(0, 2, "t", 0, 3, 0, -1), 1)
    ahead, _ = leader.serve_fetch(Fetch(0, 2, "t", 0, 5, 0, -1), 1)
    assert (stale.error, ahead.error) == ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH")
