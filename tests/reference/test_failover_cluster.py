"""Coordinator failover on the replication Cluster: scenarios step by step (CF-6, CF-9 … CF-12).

Every host step is checked by the failover Monitor and every replication step by the
replication Monitor, so each scenario also shows the invariants holding along the way.
"""

from __future__ import annotations

import itertools

import pytest
from driver import kafka_test_config, protocols

from coordspec.reference.errors import ErrorCode, InvariantViolation, UsageError
from coordspec.reference.failover.cluster import FailoverCluster
from coordspec.reference.failover.partition import PartitionState
from coordspec.reference.group import (
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    FetchTopic,
    Heartbeat,
    JoinGroup,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
)
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.invariants import Monitor as ReplicationMonitor

GROUP = "my-group"  # offsets partition 0 of 1
SESSION_MS = 60_000  # members outlive a ZooKeeper session expiry (18 s)
_ids = itertools.count(1)


def cluster(*, check_replication: bool = True, **replication) -> FailoverCluster:
    fc = FailoverCluster(
        [1, 2, 3],
        1,
        group_config=kafka_test_config(),
        replication_config=ReplicationConfig(**replication),
        replication_monitor=ReplicationMonitor() if check_replication else None,
    )
    fc.load_all()
    return fc


def send(fc: FailoverCluster, broker: int, cls, version: int, **fields) -> int:
    request_id = next(_ids)
    fc.send(broker, cls(request_id, version, fc.now_ms, **fields))
    return request_id


def answer(fc: FailoverCluster, broker: int, request_id: int):
    reply = fc.reply(broker, request_id)
    return None if reply is None else reply.response


def join(fc: FailoverCluster, broker: int, member_id: str = "") -> int:
    return send(
        fc,
        broker,
        JoinGroup,
        3,
        group_id=GROUP,
        member_id=member_id,
        protocols=protocols("range"),
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
    )


def sync(fc: FailoverCluster, broker: int, member_id: str, generation: int) -> int:
    return send(
        fc, broker, SyncGroup, 3, group_id=GROUP, member_id=member_id, generation_id=generation
    )


def commit(
    fc: FailoverCluster, broker: int, offset: int, member_id: str = "", generation: int = -1
) -> int:
    return send(
        fc,
        broker,
        OffsetCommit,
        9,
        group_id=GROUP,
        member_id=member_id,
        generation_id=generation,
        topics=(CommitTopic("foo", (CommitPartition(0, offset),)),),
    )


def committed_offset(fc: FailoverCluster, broker: int) -> int:
    request = send(fc, broker, OffsetFetch, 9, group_id=GROUP, topics=(FetchTopic("foo", (0,)),))
    return answer(fc, broker, request).topics[0].partitions[0].committed_offset


def commit_error(fc: FailoverCluster, broker: int, request_id: int) -> ErrorCode | None:
    response = answer(fc, broker, request_id)
    return None if response is None else response.topics[0].partitions[0].error_code


def fail_over(fc: FailoverCluster, crashed: int) -> int:
    """Crash the coordinator, let its session expire and the controller elect; the new one loads."""
    fc.crash(crashed)
    fc.tick(20_000)
    fc.settle()
    new = fc.coordinator_for(GROUP)
    assert new not in (None, crashed)
    assert fc.hosts[new].state(0) is PartitionState.LOADING
    assert fc.hosts[new].partition_for(GROUP) == 0
    fc.load(new, 0)
    return new


def stable_group(fc: FailoverCluster, broker: int) -> tuple[str, int]:
    """One member joins and syncs; its assignment is committed. (member id, generation)"""
    joined = join(fc, broker)
    fc.tick(3_000)  # group.initial.rebalance.delay.ms
    response = answer(fc, broker, joined)
    synced = sync(fc, broker, response.member_id, response.generation_id)
    fc.replicate_all()
    assert answer(fc, broker, synced).error_code == ErrorCode.NONE
    return response.member_id, response.generation_id


def test_commit_acknowledged_only_when_every_isr_member_has_it():
    fc = cluster()
    leader = fc.coordinator_for(GROUP)
    followers = [b for b in (1, 2, 3) if b != leader]
    request = commit(fc, leader, 42)
    assert commit_error(fc, leader, request) is None
    fc.replicate(followers[0], 0)  # fetches the batch
    fc.replicate(followers[0], 0)  # its next fetch tells the leader it has it
    assert commit_error(fc, leader, request) is None  # one ISR member still lacks it
    fc.replicate(followers[1], 0)
    assert commit_error(fc, leader, request) is None  # it has it; the leader does not know yet
    fc.replicate(followers[1], 0)
    assert commit_error(fc, leader, request) == ErrorCode.NONE
    assert committed_offset(fc, leader) == 42


def test_loading_answers_load_in_progress_then_the_committed_state():
    fc = cluster()
    old = fc.coordinator_for(GROUP)
    member_id, generation = stable_group(fc, old)
    acked = commit(fc, old, 10, member_id, generation)
    fc.replicate_all()
    assert commit_error(fc, old, acked) == ErrorCode.NONE
    fc.crash(old)
    fc.tick(20_000)
    fc.settle()
    new = fc.coordinator_for(GROUP)
    fetch = send(fc, new, OffsetFetch, 9, group_id=GROUP, topics=(FetchTopic("foo", (0,)),))
    assert answer(fc, new, fetch).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    other = next(b for b in (1, 2, 3) if b not in (old, new))
    assert commit_error(fc, other, commit(fc, other, 11)) == ErrorCode.NOT_COORDINATOR
    fc.load(new, 0)
    assert committed_offset(fc, new) == 10
    group = fc.hosts[new].serving(0).group(GROUP)
    assert (str(group.state), group.generation_id, list(group.members)) == (
        "Stable",
        generation,
        [member_id],
    )


def test_coordinator_moved_in_the_middle_of_a_rebalance():
    """Generation 2 was handed out by JoinGroup but never synced, so never written: the new
    coordinator resumes at generation 1, and the members of the lost generation are fenced."""
    fc = cluster()
    old = fc.coordinator_for(GROUP)
    first, generation = stable_group(fc, old)
    second_join = join(fc, old)
    rejoin = join(fc, old, first)
    assert answer(fc, old, rejoin).generation_id == generation + 1
    second = answer(fc, old, second_join).member_id
    new = fail_over(fc, old)
    group = fc.hosts[new].serving(0).group(GROUP)
    assert (str(group.state), group.generation_id, list(group.members)) == (
        "Stable",
        generation,
        [first],
    )
    assert (
        answer(fc, new, sync(fc, new, first, generation + 1)).error_code
        == ErrorCode.ILLEGAL_GENERATION
    )
    assert (
        answer(fc, new, sync(fc, new, second, generation + 1)).error_code
        == ErrorCode.UNKNOWN_MEMBER_ID
    )
    heartbeat = send(
        fc, new, Heartbeat, 3, group_id=GROUP, member_id=first, generation_id=generation
    )
    # The loaded log ends past the high watermark the new leader knows: Kafka 4.0 holds a
    # write operation's answer until what was written before it is committed.
    assert answer(fc, new, heartbeat) is None
    fc.replicate_all()
    assert answer(fc, new, heartbeat).error_code == ErrorCode.NONE


def test_coordinator_moved_while_committing():
    """The unreplicated commit dies with its coordinator, unanswered; the acknowledged one
    survives, and the retry on the new coordinator is acknowledged once replicated."""
    fc = cluster()
    old = fc.coordinator_for(GROUP)
    member_id, generation = stable_group(fc, old)
    acked = commit(fc, old, 10, member_id, generation)
    fc.replicate_all()
    assert commit_error(fc, old, acked) == ErrorCode.NONE
    lost = commit(fc, old, 20, member_id, generation)
    new = fail_over(fc, old)
    assert commit_error(fc, old, lost) is None  # the client times out
    assert committed_offset(fc, new) == 10
    retry = commit(fc, new, 20, member_id, generation)
    assert commit_error(fc, new, retry) is None
    fc.replicate_all()
    assert commit_error(fc, new, retry) == ErrorCode.NONE
    assert committed_offset(fc, new) == 20


def test_zombie_coordinator_commit_is_never_acknowledged():
    """A paused leader resumes believing it still leads. Its commit goes to its own log only:
    the followers fetch from the new leader, so its high watermark cannot pass the commit.
    When it learns of the new leader, the commit fails with NOT_COORDINATOR."""
    fc = cluster()
    zombie = fc.coordinator_for(GROUP)
    fc.pause(zombie)
    fc.tick(20_000)
    fc.settle()
    leader = fc.coordinator_for(GROUP)
    assert leader != zombie
    fc.load(leader, 0)
    fc.resume(zombie)
    assert fc.hosts[zombie].state(0) is PartitionState.SERVING  # it has not heard yet
    request = commit(fc, zombie, 42)
    fc.replicate_all()
    fc.tick(1_000)
    assert commit_error(fc, zombie, request) is None
    fc.settle()  # the controller's LeaderAndIsr reaches it
    assert commit_error(fc, zombie, request) == ErrorCode.NOT_COORDINATOR
    assert fc.hosts[zombie].state(0) is None
    assert committed_offset(fc, leader) == -1


def test_unclean_election_loses_an_acknowledged_commit():
    """With unclean.leader.election.enable a lagging replica can lead: the Monitor reports the
    acknowledged commit it never had, as soon as the new coordinator has loaded. (The
    replication Monitor, left out here, reports NoCommittedRecordLost one step earlier.)"""
    fc = cluster(check_replication=False, unclean_leader_election_enable=True)
    leader = fc.coordinator_for(GROUP)
    fc.tick(31_000)  # the followers never fetch: replica.lag.time.max.ms passes, the ISR shrinks
    fc.settle()
    request = commit(fc, leader, 42)
    assert commit_error(fc, leader, request) == ErrorCode.NONE  # the ISR is the leader alone
    fc.crash(leader)
    fc.tick(20_000)
    fc.settle()
    new = fc.coordinator_for(GROUP)
    with pytest.raises(InvariantViolation, match="NoCommittedOffsetLost"):
        fc.load(new, 0)


def test_delete_groups_waits_for_its_tombstone_and_fails_on_resignation():
    fc = cluster()
    old = fc.coordinator_for(GROUP)
    acked = commit(fc, old, 1)
    fc.replicate_all()
    assert commit_error(fc, old, acked) == ErrorCode.NONE
    request = send(fc, old, DeleteGroups, 2, groups_names=(GROUP,))
    assert answer(fc, old, request) is None  # the tombstones are not committed yet
    fc.pause(old)
    fc.tick(20_000)
    fc.settle()
    fc.resume(old)
    fc.settle()  # the old coordinator learns it lost the partition
    assert [(r.group_id, r.error_code) for r in answer(fc, old, request).results] == [
        (GROUP, ErrorCode.NOT_COORDINATOR)
    ]
    new = fc.coordinator_for(GROUP)
    fc.load(new, 0)
    assert committed_offset(fc, new) == 1  # the tombstone never committed: the group is still there


def test_misuse_raises_usage_error():
    fc = cluster()
    leader = fc.coordinator_for(GROUP)
    with pytest.raises(UsageError, match="is not loading offsets partition 0"):
        fc.load(leader, 0)
    fc.crash(leader)
    with pytest.raises(UsageError, match=f"broker {leader} is not running"):
        commit(fc, leader, 1)
    with pytest.raises(UsageError, match=r"replication factor 4 needs 1\.\.3 brokers"):
        FailoverCluster([1, 2, 3], 1, replication_factor=4)
