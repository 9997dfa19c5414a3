"""Coordinator failover on the replication model: a coordinator host on every broker of a
:class:`~coordspec.reference.replication.cluster.Cluster`, with ``__consumer_offsets`` as a real
replicated topic. A group's coordinator is the leader of its offsets partition (CF-9).

    cluster = FailoverCluster([1, 2, 3], offsets_partitions=3)
    broker = cluster.coordinator_for("my-group")      # FindCoordinator: the published leader
    cluster.send(broker, OffsetCommit(...))           # appended to the leader's log
    cluster.replicate_all()                           # followers fetch; the HW passes it
    cluster.replies[(broker, request_id)]             # only now acknowledged

The replication layer's notices become host events: ``BecameLeader`` is BecomeCoordinator,
``LeadershipLost`` / ``BecameFollower`` / ``ReplicaStopped`` are ResignCoordinator (a leader
re-elected at a newer epoch keeps serving, as Kafka calls only ``onElection`` then), and
``HighWatermarkMoved`` is HighWatermarkUpdated. A host's ``AppendToPartition`` is a produce
to the leader; ``LoadPartition`` waits in ``pending_loads`` until the driver calls ``load``,
so the loading window is a state a test can act in. Like the Cluster, nothing happens on its
own: every step is the driver's choice. The failover Monitor checks every host step, and
each partition's group coordinator has its own group Monitor (``group_observer``; None
turns it off).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.failover.effects import AppendToPartition, HostEffect, LoadPartition
from coordspec.reference.failover.events import (
    AppendFailed,
    BecomeCoordinator,
    HighWatermarkUpdated,
    HostEvent,
    LoadGroup,
    ResignCoordinator,
)
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.failover.invariants import Monitor
from coordspec.reference.failover.placement import OFFSETS_TOPIC, partition_for
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.coordinator import Observer as GroupObserver
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.invariants import Monitor as GroupMonitor
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import Request, Tick
from coordspec.reference.replication.cluster import Cluster, ClusterCheck, Notice
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.effects import (
    BecameFollower,
    BecameLeader,
    HighWatermarkMoved,
    LeadershipLost,
    ProduceAccepted,
    ProduceFailed,
    ReplicaStopped,
)
from coordspec.reference.replication.znodes import TopicPartition

# The notices a host hears of. ProduceAccepted / ProduceAcked / ProduceFailed of an
# appended batch are not: the high watermark decides (Kafka 4.0 appends with acks=1 and
# waits for it).
_HOST_NOTICES = (BecameLeader, LeadershipLost, BecameFollower, ReplicaStopped, HighWatermarkMoved)


def _batch(value: object) -> tuple[Record, ...]:
    """A record of an offsets partition: its value is the batch a host appended (_produce)."""
    assert isinstance(value, tuple), f"not a batch of group records: {value!r}"
    return value


class FailoverCluster:
    def __init__(
        self,
        broker_ids: list[int],
        offsets_partitions: int = 3,
        *,
        replication_factor: int | None = None,
        group_config: GroupConfig | None = None,
        replication_config: ReplicationConfig | None = None,
        monitor: Monitor | None = None,
        replication_monitor: ClusterCheck | None = None,
        group_observer: Callable[[], GroupObserver] | None = GroupMonitor,
        seed: int = 0,
    ) -> None:
        factor = len(broker_ids) if replication_factor is None else replication_factor
        if not 1 <= factor <= len(broker_ids):
            raise UsageError(
                f"FailoverCluster: replication factor {factor} needs 1..{len(broker_ids)} brokers"
            )
        self.cluster = Cluster(broker_ids, replication_config, monitor=replication_monitor)
        self.offsets_partitions = offsets_partitions
        self.group_config = group_config or GroupConfig()
        self.monitor = monitor or Monitor(offsets_partitions)
        self.seed = seed
        self.group_observer = group_observer
        self.hosts: dict[int, CoordinatorHost] = {}
        self.replies: dict[tuple[int, int | str], Reply] = {}
        self.pending_loads: set[tuple[int, int]] = set()
        self._incarnations: dict[int, int] = {}
        self._notices: deque[Notice] = deque()
        self._draining = False
        for broker_id in broker_ids:
            self._start_host(broker_id)
        self.cluster.settle()  # a controller is elected
        # Kafka's partition assignment: replicas spread round-robin from each partition on.
        ordered = sorted(broker_ids)
        assignment = {
            p: tuple(ordered[(p + i) % len(ordered)] for i in range(factor))
            for p in range(offsets_partitions)
        }
        self._run(self.cluster.create_topic(OFFSETS_TOPIC, assignment))
        self.settle()

    # -- inspection ----------------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        return self.cluster.now_ms

    def tp(self, partition: int) -> TopicPartition:
        return TopicPartition(OFFSETS_TOPIC, partition)

    def coordinator_for(self, group_id: str) -> int | None:
        """FindCoordinator: the leader ZooKeeper publishes for the group's partition."""
        published = self.cluster.published().get(
            self.tp(partition_for(group_id, self.offsets_partitions))
        )
        if published is None or published[0].leader < 0:
            return None
        return published[0].leader

    def running(self, broker_id: int) -> bool:
        return self.cluster.slots[broker_id].running

    # -- the driver's steps ------------------------------------------------------------------

    def send(self, broker_id: int, request: Request) -> None:
        """A client's request reaches ``broker_id``; its reply lands in ``replies``, maybe later."""
        if not self.running(broker_id):
            raise UsageError(f"send: broker {broker_id} is not running")
        self._handle(broker_id, request)

    def reply(self, broker_id: int, request_id: int | str) -> Reply | None:
        return self.replies.get((broker_id, request_id))

    def load(self, broker_id: int, partition: int) -> None:
        """The broker finished reading the partition's log: it serves from now on (CF-4)."""
        if (broker_id, partition) not in self.pending_loads:
            raise UsageError(
                f"load: broker {broker_id} is not loading offsets partition {partition} "
                f"(loading: {sorted(self.pending_loads)})"
            )
        if not self.running(broker_id):
            raise UsageError(f"load: broker {broker_id} is not running")
        self.pending_loads.discard((broker_id, partition))
        replica = self.cluster.slots[broker_id].started.partitions.get(self.tp(partition))
        if replica is None:
            return
        batches = tuple(_batch(record.value) for record in replica.log.records)
        self._handle(
            broker_id,
            LoadGroup(
                partition, replica.leader_epoch, batches, replica.log.high_watermark, self.now_ms
            ),
        )

    def load_all(self) -> None:
        for broker_id, partition in sorted(self.pending_loads):
            if self.running(broker_id):
                self.load(broker_id, partition)

    def tick(self, ms: int) -> None:
        self._run(self.cluster.tick(ms))
        for broker_id, host in list(self.hosts.items()):
            if self.running(broker_id) and self.hosts.get(broker_id) is host:
                self._handle(broker_id, Tick(self.now_ms))

    def settle(self) -> None:
        self._run(self.cluster.settle())

    def deliver(self, index: int) -> None:
        self._run(self.cluster.deliver(index))

    def deliver_watches(self, broker_id: int) -> None:
        self._run(self.cluster.deliver_watches(broker_id))

    def replicate(self, broker_id: int, partition: int) -> None:
        self._run(self.cluster.replicate(broker_id, self.tp(partition)))

    def replicate_all(self) -> None:
        """Every running follower of every offsets partition fetches once (twice: the second
        fetch carries the leader's new high watermark back)."""
        for _ in range(2):
            for partition in range(self.offsets_partitions):
                for broker_id in self.cluster.followers(self.tp(partition)):
                    if self.running(broker_id):
                        self.replicate(broker_id, partition)

    def crash(self, broker_id: int) -> None:
        self._run(self.cluster.crash(broker_id))
        self.monitor.forget(self.hosts.pop(broker_id))
        self.pending_loads = {(b, p) for b, p in self.pending_loads if b != broker_id}

    def restart(self, broker_id: int) -> None:
        notices = self.cluster.restart(broker_id)
        self._start_host(broker_id)
        self._run(notices)

    def pause(self, broker_id: int) -> None:
        self._run(self.cluster.pause(broker_id))

    def resume(self, broker_id: int) -> None:
        self._run(self.cluster.resume(broker_id))

    def expire_session(self, broker_id: int) -> None:
        self._run(self.cluster.expire_session(broker_id))

    # -- internals ---------------------------------------------------------------------------

    def _start_host(self, broker_id: int) -> None:
        incarnation = self._incarnations.get(broker_id, -1) + 1
        self._incarnations[broker_id] = incarnation
        choices = SeededChoices(self.seed * 1_000_003 + broker_id * 1_009 + incarnation)
        host = CoordinatorHost(
            broker_id,
            self.offsets_partitions,
            self.group_config,
            choices,
            now_ms=self.now_ms,
            group_observer=self.group_observer,
        )
        self.hosts[broker_id] = host
        self.monitor.watch(host)

    def _handle(self, broker_id: int, event: HostEvent) -> None:
        self._execute(broker_id, self.hosts[broker_id].handle(event))

    def _execute(self, broker_id: int, effects: list[HostEffect]) -> None:
        refused: set[int] = set()  # partitions whose earlier append of this step the log refused
        for effect in effects:
            if isinstance(effect, Reply):
                self.replies[(broker_id, effect.request_id)] = effect
            elif isinstance(effect, LoadPartition):
                self.pending_loads.add((broker_id, effect.partition))
            elif effect.partition not in refused and self._produce(broker_id, effect):
                refused.add(effect.partition)

    def _produce(self, broker_id: int, append: AppendToPartition) -> bool:
        """Append the batch as one record to the leader's log; True if the log refused it."""
        notices = self.cluster.produce(broker_id, self.tp(append.partition), value=append.records)
        outcome = next(
            n.effect for n in notices if isinstance(n.effect, (ProduceAccepted, ProduceFailed))
        )
        if isinstance(outcome, ProduceAccepted) and outcome.offset != append.offset:
            raise AssertionError(
                f"broker {broker_id} expected to append at offset {append.offset} of offsets partition "
                f"{append.partition}, the log put it at {outcome.offset}"
            )
        if isinstance(outcome, ProduceFailed):
            self._handle(
                broker_id,
                AppendFailed(
                    append.partition, append.offset, ErrorCode[outcome.error], self.now_ms
                ),
            )
        self._run([n for n in notices if n.effect is not outcome])
        return isinstance(outcome, ProduceFailed)

    def _run(self, notices: list[Notice]) -> None:
        """Hand the replication layer's notices about offsets partitions to the hosts, in the
        order they happened: notices of appends made while handling one wait their turn."""
        self._notices.extend(notices)
        if self._draining:
            return
        self._draining = True
        try:
            while self._notices:
                self._notice(self._notices.popleft())
        finally:
            self._draining = False

    def _notice(self, notice: Notice) -> None:
        effect = notice.effect
        if (
            not isinstance(effect, _HOST_NOTICES)
            or effect.topic != OFFSETS_TOPIC
            or notice.broker_id not in self.hosts
        ):
            return
        broker_id, partition = notice.broker_id, effect.partition
        if isinstance(effect, BecameLeader):
            self._handle(broker_id, BecomeCoordinator(partition, effect.leader_epoch, self.now_ms))
        elif isinstance(effect, LeadershipLost):
            if not self._reelected(list(self._notices), broker_id, partition):
                self._handle(broker_id, ResignCoordinator(partition, None, self.now_ms))
        elif isinstance(effect, BecameFollower):
            self._handle(broker_id, ResignCoordinator(partition, effect.leader_epoch, self.now_ms))
        elif isinstance(effect, ReplicaStopped):
            self._handle(broker_id, ResignCoordinator(partition, None, self.now_ms))
        elif isinstance(effect, HighWatermarkMoved):
            self._handle(
                broker_id, HighWatermarkUpdated(partition, effect.high_watermark, self.now_ms)
            )

    @staticmethod
    def _reelected(rest: list[Notice], broker_id: int, partition: int) -> bool:
        """A leader re-elected at a newer epoch sees LeadershipLost then BecameLeader at once."""
        for notice in rest:
            effect = notice.effect
            if (
                notice.broker_id == broker_id
                and isinstance(effect, (BecameLeader, LeadershipLost, BecameFollower))
                and effect.topic == OFFSETS_TOPIC
                and effect.partition == partition
            ):
                return isinstance(effect, BecameLeader)
        return False
