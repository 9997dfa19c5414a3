"""A Hypothesis state machine over the whole replication model: three brokers on the
ZooKeeper model crash and restart, pause (GC) and resume as zombies, lose their ZooKeeper
sessions; the controller moves; topics are created, deleted, given more partitions and reassigned; clients
produce with acks=all to any broker and followers replicate. Every named invariant of
spec/isr-versioned-writes.md is an @invariant, checked after every step.
Examples: --examples N (default 300)."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import assume, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordspec.reference.replication.cluster import Cluster
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.invariants import (
    check_at_most_one_leader_can_commit,
    check_controller_epoch_monotonic,
    check_leader_in_isr,
    check_no_committed_record_lost,
    check_no_write_with_stale_version,
    forget_deleted_topics,
)
from coordspec.reference.replication.znodes import (
    REASSIGN_PARTITIONS,
    TopicAssignment,
    TopicPartition,
    topic_path,
)
from coordspec.reference.zookeeper.sessions import SessionState

BROKERS = [1, 2, 3]
CONFIG = ReplicationConfig(
    min_insync_replicas=1, replica_lag_time_max_ms=2_000, zookeeper_session_timeout_ms=4_000
)
REPLICA_SETS = st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True).map(tuple)


class ReplicationMachine(RuleBasedStateMachine):
    config = CONFIG

    def __init__(self) -> None:
        super().__init__()
        self.cluster = Cluster(BROKERS, self.config)
        self.cluster.settle()
        self.topics: list[str] = []
        self.created = 0
        self.epoch: int | None = None
        self.acks = 0

    def partitions(self) -> list[TopicPartition]:
        return [tp for tp in self.cluster.published() if tp.topic in self.topics]

    def _running(self) -> list[int]:
        return [b for b, s in self.cluster.slots.items() if s.running]

    # -- topics ------------------------------------------------------------------------------

    @precondition(lambda self: len(self.topics) < 3)
    @rule(replicas=st.lists(REPLICA_SETS, min_size=1, max_size=2))
    def create_topic(self, replicas):
        name = f"t{self.created}"
        self.created += 1
        self.topics.append(name)
        self.cluster.create_topic(name, dict(enumerate(replicas)))

    @precondition(lambda self: self.topics)
    @rule(data=st.data())
    def delete_topic(self, data):
        topic = data.draw(st.sampled_from(self.topics))
        self.topics.remove(topic)
        self.cluster.delete_topic(topic)

    @precondition(
        lambda self: self.topics and self.cluster.zk.tree.node(REASSIGN_PARTITIONS) is None
    )
    @rule(data=st.data(), replicas=st.lists(REPLICA_SETS, min_size=1, max_size=2))
    def add_partitions(self, data, replicas):
        topic = data.draw(st.sampled_from(self.topics))
        node = self.cluster.zk.tree.node(topic_path(topic))
        assignment = TopicAssignment.decode(topic_path(topic), node.data)
        assume(not assignment.adding_replicas and len(assignment.partitions) < 4)
        self.cluster.add_partitions(topic, replicas)

    @precondition(
        lambda self: self.partitions() and self.cluster.zk.tree.node(REASSIGN_PARTITIONS) is None
    )
    @rule(data=st.data(), replicas=REPLICA_SETS)
    def reassign(self, data, replicas):
        tp = data.draw(st.sampled_from(sorted(self.partitions())))
        self.cluster.reassign({tp: replicas})

    # -- clients and replication -------------------------------------------------------------

    @precondition(lambda self: self.partitions() and self._running())
    @rule(data=st.data())
    def produce(self, data):
        tp = data.draw(st.sampled_from(sorted(self.partitions())))
        broker = data.draw(st.sampled_from(self._running()))
        self.acks += sum(
            type(n.effect).__name__ == "ProduceAcked" for n in self.cluster.produce(broker, tp)
        )

    @precondition(lambda self: self.partitions())
    @rule(records=st.integers(1, 3))
    def produce_to_leaders_and_replicate(self, records):
        """Progress: clients find the published leaders, followers fetch twice."""
        self.cluster.settle()
        for tp, (state, _) in sorted(self.cluster.published().items()):
            if self.cluster.slots.get(state.leader) and self.cluster.slots[state.leader].running:
                for _ in range(records):
                    self.acks += sum(
                        type(n.effect).__name__ == "ProduceAcked"
                        for n in self.cluster.produce(state.leader, tp)
                    )
            for _ in range(2):
                for broker in self._running():
                    self.acks += sum(
                        type(n.effect).__name__ == "ProduceAcked"
                        for n in self.cluster.replicate(broker, tp)
                    )

    @precondition(lambda self: self.partitions() and self._running())
    @rule(data=st.data(), times=st.integers(1, 3))
    def replicate(self, data, times):
        tp = data.draw(st.sampled_from(sorted(self.partitions())))
        for _ in range(times):
            for broker in self._running():
                self.acks += sum(
                    type(n.effect).__name__ == "ProduceAcked"
                    for n in self.cluster.replicate(broker, tp)
                )

    # -- control plane -----------------------------------------------------------------------

    @precondition(lambda self: self.cluster.deliverable())
    @rule(data=st.data())
    def deliver(self, data):
        self.cluster.deliver(data.draw(st.sampled_from(self.cluster.deliverable())))

    @precondition(lambda self: any(s.running and s.inbox for s in self.cluster.slots.values()))
    @rule(data=st.data())
    def deliver_watches(self, data):
        self.cluster.deliver_watches(
            data.draw(
                st.sampled_from([b for b, s in self.cluster.slots.items() if s.running and s.inbox])
            )
        )

    @rule()
    def settle(self):
        self.cluster.settle()

    @rule(ms=st.sampled_from([100, 1_000, 2_500, 5_000]))
    def tick(self, ms):
        self.cluster.tick(ms)

    # -- faults ------------------------------------------------------------------------------

    @precondition(
        lambda self: len([s for s in self.cluster.slots.values() if s.broker is not None]) > 1
    )
    @rule(data=st.data())
    def crash(self, data):
        self.cluster.crash(
            data.draw(
                st.sampled_from([b for b, s in self.cluster.slots.items() if s.broker is not None])
            )
        )

    def _restartable(self) -> list[int]:
        zk = self.cluster.zk
        return [
            b
            for b, s in self.cluster.slots.items()
            if s.broker is None and zk.session_state(s.session_id) != SessionState.OPEN
        ]

    @precondition(lambda self: self._restartable())
    @rule(data=st.data())
    def restart(self, data):
        self.cluster.restart(data.draw(st.sampled_from(self._restartable())))

    @precondition(lambda self: len(self._running()) > 1)
    @rule(data=st.data())
    def pause(self, data):
        self.cluster.pause(data.draw(st.sampled_from(self._running())))

    @precondition(lambda self: any(s.paused for s in self.cluster.slots.values()))
    @rule(data=st.data())
    def resume(self, data):
        self.cluster.resume(
            data.draw(st.sampled_from([b for b, s in self.cluster.slots.items() if s.paused]))
        )

    @precondition(
        lambda self: any(
            s.broker is not None
            and self.cluster.zk.session_state(s.session_id) == SessionState.OPEN
            for s in self.cluster.slots.values()
        )
    )
    @rule(data=st.data())
    def expire_session(self, data):
        zk = self.cluster.zk
        live = [
            b
            for b, s in self.cluster.slots.items()
            if s.broker is not None and zk.session_state(s.session_id) == SessionState.OPEN
        ]
        self.cluster.expire_session(data.draw(st.sampled_from(live)))

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def no_write_with_stale_version(self):
        check_no_write_with_stale_version(self.cluster.state_writes)

    @invariant()
    def leader_in_isr(self):
        check_leader_in_isr(self.cluster)

    @invariant()
    def at_most_one_leader_can_commit(self):
        check_at_most_one_leader_can_commit(self.cluster)

    @invariant()
    def no_committed_record_lost(self):
        forget_deleted_topics(self.cluster)
        check_no_committed_record_lost(self.cluster)

    @invariant()
    def controller_epoch_monotonic(self):
        self.epoch = check_controller_epoch_monotonic(self.cluster, self.epoch)


ReplicationMachine.TestCase.settings = settings(settings.default, stateful_step_count=40)
test_replication_machine = ReplicationMachine.TestCase
