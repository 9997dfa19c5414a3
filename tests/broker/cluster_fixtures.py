"""What the client tests on the 3-broker cluster share: one real ZooKeeper and one started
cluster per test module (module-scoped fixtures), bounded waits, the records they produce,
and the checks that no broker logged an error.

A test module imports the fixture functions; its tests then ask for ``cluster`` (and
``zookeeper_connect``) by name::

    from cluster_fixtures import cluster_fixture, zookeeper_fixture  # noqa: F401 - pytest fixtures

Each broker runs with a short ZooKeeper session and no initial rebalance delay, so a
group forms as soon as its members have joined.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest

from coordspec.broker.cluster.launcher import Cluster, ClusterError
from coordspec.broker.zookeeper.process import ZooKeeperUnavailable, zookeeper
from coordspec.reference.replication.znodes import TopicPartition

BROKERS = 3
SETTINGS = {"group.initial.rebalance.delay.ms": 0, "zookeeper.session.timeout.ms": 4000}
# The consumers' group session: heartbeats every 300 ms, so a member that stops heartbeating
# is noticed within seconds, while a loaded machine does not expire a live member.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 300


@pytest.fixture(scope="module", name="zookeeper_connect")
def zookeeper_fixture() -> Iterator[str]:
    try:
        with zookeeper(1) as zk:
            yield zk.connect_string
    except ZooKeeperUnavailable as e:
        pytest.fail(str(e), pytrace=False)  # ZooKeeper is one of the real components CI installs


@pytest.fixture(scope="module", name="cluster")
def cluster_fixture(
    tmp_path_factory: pytest.TempPathFactory, zookeeper_connect: str
) -> Iterator[Cluster]:
    data_dir = tmp_path_factory.mktemp("cluster")
    try:
        with Cluster(
            data_dir,
            BROKERS,
            zookeeper_connect=f"{zookeeper_connect}/{data_dir.name}",
            settings=SETTINGS,
        ) as started:
            yield started
    except ClusterError as e:
        pytest.fail(f"the cluster: {e}", pytrace=False)


def wait_for(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    poll: Callable[[], object] = lambda: time.sleep(0.05),
) -> None:
    """Call ``poll`` until ``condition`` holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        poll()


async def wait_for_async(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        await asyncio.sleep(0.05)


def values(first: int, count: int) -> list[bytes]:
    """Record values ``value-<i>``; record i goes to partition ``i % partitions``."""
    return [f"value-{i}".encode() for i in range(first, first + count)]


def partition_of(value: bytes, partitions: int) -> int:
    return int(value.decode().removeprefix("value-")) % partitions


def assert_partitioned(assignments: list[set[int]], partitions: int) -> None:
    """Every member owns at least one partition, no two own the same, together all of them."""
    assert all(assignments), assignments
    assert sum(len(a) for a in assignments) == partitions and set().union(*assignments) == set(
        range(partitions)
    ), assignments


def is_partitioned(assignments: list[set[int]], partitions: int) -> bool:
    try:
        assert_partitioned(assignments, partitions)
    except AssertionError:
        return False
    return True


def wait_replicated(cluster: Cluster, topic: str, partitions: int, timeout_s: float = 20) -> None:
    """Wait until ZooKeeper shows every partition of ``topic`` on every broker, all of them in sync."""
    everyone = set(cluster.broker_ids)

    def replicated() -> bool:
        assignment, states = cluster.view.assignments.get(topic, {}), cluster.view.states
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return (
            len(assignment) == partitions
            and all(set(replicas) == everyone for replicas in assignment.values())
            and all(
                tp in states and set(states[tp].isr) == everyone and states[tp].leader in everyone
                for tp in tps
            )
        )

    wait_for(
        replicated,
        timeout_s,
        f"{topic}'s {partitions} partitions on brokers {sorted(everyone)}, all in sync",
    )


def assert_no_errors(cluster: Cluster) -> None:
    """Every broker still runs and none logged an error or a traceback (kazoo's warnings about a lost connection are fine)."""
    assert cluster.running() == set(cluster.broker_ids)
    for broker in cluster.broker_ids:
        stderr = cluster.stderr(broker)
        assert "Traceback" not in stderr and "ERROR" not in stderr, f"broker {broker}:\n{stderr}"
