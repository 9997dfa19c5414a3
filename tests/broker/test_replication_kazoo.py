"""The same controller on the ZooKeeper model and on a real ZooKeeper (through
``coordspec.broker.zookeeper.executor.KazooExecutor``), driven the way benchmarks/failover_10k.py
drives it: seed a topic, register brokers, elect, kill a broker, feed the broker-change
watch, run its calls until the ChangeLeaders round reports done. Both stores must end
with the same partition states, at the same versions, and the controller must send the
same requests."""

from __future__ import annotations

import os
from collections import deque

import pytest

from coordspec.broker.zookeeper.executor import KazooExecutor
from coordspec.broker.zookeeper.process import ZooKeeperUnavailable, zookeeper
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import LeadersChanged, SendRequest, ZkCall
from coordspec.reference.replication.events import ControllerStartup, ZkResult, ZkWatch
from coordspec.reference.replication.znodes import (
    BROKER_IDS,
    PERSISTENT_PATHS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    broker_path,
    partition_path,
    partitions_path,
    state_path,
    topic_path,
)
from coordspec.reference.zookeeper import (
    CloseSession,
    Create,
    GetData,
    OpenSession,
    Reply,
    Request,
    WatchFired,
    ZooKeeperConfig,
    ZooKeeperServer,
)

pytestmark = pytest.mark.zookeeper

ADMIN, CONTROLLER_SESSION = 1, 10
PARTITIONS = 60


@pytest.fixture(scope="module")
def real_zookeeper():
    try:
        with zookeeper(1, tick_time_ms=500) as zk:
            yield zk
    except ZooKeeperUnavailable as e:
        pytest.fail(str(e), pytrace=False)


def failover(store, batch_writes: bool) -> tuple[dict, list, list]:
    """Run the scenario on ``store`` (anything with ``handle(event) -> effects``)."""
    watches: list[WatchFired] = []

    def call(session: int, op):
        effects = store.handle(Request(0, session, op))
        watches.extend(
            e for e in effects if isinstance(e, WatchFired) and e.session_id == CONTROLLER_SESSION
        )
        return next(e.result for e in effects if isinstance(e, Reply))

    def run(controller: Controller, event) -> list:
        out, pending = [], deque([controller.handle(event)])
        while pending:
            for effect in pending.popleft():
                if isinstance(effect, ZkCall):
                    pending.append(
                        controller.handle(
                            ZkResult(0, effect.call_id, call(CONTROLLER_SESSION, effect.op))
                        )
                    )
                else:
                    out.append(effect)
        return out

    store.handle(OpenSession(0, ADMIN, 4000))
    for path in PERSISTENT_PATHS:
        call(ADMIN, Create(path))
    for broker in (1, 2, 3):
        store.handle(OpenSession(0, 100 + broker, 4000))
        call(100 + broker, Create(broker_path(broker), b"{}", ephemeral=True))
    assignment = {p: tuple((p + i) % 3 + 1 for i in range(3)) for p in range(PARTITIONS)}
    call(ADMIN, Create(topic_path("t"), TopicAssignment.of(assignment).encode()))
    call(ADMIN, Create(partitions_path("t")))
    for p, replicas in assignment.items():
        call(ADMIN, Create(partition_path(TopicPartition("t", p))))
        call(
            ADMIN,
            Create(
                state_path(TopicPartition("t", p)),
                PartitionState(replicas[0], 0, replicas, 0).encode(),
            ),
        )

    store.handle(OpenSession(0, CONTROLLER_SESSION, 4000))
    controller = Controller(1, ReplicationConfig(batch_writes=batch_writes, multi_byte_budget=4096))
    run(controller, ControllerStartup(0))
    assert controller.active and controller.idle
    watches.clear()
    for effect in store.handle(CloseSession(0, 103)):  # broker 3 dies
        if isinstance(effect, WatchFired) and effect.session_id == CONTROLLER_SESSION:
            watches.append(effect)
    fired = [w for w in watches if w.path == BROKER_IDS]
    assert fired, "the controller's child watch on /brokers/ids fired"
    out = run(controller, ZkWatch(0, fired[0].path, fired[0].type))
    assert controller.idle
    reads = {p: call(ADMIN, GetData(state_path(TopicPartition("t", p)))) for p in range(PARTITIONS)}
    states = {p: (r.data, r.stat.version) for p, r in reads.items()}
    return (
        states,
        [e for e in out if isinstance(e, SendRequest)],
        [e for e in out if isinstance(e, LeadersChanged)],
    )


@pytest.mark.parametrize("batch_writes", [True, False], ids=["batched", "one-at-a-time"])
def test_the_controller_fails_over_alike_on_the_model_and_on_a_real_zookeeper(
    real_zookeeper, batch_writes
):
    model = failover(ZooKeeperServer(ZooKeeperConfig(tick_time_ms=500)), batch_writes)
    chroot = f"/replication-{os.getpid()}-{int(batch_writes)}"
    with KazooExecutor(real_zookeeper.connect_string) as root:
        root.handle(OpenSession(0, 1, 4000))
        root.handle(Request(0, 1, Create(chroot)))
    with KazooExecutor(real_zookeeper.connect_string, chroot=chroot) as executor:
        real = failover(executor, batch_writes)
    assert real == model
    states, requests, done = real
    (round_done,) = done
    assert (round_done.reason, round_done.written) == ("BrokerChange", PARTITIONS)
    if batch_writes:
        assert 1 < round_done.multis < PARTITIONS // 10, (
            "a 4 KiB budget holds a few dozen state writes per multi"
        )
    else:
        assert round_done.multis == PARTITIONS
    assert all(
        3 not in PartitionState.decode("", data).isr and version == 1
        for data, version in states.values()
    )
    assert sorted(r.broker_id for r in requests) == [1, 2]
