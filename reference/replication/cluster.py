"""A whole cluster, sans-IO: the ZooKeeper model, N brokers (each with a ZooKeeper session,
a registration, a controller candidacy and its replicas) and the controller requests in
flight. The driver chooses every step; nothing happens on its own.

    cluster = Cluster([1, 2, 3], ReplicationConfig(min_insync_replicas=2))
    cluster.settle()                                   # a controller is elected
    cluster.create_topic("t", {0: (1, 2, 3)})
    cluster.settle()                                   # InitLeaders, LeaderAndIsr delivered
    cluster.produce(1, TopicPartition("t", 0))         # notices: ProduceAccepted ...
    cluster.replicate(2, TopicPartition("t", 0))       # one fetch of broker 2 from its leader

ZooKeeper calls run at once, in the order emitted (one broker's session is FIFO); watch
notifications wait in the broker's inbox until ``deliver_watches``; controller requests
wait in flight until ``deliver`` (first-in first-out per controller-broker connection).
A paused broker receives nothing and does nothing; its ZooKeeper session expires if the
pause outlasts it, and it learns that on ``resume``. A crashed broker loses its memory but
not its logs (``logs``), and its connections: requests in flight to it are dropped.

Every step method returns the notices brokers emitted, as ``Notice(broker_id, effect)``.
If a :class:`~coordspec.reference.replication.invariants.Monitor` is given, it checks every invariant
after every step. The ghost history the invariants need is kept here: the partition-state
writes ZooKeeper accepted, and the records acknowledged (committed).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.broker import Broker
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.effects import Effect, ProduceAcked, SendRequest, ZkCall
from coordspec.reference.replication.events import (
    BrokerTick,
    DeliverRequest,
    FetchResponse,
    Produce,
    ZkResult,
    ZkSessionExpired,
    ZkSessionStarted,
    ZkWatch,
)
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.messages import ControllerRequest
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import (
    CONTROLLER,
    CONTROLLER_EPOCH,
    PERSISTENT_PATHS,
    REASSIGN_PARTITIONS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    decode_controller,
    decode_controller_epoch,
    delete_topic_path,
    encode_reassignment,
    state_path_partition,
    topic_path,
)
from coordspec.reference.substeps import UNOBSERVED, SubStepObserver
from coordspec.reference.zookeeper import (
    CloseSession,
    Code,
    Create,
    Delete,
    Multi,
    Op,
    OpenSession,
    Ping,
    Reply,
    Request,
    SessionClosed,
    SessionExpired,
    SetData,
    Tick,
    WatchFired,
    ZooKeeperConfig,
    ZooKeeperServer,
)
from coordspec.reference.zookeeper import Effect as ZooKeeperEffect
from coordspec.reference.zookeeper import Event as ZooKeeperEvent
from coordspec.reference.zookeeper import Result as ZooKeeperResult
from coordspec.reference.zookeeper.sessions import SessionState

ADMIN_SESSION = 1


@dataclass(frozen=True, slots=True)
class Notice:
    broker_id: int
    effect: Effect


@dataclass(frozen=True, slots=True)
class InFlight:
    source: int  # the controller's broker
    destination: int
    request: ControllerRequest


@dataclass(frozen=True, slots=True)
class StateWrite:
    """A write of a partition-state znode that ZooKeeper accepted."""

    path: str
    expected_version: int  # -1: unconditional
    version_before: int | None  # None: the znode was absent


@dataclass(eq=False)
class BrokerSlot:
    broker_id: int
    logs: dict[TopicPartition, ReplicaLog] = field(default_factory=dict)  # the disk
    broker: Broker | None = None  # None: crashed (or never started)
    session_id: int | None = None
    paused: bool = False
    expired: bool = False  # its session ended while it was paused
    inbox: list[ZkWatch] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.broker is not None and not self.paused

    @property
    def started(self) -> Broker:
        """The broker of a slot the step knows is not crashed (it checked, or started it)."""
        assert self.broker is not None, f"broker {self.broker_id} is crashed"
        return self.broker


class ClusterCheck(Protocol):
    """What a ``monitor`` is: called after every step (invariants.Monitor)."""

    def check(self, cluster: Cluster) -> None: ...


class Cluster:
    def __init__(
        self,
        broker_ids: list[int],
        config: ReplicationConfig | None = None,
        *,
        zookeeper: ZooKeeperConfig | None = None,
        monitor: ClusterCheck | None = None,
        broker_factory: Callable[..., Broker] = Broker,
        substeps: SubStepObserver = UNOBSERVED,
    ) -> None:
        if not broker_ids or len(set(broker_ids)) != len(broker_ids):
            raise UsageError(
                f"Cluster: broker ids must be distinct and at least one, got {broker_ids!r}"
            )
        self.config = config or ReplicationConfig()
        self.zk = ZooKeeperServer(zookeeper or ZooKeeperConfig(tick_time_ms=500))
        self.now_ms = 0
        self.monitor = monitor
        self.broker_factory = broker_factory
        self.substeps = substeps  # given to every broker started (see reference/substeps.py)
        self.slots = {b: BrokerSlot(b) for b in broker_ids}
        self.in_flight: list[InFlight] = []
        self.state_writes: list[StateWrite] = []  # ghost: accepted partition-state writes
        self.committed: dict[TopicPartition, dict[int, Record]] = {}  # ghost: acknowledged records
        self._next_session = ADMIN_SESSION + 1
        self._next_payload = 1
        self._owners: dict[int, int] = {}  # session id -> broker id
        self.zk.handle(
            OpenSession(self.now_ms, ADMIN_SESSION, self.config.zookeeper_session_timeout_ms)
        )
        for path in PERSISTENT_PATHS:
            self.zk.handle(Request(self.now_ms, ADMIN_SESSION, Create(path)))
        for broker_id in broker_ids:
            self._start(broker_id)
        self._checked()

    # -- the driver's steps ----------------------------------------------------------------

    def tick(self, ms: int) -> list[Notice]:
        """Let ``ms`` pass: running brokers keep their sessions alive and shrink ISRs that
        lag; sessions of crashed and paused brokers expire when due."""
        if not isinstance(ms, int) or ms < 0:
            raise UsageError(f"tick: ms must be a non-negative int, got {ms!r}")
        notices: list[Notice] = []
        target = self.now_ms + ms
        stride = max(1, self.config.zookeeper_session_timeout_ms // 4)
        while True:
            self.now_ms = min(target, self.now_ms + stride)
            self._zk_event(Tick(self.now_ms))
            self.zk.handle(Ping(self.now_ms, ADMIN_SESSION))
            for slot in self.slots.values():
                if slot.running and slot.session_id is not None:
                    self._zk_event(Ping(self.now_ms, slot.session_id))
            notices += self._expiries()
            for slot in self.slots.values():
                if slot.running:
                    notices += self._run(
                        slot.broker_id, slot.started.handle(BrokerTick(self.now_ms))
                    )
            if self.now_ms >= target:
                break
        return self._checked(notices)

    def deliver_watches(self, broker_id: int) -> list[Notice]:
        slot = self._running(broker_id, "deliver_watches")
        watches, slot.inbox = slot.inbox, []
        notices: list[Notice] = []
        for watch in watches:
            if slot.running:
                notices += self._run(
                    broker_id, slot.started.handle(ZkWatch(self.now_ms, watch.path, watch.type))
                )
        return self._checked(notices)

    def deliverable(self) -> list[int]:
        """Indexes in ``in_flight`` of the requests that can be delivered now: the oldest of
        each connection, to a running broker."""
        seen: set[tuple[int, int]] = set()
        ready = []
        for index, message in enumerate(self.in_flight):
            channel = (message.source, message.destination)
            if channel in seen:
                continue
            seen.add(channel)
            if self.slots[message.destination].running:
                ready.append(index)
        return ready

    def deliver(self, index: int) -> list[Notice]:
        if index not in self.deliverable():
            raise UsageError(
                f"deliver: request {index} cannot be delivered now (deliverable: {self.deliverable()})"
            )
        message = self.in_flight.pop(index)
        broker = self.slots[message.destination].started
        return self._checked(
            self._run(
                message.destination, broker.handle(DeliverRequest(self.now_ms, message.request))
            )
        )

    def settle(self, max_steps: int = 10_000) -> list[Notice]:
        """Deliver watches and requests until none is left for a running broker."""
        notices: list[Notice] = []
        for _ in range(max_steps):
            waiting = [b for b, s in self.slots.items() if s.running and s.inbox]
            if waiting:
                notices += self.deliver_watches(waiting[0])
            elif ready := self.deliverable():
                notices += self.deliver(ready[0])
            else:
                return notices
        raise UsageError(f"settle: still busy after {max_steps} steps")

    def produce(self, broker_id: int, tp: TopicPartition, value: object = None) -> list[Notice]:
        """A client sends one record with acks=all to ``broker_id``."""
        slot = self._running(broker_id, "produce")
        payload_id = self._next_payload
        self._next_payload += 1
        return self._checked(
            self._run(
                broker_id,
                slot.started.handle(
                    Produce(self.now_ms, tp.topic, tp.partition, payload_id, value)
                ),
            )
        )

    def replicate(self, broker_id: int, tp: TopicPartition) -> list[Notice]:
        """One fetch of ``broker_id`` from the broker it follows for ``tp``, and its answer.
        Nothing happens if it follows no one or its leader is crashed or paused."""
        slot = self._running(broker_id, "replicate")
        fetch = slot.started.fetch_request(self.now_ms, tp)
        if fetch is None:
            return []
        leader_id = slot.started.partitions[tp].leader
        leader = self.slots.get(leader_id)
        if leader is None or not leader.running:
            return []
        notices: list[Notice] = []
        responses: list[FetchResponse] = []
        for effect in leader.started.handle(fetch):
            if isinstance(effect, FetchResponse):
                responses.append(effect)
            else:
                notices += self._run(leader_id, [effect])
        for response in responses:
            if slot.running:
                notices += self._run(broker_id, slot.started.handle(response))
        return self._checked(notices)

    def crash(self, broker_id: int) -> list[Notice]:
        slot = self._slot(broker_id, "crash")
        if slot.broker is None:
            raise UsageError(f"crash: broker {broker_id} is not running")
        slot.broker, slot.paused, slot.expired, slot.inbox = None, False, False, []
        self.in_flight = [m for m in self.in_flight if m.destination != broker_id]
        return self._checked([])

    def restart(self, broker_id: int) -> list[Notice]:
        slot = self._slot(broker_id, "restart")
        if slot.broker is not None:
            raise UsageError(f"restart: broker {broker_id} is running")
        if (
            slot.session_id is not None
            and self.zk.session_state(slot.session_id) == SessionState.OPEN
        ):
            raise UsageError(
                f"restart: broker {broker_id}'s old session {slot.session_id} is still open (its registration would block the new one)"
            )
        return self._checked(self._start(broker_id))

    def pause(self, broker_id: int) -> list[Notice]:
        slot = self._running(broker_id, "pause")
        slot.paused = True
        return self._checked([])

    def resume(self, broker_id: int) -> list[Notice]:
        slot = self._slot(broker_id, "resume")
        if slot.broker is None or not slot.paused:
            raise UsageError(f"resume: broker {broker_id} is not paused")
        slot.paused = False
        notices: list[Notice] = []
        if slot.expired:
            slot.expired = False
            notices += self._renew_session(broker_id)
        return self._checked(notices)

    def expire_session(self, broker_id: int) -> list[Notice]:
        """ZooKeeper ends the broker's session now (its ephemerals vanish, watches fire)."""
        slot = self._slot(broker_id, "expire_session")
        if slot.session_id is None or self.zk.session_state(slot.session_id) != SessionState.OPEN:
            raise UsageError(f"expire_session: broker {broker_id} has no open session")
        self._zk_event(CloseSession(self.now_ms, slot.session_id))
        return self._checked(self._session_ended(broker_id))

    # -- administration (an admin client's own session) ------------------------------------------

    def create_topic(
        self,
        topic: str,
        assignment: dict[int, tuple[int, ...]],
        topic_id: uuid.UUID | None = None,
    ) -> list[Notice]:
        self._admin(
            Create(topic_path(topic), TopicAssignment.of(assignment, topic_id).encode()),
            f"create_topic {topic!r}",
        )
        return self._checked([])

    def delete_topic(self, topic: str) -> list[Notice]:
        self._admin(Create(delete_topic_path(topic)), f"delete_topic {topic!r}")
        return self._checked([])

    def add_partitions(self, topic: str, replicas: list[tuple[int, ...]]) -> list[Notice]:
        """CreatePartitions (ISR-20): partitions numbered on from the topic's, with these
        replicas, written into its assignment by a setData on the version read. Refused while
        a reassignment is pending, as Kafka refuses it (REASSIGNMENT_IN_PROGRESS): the
        controller writes the assignment of a reassigned topic from its own cache."""
        path = topic_path(topic)
        node = self.zk.tree.node(path)
        if node is None:
            raise UsageError(f"add_partitions {topic!r}: no such topic")
        current = TopicAssignment.decode(path, node.data)
        if current.adding_replicas or self.zk.tree.node(REASSIGN_PARTITIONS) is not None:
            raise UsageError(f"add_partitions {topic!r}: a reassignment is in progress")
        start = len(current.partitions)
        added = {start + i: r for i, r in enumerate(replicas)}
        updated = replace(
            current,
            partitions={**current.partitions, **added},
            adding_replicas={},
            removing_replicas={},
        )
        self._admin(SetData(path, updated.encode(), node.version), f"add_partitions {topic!r}")
        return self._checked([])

    def reassign(self, targets: dict[TopicPartition, tuple[int, ...]]) -> list[Notice]:
        self._admin(
            Create(REASSIGN_PARTITIONS, encode_reassignment(targets)),
            "reassign (one at a time: Kafka's legacy path)",
        )
        return self._checked([])

    def _admin(self, op: Op, what: str) -> None:
        result = self._zk(None, op)
        if result.code != Code.OK:
            raise UsageError(f"{what}: ZooKeeper answered {result.code.name}")

    # -- inspection ----------------------------------------------------------------------

    def published(self) -> dict[TopicPartition, tuple[PartitionState, int]]:
        """Every partition state in ZooKeeper, with its zk_version."""
        states = {}
        for path, node in self.zk.tree.nodes.items():
            tp = state_path_partition(path)
            if tp is not None:
                states[tp] = (PartitionState.decode(path, node.data), node.version)
        return states

    def controller_id(self) -> int | None:
        node = self.zk.tree.node(CONTROLLER)
        return decode_controller(CONTROLLER, node.data) if node else None

    def controller_epoch(self) -> int | None:
        node = self.zk.tree.node(CONTROLLER_EPOCH)
        return decode_controller_epoch(CONTROLLER_EPOCH, node.data) if node else None

    def broker(self, broker_id: int) -> Broker | None:
        return self._slot(broker_id, "broker").broker

    def leaders(self, tp: TopicPartition) -> list[int]:
        """Brokers that believe they lead ``tp`` now."""
        return [b for b, s in self.slots.items() if s.broker is not None and s.broker.leads(tp)]

    def followers(self, tp: TopicPartition) -> list[int]:
        return [
            b
            for b, s in self.slots.items()
            if s.broker is not None
            and tp in s.broker.partitions
            and s.broker.partitions[tp].role == Role.FOLLOWER
        ]

    # -- internals -------------------------------------------------------------------------

    def _slot(self, broker_id: int, step: str) -> BrokerSlot:
        try:
            return self.slots[broker_id]
        except KeyError:
            raise UsageError(
                f"{step}: no broker {broker_id} (brokers: {sorted(self.slots)})"
            ) from None

    def _running(self, broker_id: int, step: str) -> BrokerSlot:
        slot = self._slot(broker_id, step)
        if not slot.running:
            raise UsageError(
                f"{step}: broker {broker_id} is {'paused' if slot.broker else 'crashed'}"
            )
        return slot

    def _start(self, broker_id: int) -> list[Notice]:
        slot = self.slots[broker_id]
        slot.broker = self.broker_factory(broker_id, self.config, logs=slot.logs)
        slot.broker.report_substeps(self.substeps)
        return self._open_session(broker_id)

    def _open_session(self, broker_id: int) -> list[Notice]:
        slot = self.slots[broker_id]
        slot.session_id = self._next_session
        self._next_session += 1
        self._owners[slot.session_id] = broker_id
        self._zk_event(
            OpenSession(self.now_ms, slot.session_id, self.config.zookeeper_session_timeout_ms)
        )
        return self._run(broker_id, slot.started.handle(ZkSessionStarted(self.now_ms)))

    def _renew_session(self, broker_id: int) -> list[Notice]:
        """The broker learns its session is gone, and opens a new one (ISR-18: Kafka 2.6
        re-registers and stands for controller again; it keeps leading in memory)."""
        slot = self.slots[broker_id]
        notices = self._run(broker_id, slot.started.handle(ZkSessionExpired(self.now_ms)))
        return notices + self._open_session(broker_id)

    def _session_ended(self, broker_id: int) -> list[Notice]:
        slot = self.slots[broker_id]
        slot.inbox = []  # the session's watches are gone with it
        if slot.broker is None:
            return []
        if slot.paused:
            slot.expired = True
            return []
        return self._renew_session(broker_id)

    def _expiries(self) -> list[Notice]:
        notices: list[Notice] = []
        for slot in self.slots.values():
            session = slot.session_id
            if (
                session is not None
                and not slot.expired
                and slot.broker is not None
                and self.zk.session_state(session) != SessionState.OPEN
            ):
                notices += self._session_ended(slot.broker_id)
        return notices

    def _zk_event(self, event: ZooKeeperEvent) -> list[ZooKeeperEffect]:
        effects = self.zk.handle(event)
        for effect in effects:
            if isinstance(effect, WatchFired):
                owner = self._owners.get(effect.session_id)
                slot = self.slots.get(owner) if owner is not None else None
                if (
                    slot is not None
                    and slot.session_id == effect.session_id
                    and slot.broker is not None
                ):
                    slot.inbox.append(ZkWatch(self.now_ms, effect.path, effect.type))
        return effects

    def _zk(self, broker_id: int | None, op: Op) -> ZooKeeperResult:
        """Run ``op`` on the broker's session (the admin's for None); record accepted
        partition-state writes for NoWriteWithStaleVersion."""
        session = ADMIN_SESSION if broker_id is None else self.slots[broker_id].session_id
        if session is None:
            raise UsageError(f"broker {broker_id} has no ZooKeeper session")
        writes = [
            o
            for o in (op.ops if isinstance(op, Multi) else (op,))
            if isinstance(o, (SetData, Delete)) and state_path_partition(o.path)
        ]
        before = {
            o.path: (node.version if (node := self.zk.tree.node(o.path)) else None) for o in writes
        }
        effects = self._zk_event(Request(self.now_ms, session, op))
        result = next(e.result for e in effects if isinstance(e, Reply))
        if result.code == Code.OK:
            self.state_writes += [StateWrite(o.path, o.version, before[o.path]) for o in writes]
        if any(isinstance(e, (SessionExpired, SessionClosed)) for e in effects):
            raise UsageError("a request expired sessions: advance time with tick() only")
        return result

    def _run(self, broker_id: int, effects: list[Effect]) -> list[Notice]:
        """Carry out a broker's effects: ZooKeeper calls now and in order (their results
        go back to it), requests into flight; the rest are notices."""
        notices: list[Notice] = []
        queue = deque(effects)
        while queue:
            effect = queue.popleft()
            slot = self.slots[broker_id]
            if isinstance(effect, ZkCall):
                if slot.broker is None:
                    continue
                result = self._zk(broker_id, effect.op)
                queue.extend(slot.broker.handle(ZkResult(self.now_ms, effect.call_id, result)))
            elif isinstance(effect, SendRequest):
                self.in_flight.append(InFlight(broker_id, effect.broker_id, effect.request))
            else:
                if isinstance(effect, ProduceAcked):
                    tp = TopicPartition(effect.topic, effect.partition)
                    record = slot.started.partitions[tp].log.records[effect.offset]
                    self.committed.setdefault(tp, {})[effect.offset] = record
                notices.append(Notice(broker_id, effect))
        return notices

    def _checked(self, notices: list[Notice] | None = None) -> list[Notice]:
        if self.monitor is not None:
            self.monitor.check(self)
        return notices or []
