"""A caller's misuse of the replication model raises UsageError naming the state and the
input; it never corrupts the model."""

from __future__ import annotations

import pytest

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.batching import pack
from coordspec.reference.replication.broker import Broker
from coordspec.reference.replication.cluster import Cluster
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.events import Produce, ZkResult
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.znodes import TopicPartition
from coordspec.reference.zookeeper import Code, SetData, SetDataResult

TP = TopicPartition("t", 0)


def cluster() -> Cluster:
    c = Cluster([1, 2], ReplicationConfig(zookeeper_session_timeout_ms=4_000))
    c.settle()
    return c


def test_steps_on_brokers_that_cannot_take_them():
    c = cluster()
    with pytest.raises(UsageError, match="no broker 9"):
        c.crash(9)
    c.crash(2)
    with pytest.raises(UsageError, match="produce: broker 2 is crashed"):
        c.produce(2, TP)
    with pytest.raises(UsageError, match=r"old session .* is still open"):
        c.restart(2)
    c.pause(1)
    with pytest.raises(UsageError, match="replicate: broker 1 is paused"):
        c.replicate(1, TP)
    with pytest.raises(UsageError, match="resume: broker 2 is not paused"):
        c.resume(2)
    with pytest.raises(UsageError, match="deliver: request 0 cannot be delivered"):
        c.deliver(0)
    with pytest.raises(UsageError, match="tick: ms must be a non-negative int"):
        c.tick(-1)


def test_admin_requests_zookeeper_refuses():
    c = cluster()
    c.create_topic("t", {0: (1, 2)})
    with pytest.raises(UsageError, match="create_topic 't': ZooKeeper answered NODEEXISTS"):
        c.create_topic("t", {0: (1, 2)})
    c.reassign({TP: (2,)})
    with pytest.raises(UsageError, match=r"reassign .*NODEEXISTS"):
        c.reassign({TP: (1,)})


def test_events_the_model_does_not_take():
    with pytest.raises(UsageError, match="Controller 1: Produce is not a controller event"):
        Controller(1).handle(Produce(0, "t", 0, 1))
    with pytest.raises(UsageError, match="Broker 1: str is not a broker event"):
        Broker(1).handle("fetch")
    with pytest.raises(UsageError, match="ZkResult for call 7, which is not outstanding"):
        Broker(1).handle(ZkResult(0, 7, SetDataResult(Code.OK)))
    with pytest.raises(UsageError, match="broker_id must be a non-negative int"):
        Broker(-1)


def test_configurations_and_logs_that_make_no_sense():
    with pytest.raises(UsageError, match="min_insync_replicas must be a positive int"):
        ReplicationConfig(min_insync_replicas=0)
    with pytest.raises(UsageError, match=r"must stay below ZooKeeper's jute\.maxbuffer"):
        ReplicationConfig(multi_byte_budget=2_000_000)
    with pytest.raises(UsageError, match="does not fit a budget"):
        list(pack((), [("k", (SetData("/a", b"x" * 200),))], 100))
    log = ReplicaLog([Record(3, 1)])
    with pytest.raises(UsageError, match="record of leader epoch 2 after epoch 3"):
        log.append(Record(2, 2))
