"""Scenarios on the whole cluster (reference/replication/cluster.py), step by step, with
every invariant checked after each step by the Monitor: the seed design's "multiple
leaders in transition" argument, fencing by controller and leader epochs, acks=all and
min.insync.replicas, truncation, topic deletion, reassignment and restarts."""

from __future__ import annotations

import uuid

from coordspec.reference.replication.broker import Broker
from coordspec.reference.replication.cluster import Cluster
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.effects import (
    BecameFollower,
    IsrUpdated,
    LeadershipLost,
    ProduceAccepted,
    ProduceAcked,
    ProduceFailed,
    ReplicaStopped,
)
from coordspec.reference.replication.events import DeliverRequest
from coordspec.reference.replication.invariants import Monitor, can_commit
from coordspec.reference.replication.log import Record
from coordspec.reference.replication.messages import LeaderAndIsr, LeaderAndIsrPartition
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import (
    REASSIGN_PARTITIONS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    topic_path,
)

CONFIG = ReplicationConfig(
    min_insync_replicas=2, replica_lag_time_max_ms=2_000, zookeeper_session_timeout_ms=4_000
)
TP = TopicPartition("t", 0)


def new_cluster(replicas=(3, 2, 1), config=CONFIG) -> Cluster:
    cluster = Cluster([1, 2, 3], config, monitor=Monitor())
    cluster.settle()
    cluster.create_topic(TP.topic, {0: replicas})
    cluster.settle()
    return cluster


def of(notices, kind) -> list:
    return [n.effect for n in notices if isinstance(n.effect, kind)]


def deliver_to(cluster: Cluster, broker_id: int) -> list:
    (index,) = [i for i in cluster.deliverable() if cluster.in_flight[i].destination == broker_id][
        :1
    ]
    return cluster.deliver(index)


def replicate(cluster: Cluster, brokers, rounds: int = 2) -> list:
    notices = []
    for _ in range(rounds):
        for broker in brokers:
            notices += cluster.replicate(broker, TP)
    return notices


def state(cluster: Cluster) -> PartitionState:
    return cluster.published()[TP][0]


def test_multiple_leaders_in_transition_step_by_step():
    """The seed's argument: while a paused leader is replaced, two brokers believe they
    lead, yet only one can commit, and the replaced one learns it from its failed write."""
    cluster = new_cluster()
    assert cluster.controller_id() == 1 and state(cluster) == PartitionState(3, 0, (3, 2, 1), 1)
    cluster.produce(3, TP)
    assert len(of(replicate(cluster, [2, 1]), ProduceAcked)) == 1
    committed = cluster.broker(3).partitions[TP].log.records[0]

    # 1. The leader stops in a GC pause; its ZooKeeper session expires.
    cluster.pause(3)
    cluster.tick(5_000)
    # 2. The controller sees broker 3 gone: 2 is the first live ISR member in assignment order.
    cluster.deliver_watches(1)
    assert state(cluster) == PartitionState(2, 1, (2, 1), 1)
    # 3. Broker 2 applies the decision. Two brokers now believe they lead.
    deliver_to(cluster, 2)
    assert cluster.leaders(TP) == [2, 3]
    assert not can_commit(cluster, 2, TP), (
        "broker 1 still follows 3 at epoch 0: 2's HW cannot move yet"
    )
    # 4. Broker 3 resumes: a zombie that believes it leads at epoch 0 with ISR (3, 2, 1).
    cluster.resume(3)
    zombie = cluster.broker(3).partitions[TP]
    assert (zombie.role, zombie.leader_epoch, zombie.isr) == (Role.LEADER, 0, (3, 2, 1))
    accepted = of(cluster.produce(3, TP), ProduceAccepted)
    assert len(accepted) == 1, "a zombie still appends to its own log"
    # Broker 1 has not heard of epoch 1 and fetches the zombie's record; 2 never fetches from 3.
    assert not of(replicate(cluster, [1]), ProduceAcked)
    assert cluster.broker(1).partitions[TP].log.log_end_offset == 2
    assert not can_commit(cluster, 3, TP)
    # 5. Broker 1 applies epoch 1, follows 2, and truncates the zombie's record away.
    deliver_to(cluster, 1)
    replicate(cluster, [1], rounds=1)
    assert cluster.broker(1).partitions[TP].log.records == [committed]
    assert can_commit(cluster, 2, TP)
    cluster.produce(2, TP)
    assert len(of(replicate(cluster, [1]), ProduceAcked)) == 1
    # 6. The zombie's own ShrinkIsr is conditional on zk_version 0: it fails, the zombie re-reads and steps down.
    notices = cluster.tick(2_500)
    assert of(notices, LeadershipLost) == [LeadershipLost("t", 0, 0)]
    assert of(notices, ProduceFailed) == [
        ProduceFailed("t", 0, accepted[0].payload_id, "NOT_LEADER_OR_FOLLOWER")
    ]
    assert BecameFollower("t", 0, 1, 2) in of(notices, BecameFollower)
    assert cluster.leaders(TP) == [2]
    # 7. It catches up from the new leader and rejoins the ISR; the zombie's record is gone everywhere.
    replicate(cluster, [3, 3, 3])
    logs = {b: cluster.broker(b).partitions[TP].log.records for b in (1, 2, 3)}
    assert logs[1] == logs[2] == logs[3] and accepted[0].payload_id not in {
        r.payload_id for r in logs[2]
    }
    assert 3 in state(cluster).isr


def test_a_leader_and_isr_from_an_older_controller_or_leader_epoch_is_ignored():
    broker = Broker(2, CONFIG)
    decision = LeaderAndIsrPartition("t", 0, 1, 5, (1, 2), 3, (1, 2), 2)
    broker.handle(DeliverRequest(0, LeaderAndIsr(1, 2, (decision,))))
    assert broker.partitions[TP].leader_epoch == 5
    older_controller = LeaderAndIsr(
        3, 1, (LeaderAndIsrPartition("t", 0, 2, 9, (2,), 4, (1, 2), 1),)
    )
    assert broker.handle(DeliverRequest(0, older_controller)) == []
    older_epoch = LeaderAndIsr(1, 2, (LeaderAndIsrPartition("t", 0, 2, 4, (2,), 4, (1, 2), 2),))
    assert broker.handle(DeliverRequest(0, older_epoch)) == []
    same_epoch = LeaderAndIsr(1, 3, (LeaderAndIsrPartition("t", 0, 2, 5, (2,), 4, (1, 2), 3),))
    assert broker.handle(DeliverRequest(0, same_epoch)) == []
    assert (broker.partitions[TP].leader, broker.partitions[TP].leader_epoch) == (1, 5)


def test_acks_all_waits_for_every_isr_member():
    cluster = new_cluster()
    cluster.produce(3, TP)
    assert not of(replicate(cluster, [2]), ProduceAcked), "1 is in the ISR and has not fetched"
    assert len(of(replicate(cluster, [1]), ProduceAcked)) == 1


def test_produce_below_min_insync_replicas_is_refused():
    cluster = new_cluster()
    cluster.tick(2_500)  # neither follower fetched: the leader shrinks its ISR to itself
    assert state(cluster).isr == (3,)
    notices = cluster.produce(3, TP)
    assert [type(e) for e in of(notices, ProduceFailed)] == [ProduceFailed] and of(
        notices, ProduceFailed
    )[0].error == "NOT_ENOUGH_REPLICAS"


def test_a_follower_that_caught_up_rejoins_the_isr():
    cluster = new_cluster()
    shrunk = of(cluster.tick(2_500), IsrUpdated)
    assert shrunk == [IsrUpdated("t", 0, 0, (3,), 1)], (
        "ShrinkIsr: same leader epoch, a new zk_version"
    )
    expanded = of(replicate(cluster, [1]), IsrUpdated)
    assert expanded == [IsrUpdated("t", 0, 0, (3, 1), 2)], "ExpandIsr appends the follower"
    assert state(cluster).isr == (3, 1)


def test_a_crashed_leader_is_replaced_by_an_isr_member_with_every_committed_record():
    cluster = new_cluster()
    for _ in range(3):
        cluster.produce(3, TP)
    assert len(of(replicate(cluster, [2, 1]), ProduceAcked)) == 3
    cluster.crash(3)
    cluster.tick(5_000)
    cluster.settle()
    assert state(cluster) == PartitionState(2, 1, (2, 1), 1) and cluster.leaders(TP) == [2]
    assert [r.payload_id for r in cluster.broker(2).partitions[TP].log.records] == [1, 2, 3]


def test_a_restarted_broker_learns_the_published_decisions_and_truncates():
    cluster = new_cluster()
    cluster.produce(3, TP)
    replicate(cluster, [2, 1])
    cluster.crash(3)
    cluster.tick(5_000)
    cluster.settle()
    cluster.produce(2, TP)
    replicate(cluster, [1])
    cluster.restart(3)
    cluster.settle()
    assert (
        cluster.broker(3).partitions[TP].role == Role.FOLLOWER
        and cluster.broker(3).partitions[TP].leader == 2
    )
    replicate(cluster, [3], rounds=3)
    assert (
        cluster.broker(3).partitions[TP].log.records == cluster.broker(2).partitions[TP].log.records
    )


def test_a_controller_crash_moves_the_controller_with_a_higher_epoch():
    cluster = new_cluster()
    cluster.crash(1)
    cluster.tick(5_000)
    notices = cluster.settle()
    assert cluster.controller_id() in (2, 3) and cluster.controller_epoch() == 2
    assert [b for b in (2, 3) if cluster.broker(b).controller_epoch == 2] == [2, 3], (
        "the new controller re-sent its decisions"
    )
    assert not of(notices, BecameFollower) and cluster.leaders(TP) == [3], (
        "re-sent at the same leader epoch: nothing changes"
    )


def test_deleting_a_topic_stops_its_replicas_and_removes_its_znodes():
    cluster = new_cluster()
    cluster.produce(3, TP)
    cluster.delete_topic("t")
    notices = cluster.settle()
    assert sorted(n.broker_id for n in notices if isinstance(n.effect, ReplicaStopped)) == [1, 2, 3]
    assert cluster.zk.tree.node(topic_path("t")) is None and TP not in cluster.published()
    assert all(TP not in cluster.broker(b).logs for b in (1, 2, 3))


def test_added_partitions_get_leaders_and_replicas_as_a_new_topics_do():
    """ISR-20: the controller's data watch on the topic's assignment sees the added
    partitions and runs InitLeaders for them alone; the old partition keeps its state."""
    cluster = new_cluster()
    before = cluster.published()[TP]
    cluster.add_partitions("t", [(1, 2, 3), (2, 3, 1)])
    cluster.settle()
    published = cluster.published()
    assert published[TP] == before, "the existing partition is untouched"
    for p, leader in ((1, 1), (2, 2)):
        tp = TopicPartition("t", p)
        assert published[tp] == (PartitionState(leader, 0, published[tp][0].isr, 1), 0)
        assert sorted(published[tp][0].isr) == [1, 2, 3]
        assert cluster.leaders(tp) == [leader] and sorted(cluster.followers(tp)) == sorted(
            {1, 2, 3} - {leader}
        )
    assert of(cluster.produce(2, TopicPartition("t", 2)), ProduceAccepted)


def test_partitions_added_while_the_controller_moves_are_started_by_the_new_one():
    """ISR-20: a controller that crashes before its watch fires leaves the added
    partition to its successor, which reads every assignment on failover."""
    cluster = new_cluster()
    old = cluster.controller_id()
    cluster.add_partitions("t", [(3, 1, 2)])
    cluster.crash(old)
    cluster.tick(5_000)
    cluster.settle()
    assert cluster.controller_id() not in (None, old)
    tp = TopicPartition("t", 1)
    assert cluster.published()[tp][0].leader == (3 if old != 3 else 1)
    assert cluster.leaders(tp) == [cluster.published()[tp][0].leader]


def test_a_reassignment_starts_new_replicas_waits_for_the_isr_then_switches():
    """The controller's writes of the assignment keep the topic's id (KIP-516)."""
    topic_id = uuid.UUID(int=42)
    cluster = Cluster([1, 2, 3, 4], CONFIG, monitor=Monitor())
    cluster.settle()
    cluster.create_topic("t", {0: (1, 2)}, topic_id)
    cluster.settle()
    cluster.produce(1, TP)
    replicate(cluster, [2])
    cluster.reassign({TP: (3, 4)})
    cluster.settle()
    assignment = TopicAssignment.decode(topic_path("t"), cluster.zk.tree.node(topic_path("t")).data)
    assert assignment == TopicAssignment({0: (3, 4, 1, 2)}, {0: (3, 4)}, {0: (1, 2)}, topic_id), (
        "Kafka's reassignTo: target first"
    )
    assert state(cluster).leader_epoch == 1 and sorted(cluster.followers(TP)) == [2, 3, 4]
    replicate(cluster, [2, 3, 4], rounds=3)
    cluster.settle()
    assignment = TopicAssignment.decode(topic_path("t"), cluster.zk.tree.node(topic_path("t")).data)
    assert assignment == TopicAssignment.of({0: (3, 4)}, topic_id)
    assert state(cluster).leader == 3 and set(state(cluster).isr) == {3, 4}
    assert cluster.zk.tree.node(REASSIGN_PARTITIONS) is None
    assert TP not in cluster.broker(1).logs and TP not in cluster.broker(2).logs
    assert cluster.broker(3).partitions[TP].log.records == [Record(0, 1)]


def test_a_new_controller_resumes_a_reassignment_in_progress():
    cluster = Cluster([1, 2, 3, 4], CONFIG, monitor=Monitor())
    cluster.settle()
    cluster.create_topic("t", {0: (2, 3)})
    cluster.settle()
    cluster.reassign({TP: (3, 4)})
    cluster.settle()
    cluster.crash(1)  # the controller, before broker 4 has caught up
    cluster.tick(5_000)
    cluster.settle()
    assert cluster.controller_id() in (2, 3, 4)
    assignment = TopicAssignment.decode(topic_path("t"), cluster.zk.tree.node(topic_path("t")).data)
    assert assignment == TopicAssignment({0: (3, 4, 2)}, {0: (4,)}, {0: (2,)}), (
        "read back, not restarted from the full set"
    )
    replicate(cluster, [2, 3, 4], rounds=3)
    cluster.settle()
    assert TopicAssignment.decode(
        topic_path("t"), cluster.zk.tree.node(topic_path("t")).data
    ) == TopicAssignment.of({0: (3, 4)})
    assert cluster.zk.tree.node(REASSIGN_PARTITIONS) is None


def test_a_zombie_leaders_isr_write_is_refused_and_changes_nothing():
    cluster = new_cluster()
    cluster.pause(3)
    cluster.tick(5_000)
    cluster.settle()  # broker 2 leads at epoch 1; the request to 3 waits
    published = cluster.published()[TP]
    writes = len(cluster.state_writes)
    cluster.resume(3)
    notices = cluster.tick(100)  # the zombie's followers are long silent: it tries ShrinkIsr
    assert cluster.published()[TP] == published and len(cluster.state_writes) == writes, (
        "ZooKeeper refused the write"
    )
    assert of(notices, LeadershipLost) == [LeadershipLost("t", 0, 0)] and not of(
        notices, IsrUpdated
    )
    assert cluster.leaders(TP) == [2]
