"""The ``embedded`` target on a cluster: ZooKeeper (Debian's package) and three brokers of
``coordspec.broker.cluster`` in child processes, checked over the wire by the kafka target.

``__consumer_offsets`` has one partition (replication factor 3), so every group has the same
coordinator, as on one broker: a DescribeGroups or DeleteGroups naming several groups is
answered by one coordinator, as the scenarios expect (with more partitions Kafka answers
NOT_COORDINATOR for the groups another broker coordinates). The bootstrap broker is one of
the three; requests follow FindCoordinator to the partition's leader. Everything stops, and
the directory goes, when the target stops or this process exits.

With ``faults=True`` a coordinator kill is kill -9 of the partition's leader, a restart the
same with SIGTERM. The hook returns once ZooKeeper names a new leader and it serves the
partition (the group has failed over and reloaded from the replicated log); from then on
the bootstrap broker is that leader. The victim starts again and rejoins as a follower in
the background; the next fault waits for it to be back in the ISR first, so every fault
has a full ISR to fail over to.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from coordspec.broker.cluster.launcher import Cluster, ClusterError
from coordspec.broker.testing import Connection
from coordspec.conformance.suite.kafka_target import FaultCommands, KafkaTarget
from coordspec.conformance.suite.target import TargetError
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.placement import OFFSETS_TOPIC
from coordspec.reference.group.requests import API_KEYS
from coordspec.reference.replication.znodes import TopicPartition

OFFSETS = TopicPartition(OFFSETS_TOPIC, 0)
# The scenarios' topics are on all three brokers and a commit is acknowledged once it is on
# two at least (Kafka's defaults say one for each): a fault takes neither a topic nor an
# acknowledged commit away.
SETTINGS = {
    "offsets.topic.num.partitions": 1,
    "zookeeper.session.timeout.ms": 4000,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
}
DESCRIBE_GROUPS = API_KEYS["DescribeGroups"]


class EmbeddedCluster:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="coordspec-embedded-"))
        self.cluster = Cluster(self.root / "cluster", 3, settings=SETTINGS)
        self._settling: threading.Thread | None = None
        self._unsettled = ""
        atexit.register(self.stop)

    def start(self) -> EmbeddedCluster:
        try:
            self.cluster.start()
        except ClusterError as exc:
            self.stop()
            raise TargetError(f"the embedded cluster did not start: {exc}") from None
        return self

    async def fail_over(self, stop: Callable[[int], None], clients: KafkaTarget) -> None:
        """A fault hook: ``stop`` (kill or SIGTERM) the coordinator; return once its successor
        serves. ``clients`` then find coordinators through the successor, not through the
        victim while it starts again (it would hold their requests until then)."""
        victim, successor = await asyncio.to_thread(self._fail_over, stop)
        # Started from this thread, not the worker's: a broker dies with the thread that
        # started it (coordspec.broker.cluster.launcher), and this one lives as long as the run.
        self.cluster.start_broker(victim)
        self._settling = threading.Thread(
            target=self._settle, name="embedded-cluster-settle", daemon=True
        )
        self._settling.start()
        clients.host, clients.port = self.cluster.peers[successor]

    def _fail_over(self, stop: Callable[[int], None]) -> tuple[int, int]:
        """The victim and its successor."""
        # The runner counts the coordinator as down from the hook's start and the group as
        # loaded at its end, so the hook does nothing else: the wait for the last fault's
        # victim to catch up ran in the background since then.
        if self._settling is not None:
            self._settling.join()
            self._settling = None
        if self._unsettled:
            raise TargetError(f"embedded cluster: {self._unsettled}")
        victim = self.cluster.coordinator_of(0)
        stop(victim)
        try:
            self.cluster.wait(
                lambda view: view.leader(OFFSETS) not in (victim, -1), "a new coordinator", 30
            )
            successor = self.cluster.coordinator_of(0)
            self._until_serving(successor)
        except ClusterError as exc:
            raise TargetError(f"embedded cluster: {exc}") from None
        return victim, successor

    def _until_serving(self, leader: int, timeout_s: float = 30.0) -> None:
        """Until the new leader has loaded the partition: ZooKeeper names it before it has
        (it answers NOT_COORDINATOR, then COORDINATOR_LOAD_IN_PROGRESS, meanwhile)."""
        host, port = self.cluster.peers[leader]
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with contextlib.closing(Connection(host, port, timeout_s=5.0)) as connection:
                    answer = connection.request(DESCRIBE_GROUPS, 0, {"groups": ["coordspec-probe"]})
                if answer.groups[0].error_code == ErrorCode.NONE:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"broker {leader} did not serve __consumer_offsets within {timeout_s:g} s of its election"
                )
            time.sleep(0.02)

    def _settle(self) -> None:
        everyone = set(self.cluster.broker_ids)
        try:
            self.cluster.wait(
                lambda view: OFFSETS in view.states and set(view.states[OFFSETS].isr) == everyone,
                "every broker back in the ISR of __consumer_offsets",
                60,
            )
        except ClusterError as exc:
            self._unsettled = str(exc)

    def stop(self) -> None:
        self.cluster.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def start_embedded(*, faults: bool = False) -> KafkaTarget:
    embedded = EmbeddedCluster().start()
    hooks = None
    if faults:
        hooks = FaultCommands(
            kill_coordinator=lambda: embedded.fail_over(embedded.cluster.kill, target),
            restart=lambda: embedded.fail_over(embedded.cluster.stop_broker, target),
        )
    target = KafkaTarget(embedded.cluster.bootstrap.split(",")[0], name="embedded", faults=hooks)
    target.on_stop(embedded.stop)
    try:
        return target.check()
    except TargetError:
        target.stop()
        raise
