"""The ``embedded`` target: clusters of ``coordspec.broker.cluster``, each three brokers in
child processes on one ZooKeeper (Debian's package, a chroot per cluster), checked over the
wire by the kafka target.

The target is configurable: a session runs on a cluster started with its settings (the
scenario's ``broker:`` block over ``--broker-setting``), and a session with faults on a
cluster no other session uses meanwhile, so faults do not serialize the run. At most
``max_clusters`` run at once; one nobody uses makes room for another (:meth:`EmbeddedTarget.open`
waits for room). The cluster with the target's own settings starts first, and is probed.

``__consumer_offsets`` has one partition (replication factor 3), so every group has the same
coordinator, as on one broker: a DescribeGroups or DeleteGroups naming several groups is
answered by one coordinator, as the scenarios expect (with more partitions Kafka answers
NOT_COORDINATOR for the groups another broker coordinates). The bootstrap broker is one of
the three; requests follow FindCoordinator to the partition's leader. Everything stops, and
the directory goes, when the target stops or this process exits.

A coordinator kill is kill -9 of the partition's leader, a restart the same with SIGTERM.
The hook returns once ZooKeeper names a new leader and it serves the partition (the group
has failed over and reloaded from the replicated log); from then on the bootstrap broker is
that leader. The victim starts again and rejoins as a follower in the background; the next
fault waits for it to be back in the ISR first, so every fault has a full ISR to fail over to.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from coordspec.broker.cluster.launcher import Cluster, ClusterError
from coordspec.broker.testing import Connection
from coordspec.broker.zookeeper.process import ZooKeeperUnavailable, zookeeper
from coordspec.conformance.suite.kafka_target import FaultCommands, KafkaSession, KafkaTarget
from coordspec.conformance.suite.target import CATALOG_TOPICS, TargetError
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.placement import OFFSETS_TOPIC
from coordspec.reference.group.config import KAFKA_SETTINGS, GroupConfig
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import API_KEYS, Request
from coordspec.reference.group.responses import Response
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
# Room for every configuration the catalog needs and a few fault runs at once: a cluster
# stopped to make room is one more to start, and starting brokers takes the CPU that
# running ones need to answer on time (idle ones take little).
MAX_CLUSTERS = 8


def settings_of(config: GroupConfig) -> dict[str, int]:
    """The cluster's settings for ``config``: SETTINGS, and the group's by Kafka's names."""
    values = dict(SETTINGS)
    for s in KAFKA_SETTINGS.values():
        value = getattr(config, s.field)
        if value == getattr(GroupConfig(), s.field):
            continue
        if value % s.unit_ms:
            raise TargetError(f"{s.of(config)}: a broker takes whole units")
        values[s.name] = value // s.unit_ms
    return values


class EmbeddedCluster:
    def __init__(self, root: Path, zookeeper_connect: str, config: GroupConfig) -> None:
        self.root, self.config = root, config
        try:
            self.cluster = Cluster(
                root, 3, zookeeper_connect=zookeeper_connect, settings=settings_of(config)
            )
        except ClusterError as exc:  # a setting a broker does not take
            raise TargetError(f"embedded cluster: {exc}") from None
        self.kafka: KafkaTarget | None = None  # once started
        self.started: asyncio.Future | None = None
        self.users = 0
        self.alone = False  # a session with faults has it
        self._settling: threading.Thread | None = None
        self._unsettled = ""

    def start(self) -> KafkaTarget:
        """Start the brokers (from a thread that outlives them: they die with the thread
        that started them) and the kafka target that checks them; raises TargetError."""
        try:
            self.cluster.start()
        except ClusterError as exc:
            self.stop()
            raise TargetError(f"the embedded cluster did not start: {exc}") from None
        hooks = FaultCommands(
            kill_coordinator=lambda: self.fail_over(self.cluster.kill, kafka),
            restart=lambda: self.fail_over(self.cluster.stop_broker, kafka),
        )
        bootstrap = self.cluster.bootstrap.split(",")[0]
        kafka = KafkaTarget(bootstrap, name="embedded", faults=hooks, config=self.config)
        return kafka

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
        for partition in clients.offsets_leaders:  # the one partition, led by the successor
            clients.offsets_leaders[partition] = self.cluster.peers[successor]

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
                lambda view: (
                    view is None  # the cluster stopped meanwhile
                    or (OFFSETS in view.states and set(view.states[OFFSETS].isr) == everyone)
                ),
                "every broker back in the ISR of __consumer_offsets",
                60,
            )
        except ClusterError as exc:
            self._unsettled = str(exc)

    def stop(self) -> None:
        self.cluster.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class EmbeddedTarget:
    name = "embedded"
    clock: Literal["virtual", "real"] = "real"
    configurable = True
    supports_faults = True
    fails_writes = False  # a real log: no hook refuses a chosen write
    completes_transactions = False  # a broker needs its transaction coordinator for that
    moves_coordinator = False  # no hook holds a broker at each step of a move
    drives_metadata = False  # a broker resolves regexes on its own, when it will
    shows_records = True  # its brokers' __consumer_offsets, read as any broker's (offsets_log)
    faults_are_shared = False  # a session with faults has a cluster to itself
    answer_ms, settle_ms = KafkaTarget.answer_ms, KafkaTarget.settle_ms
    latency_ms = KafkaTarget.latency_ms
    partitions = CATALOG_TOPICS  # its clusters create them so

    def __init__(self, config: GroupConfig | None = None, max_clusters: int = MAX_CLUSTERS):
        self.config = config or GroupConfig()
        self.max_clusters = max_clusters
        self.versions: dict[str, range] = {}
        self.root = Path(tempfile.mkdtemp(prefix="coordspec-embedded-"))
        self.clusters: list[EmbeddedCluster] = []
        self._made = 0
        self._zookeeper = contextlib.ExitStack()
        self._connect = ""
        # Clusters start one at a time (starting brokers takes the CPU that running ones need
        # to answer on time), from a thread that lives as long as the target.
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="embedded-cluster")
        self._changed: asyncio.Condition | None = None
        self._wanted: Counter[GroupConfig] = Counter()  # the configs sessions wait for
        atexit.register(self.stop)

    def start(self) -> EmbeddedTarget:
        """ZooKeeper and the cluster with the target's settings, probed; raises TargetError."""
        try:
            self._connect = self._zookeeper.enter_context(zookeeper(1)).connect_string
            first = self._cluster(self.config)
            first.kafka = first.start().check()
        except (TargetError, ZooKeeperUnavailable) as exc:
            self.stop()
            raise TargetError(str(exc)) from None
        self.versions = first.kafka.versions
        return self

    def _cluster(self, config: GroupConfig) -> EmbeddedCluster:
        self._made += 1
        cluster = EmbeddedCluster(
            self.root / f"cluster-{self._made}", f"{self._connect}/cluster-{self._made}", config
        )
        self.clusters.append(cluster)
        return cluster

    async def open(
        self, group_id: str, config: GroupConfig, *, faults: bool = False
    ) -> _LeasedSession:
        cluster = await self._lease(config, faults)
        try:
            if cluster.kafka is None:
                assert cluster.started is not None
                await asyncio.shield(cluster.started)
            assert cluster.kafka is not None
            session = await cluster.kafka.open(group_id, config)
        except BaseException:
            await self._release(cluster)
            raise
        return _LeasedSession(session, lambda: self._release(cluster))

    async def _lease(self, config: GroupConfig, alone: bool) -> EmbeddedCluster:
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            self._wanted[config] += 1
            try:
                while (cluster := self._free(config, alone)) is None:
                    if len(self.clusters) >= self.max_clusters:
                        idle = self._idle()
                        if idle is None:
                            await self._changed.wait()
                            continue
                        self.clusters.remove(idle)
                        asyncio.get_running_loop().run_in_executor(None, idle.stop)
                    cluster = self._cluster(config)
                    cluster.started = asyncio.ensure_future(self._start(cluster))
                    break
            finally:
                self._wanted[config] -= 1
            cluster.users += 1
            cluster.alone = alone
        return cluster

    def _idle(self) -> EmbeddedCluster | None:
        """A started cluster nobody uses or waits for, to make room."""
        return next(
            (c for c in self.clusters if c.users == 0 and c.kafka and not self._wanted[c.config]),
            None,
        )

    def _free(self, config: GroupConfig, alone: bool) -> EmbeddedCluster | None:
        """A cluster with ``config`` the session may use: one nobody uses, if ``alone``."""
        same = [c for c in self.clusters if c.config == config and not c.alone]
        return next((c for c in same if c.users == 0 or not alone), None)

    async def _start(self, cluster: EmbeddedCluster) -> None:
        try:
            kafka = await asyncio.get_running_loop().run_in_executor(self._starter, cluster.start)
            await kafka._probe()
        except TargetError:
            async with self._changed:
                self.clusters.remove(cluster)
                self._changed.notify_all()
            raise
        cluster.kafka = kafka

    async def _release(self, cluster: EmbeddedCluster) -> None:
        assert self._changed is not None
        async with self._changed:
            cluster.users -= 1
            if cluster.users == 0:
                cluster.alone = False
            self._changed.notify_all()

    def stop(self) -> None:
        while self.clusters:
            self.clusters.pop().stop()
        self._zookeeper.close()
        self._starter.shutdown(wait=False)
        shutil.rmtree(self.root, ignore_errors=True)


class _LeasedSession:
    """A cluster's session that gives the cluster back when it closes."""

    def __init__(self, inner: KafkaSession, release: Callable[[], Awaitable[None]]) -> None:
        self.inner, self.release = inner, release
        self.faults = inner.faults

    def now_ms(self) -> int:
        return self.inner.now_ms()

    async def send(self, client: str, request: Request) -> None:
        await self.inner.send(client, request)

    async def receive(self, client: str, within_ms: int) -> tuple[Response, int] | None:
        return await self.inner.receive(client, within_ms)

    async def sleep(self, ms: int) -> None:
        await self.inner.sleep(ms)

    async def written(self) -> list[Record]:
        return await self.inner.written()

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            await self.release()


def start_embedded(config: GroupConfig | None = None) -> EmbeddedTarget:
    return EmbeddedTarget(config).start()
