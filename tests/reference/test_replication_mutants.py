"""Each invariant of the replication model can fail: a mutant of the reference (a config
flag or a patched rule) breaks exactly one property, and the Monitor reports it by name.
Unclean leader election is Kafka's own mutant: it trades NoCommittedRecordLost (and
AtMostOneLeaderCanCommit) for availability."""

from __future__ import annotations

import pytest

import coordspec.reference.replication.controller as controller_module
from coordspec.reference.errors import InvariantViolation
from coordspec.reference.replication.broker import Broker
from coordspec.reference.replication.cluster import Cluster
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import ProduceAcked
from coordspec.reference.replication.invariants import INVARIANTS, Monitor
from coordspec.reference.replication.znodes import TopicPartition
from coordspec.reference.zookeeper import SetData

TP = TopicPartition("t", 0)
CONFIG = ReplicationConfig(
    min_insync_replicas=1, replica_lag_time_max_ms=2_000, zookeeper_session_timeout_ms=4_000
)
UNCLEAN = ReplicationConfig(
    min_insync_replicas=1,
    replica_lag_time_max_ms=2_000,
    zookeeper_session_timeout_ms=4_000,
    unclean_leader_election_enable=True,
)


def new_cluster(config=CONFIG, broker_factory=Broker) -> Cluster:
    cluster = Cluster([1, 2, 3], config, monitor=Monitor(), broker_factory=broker_factory)
    cluster.settle()
    cluster.create_topic(TP.topic, {0: (3, 2, 1)})
    cluster.settle()
    return cluster


def leader_alone_commits(cluster: Cluster) -> None:
    """The followers fall behind and leave the ISR; the leader commits a record alone."""
    cluster.tick(2_500)
    assert cluster.published()[TP][0].isr == (3,)
    assert any(isinstance(n.effect, ProduceAcked) for n in cluster.produce(3, TP))


def test_clean_elections_keep_the_record_of_a_leader_that_committed_alone():
    cluster = new_cluster()
    leader_alone_commits(cluster)
    cluster.crash(3)
    cluster.tick(5_000)
    cluster.settle()
    assert cluster.published()[TP][0].leader == -1, "offline until broker 3 returns"


def test_unclean_election_loses_a_committed_record():
    cluster = new_cluster(UNCLEAN)
    leader_alone_commits(cluster)
    cluster.crash(3)
    cluster.tick(5_000)
    with pytest.raises(InvariantViolation) as caught:
        cluster.settle()
    assert caught.value.invariant == "NoCommittedRecordLost"


def test_unclean_election_lets_two_leaders_commit():
    cluster = new_cluster(UNCLEAN)
    cluster.tick(2_500)  # ISR (3,)
    cluster.pause(3)
    cluster.tick(5_000)
    cluster.settle()  # broker 2 leads alone at epoch 1
    with pytest.raises(InvariantViolation) as caught:
        cluster.resume(3)  # and the zombie 3 leads alone at epoch 0
    assert caught.value.invariant == "AtMostOneLeaderCanCommit"


class UnconditionalController(Controller):
    """Mutant: partition-state writes skip the version check (version -1)."""

    def _decide(self, tp):
        decided = super()._decide(tp)
        if decided is None:
            return None
        state, ops = decided
        return state, tuple(
            SetData(op.path, op.data, -1) if isinstance(op, SetData) else op for op in ops
        )


def unconditional_broker(broker_id, config, *, logs):
    broker = Broker(broker_id, config, logs=logs)
    broker.controller = UnconditionalController(broker_id, config)
    return broker


def test_a_controller_that_skips_the_version_check_is_caught():
    cluster = new_cluster(broker_factory=unconditional_broker)
    cluster.crash(3)
    cluster.tick(5_000)
    with pytest.raises(InvariantViolation) as caught:
        cluster.settle()
    assert caught.value.invariant == "NoWriteWithStaleVersion"


def test_an_election_that_leaves_the_leader_out_of_the_isr_is_caught(monkeypatch):
    elect = controller_module.elect_leader

    def leader_outside_isr(*args, **kwargs):
        state = elect(*args, **kwargs)
        if state is None or state.leader == -1:
            return state
        return state.with_isr(tuple(r for r in state.isr if r != state.leader) or (99,))

    monkeypatch.setattr(controller_module, "elect_leader", leader_outside_isr)
    cluster = new_cluster()
    cluster.crash(3)
    cluster.tick(5_000)
    with pytest.raises(InvariantViolation) as caught:
        cluster.settle()
    assert caught.value.invariant == "LeaderInIsr"


def test_a_controller_epoch_that_goes_back_is_caught(monkeypatch):
    encode = controller_module.encode_controller_epoch
    monkeypatch.setattr(
        controller_module,
        "encode_controller_epoch",
        lambda epoch: b"0" if epoch >= 2 else encode(epoch),
    )
    cluster = new_cluster()
    cluster.crash(1)
    cluster.tick(5_000)
    with pytest.raises(InvariantViolation) as caught:
        cluster.settle()
    assert caught.value.invariant == "ControllerEpochMonotonic"


def test_a_partition_state_from_the_future_controller_epoch_is_caught(monkeypatch):
    init = controller_module.init_leader
    monkeypatch.setattr(
        controller_module,
        "init_leader",
        lambda replicas, live, epoch: init(replicas, live, epoch + 1),
    )
    cluster = Cluster([1, 2, 3], CONFIG, monitor=Monitor())
    cluster.settle()
    cluster.create_topic("t", {0: (1, 2)})
    with pytest.raises(InvariantViolation) as caught:
        cluster.settle()
    assert caught.value.invariant == "ControllerEpochMonotonic"


MUTANTS = {
    "NoCommittedRecordLost": test_unclean_election_loses_a_committed_record,
    "AtMostOneLeaderCanCommit": test_unclean_election_lets_two_leaders_commit,
    "NoWriteWithStaleVersion": test_a_controller_that_skips_the_version_check_is_caught,
    "LeaderInIsr": test_an_election_that_leaves_the_leader_out_of_the_isr_is_caught,
    "ControllerEpochMonotonic": test_a_controller_epoch_that_goes_back_is_caught,
}


def test_every_invariant_has_a_mutant():
    assert MUTANTS.keys() == INVARIANTS.keys()
