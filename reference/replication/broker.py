"""A broker of the replication model: its ZooKeeper registration, its controller candidacy
(:class:`~coordspec.reference.replication.controller.Controller`), and its replicas
(:class:`~coordspec.reference.replication.partition.Partition`).

    broker = Broker(1, ReplicationConfig(), logs={})    # logs: the broker's disk, kept across crashes
    broker.handle(ZkSessionStarted(now_ms=0))            # [ZkCall(...create paths, register...)]
    broker.handle(ZkResult(now_ms=0, call_id=1, result=...))
    broker.handle(DeliverRequest(now_ms=5, request=LeaderAndIsr(...)))
    broker.handle(Produce(now_ms=6, topic="t", partition=0, payload_id=7))

Every input is an event (:mod:`coordspec.reference.replication.events`); the outputs are effects
(:mod:`coordspec.reference.replication.effects`): ``ZkCall`` to run on the broker's session,
``SendRequest`` from its controller, ``FetchResponse`` answering a ``Fetch``, and notices.

**For a layer above** (a group coordinator on an offsets partition), the notices are the
hooks, in the order they happen within one ``handle``:

- ``BecameLeader(topic, partition, leader_epoch)``: this broker leads the partition at
  that epoch; it may now append with ``Produce`` (``value`` is carried opaquely in the
  record). Load what the log holds, then serve. It comes again, without LeadershipLost
  in between, when the broker stays leader at a newer leader epoch.
- ``LeadershipLost(topic, partition, leader_epoch)``: it no longer leads (a newer
  LeaderAndIsr, a step-down after a failed ISR write, a StopReplica). Appends still
  waiting for their ack fail with NOT_LEADER_OR_FOLLOWER right after it.
- ``BecameFollower(topic, partition, leader_epoch, leader)``.
- ``ProduceAccepted`` (appended at ``offset``), then ``ProduceAcked`` once the HW passed it
  (committed), or ``ProduceFailed``.
- ``HighWatermarkMoved(topic, partition, leader_epoch, high_watermark)``: records below
  ``high_watermark`` are committed (on a leader) / known committed (on a follower).
- ``ReplicaStopped(topic, partition, deleted)``.
- ``IsrUpdated(topic, partition, leader_epoch, isr, zk_version)``: this leader's ShrinkIsr or
  ExpandIsr was written and adopted.

A crashed broker is a new ``Broker`` over the same ``logs``: memory is lost, the disk is
not. A paused broker is one the driver does not call.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import (
    Effect,
    IsrUpdated,
    ProduceFailed,
    ReplicaStopped,
    ZkCall,
)
from coordspec.reference.replication.events import (
    BrokerEvent,
    BrokerTick,
    ControllerStartup,
    DeliverRequest,
    Fetch,
    FetchResponse,
    Produce,
    ZkResult,
    ZkSessionExpired,
    ZkSessionStarted,
    ZkWatch,
)
from coordspec.reference.replication.log import ReplicaLog
from coordspec.reference.replication.messages import LeaderAndIsr, StopReplica
from coordspec.reference.replication.partition import Partition, Role
from coordspec.reference.replication.znodes import (
    ISR_CHANGE_PREFIX,
    PERSISTENT_PATHS,
    PartitionState,
    TopicPartition,
    broker_path,
    encode_broker_registration,
    encode_isr_change,
    state_path,
)
from coordspec.reference.substeps import UNOBSERVED, SubStepObserver
from coordspec.reference.zookeeper import (
    Code,
    Create,
    GetData,
    GetDataResult,
    Op,
    Result,
    SetData,
    SetDataResult,
)
from coordspec.reference.zookeeper.results import data_of, stat_of

# What a ZooKeeper call's result is for: the controller's call of that id, the broker's
# registration, an ISR write (partition, leader epoch, ISR), a re-read of a state after
# one, or nothing to learn (a persistent path, an ISR change notification).
Purpose: TypeAlias = (
    tuple[Literal["controller"], int]
    | tuple[Literal["register"]]
    | tuple[Literal["isr"], TopicPartition, int, tuple[int, ...]]
    | tuple[Literal["reread"], TopicPartition, int]
    | tuple[Literal["path"]]
    | tuple[Literal["notify"]]
)

_BROKER_EVENTS = (
    ZkSessionStarted,
    ZkSessionExpired,
    ZkResult,
    ZkWatch,
    DeliverRequest,
    Produce,
    Fetch,
    FetchResponse,
    BrokerTick,
)


class Broker:
    def __init__(
        self,
        broker_id: int,
        config: ReplicationConfig | None = None,
        *,
        logs: dict[TopicPartition, ReplicaLog] | None = None,
    ) -> None:
        if not isinstance(broker_id, int) or isinstance(broker_id, bool) or broker_id < 0:
            raise UsageError(f"Broker: broker_id must be a non-negative int, got {broker_id!r}")
        self.broker_id = broker_id
        self.config = config or ReplicationConfig()
        self.logs: dict[TopicPartition, ReplicaLog] = {} if logs is None else logs
        self.partitions: dict[TopicPartition, Partition] = {}
        self.substeps: SubStepObserver = UNOBSERVED  # see report_substeps
        self.controller = Controller(broker_id, self.config)
        self.controller_epoch = -1  # the highest seen in a controller request
        self.registered = False
        self._calls: dict[int, Purpose] = {}  # call id -> what the result is for
        self._next_call = 1

    def report_substeps(self, observer: SubStepObserver) -> None:
        """Tell ``observer`` of the sub-steps of this broker's controller and partitions."""
        self.substeps = self.controller.substeps = observer
        for partition in self.partitions.values():
            partition.substeps = observer

    # -- driving -----------------------------------------------------------------------

    def handle(self, event: BrokerEvent) -> list[Effect]:
        if not isinstance(event, _BROKER_EVENTS):
            raise UsageError(
                f"Broker {self.broker_id}: {type(event).__name__} is not a broker event"
            )
        if isinstance(event, ZkSessionStarted):
            return self._session_started(event.now_ms)
        if isinstance(event, ZkSessionExpired):
            self.registered = False
            self._calls.clear()  # their results will not come
            return self._from_controller(self.controller.handle(event))
        if isinstance(event, ZkResult):
            return self._result(event)
        if isinstance(event, ZkWatch):
            return self._from_controller(self.controller.handle(event))
        if isinstance(event, DeliverRequest):
            if isinstance(event.request, LeaderAndIsr):
                return self._leader_and_isr(event.now_ms, event.request)
            return self._stop_replica(event.request)
        if isinstance(event, Produce):
            partition = self.partitions.get(TopicPartition(event.topic, event.partition))
            if partition is None:
                return [
                    ProduceFailed(
                        event.topic, event.partition, event.payload_id, "UNKNOWN_TOPIC_OR_PARTITION"
                    )
                ]
            return partition.append(event.payload_id, event.value, self.config.min_insync_replicas)
        if isinstance(event, Fetch):
            return self._serve_fetch(event)
        if isinstance(event, FetchResponse):
            partition = self.partitions.get(TopicPartition(event.topic, event.partition))
            return partition.apply_fetch_response(event) if partition else []
        return self._tick(event.now_ms)

    def fetch_request(self, now_ms: int, tp: TopicPartition) -> Fetch | None:
        """The fetch this broker would send for ``tp`` now (None unless it follows a leader)."""
        partition = self.partitions.get(tp)
        return partition.fetch_request(now_ms) if partition else None

    def next_deadline_ms(self) -> int | None:
        """When a ``BrokerTick`` may shrink an ISR."""
        deadlines = [
            d
            for p in self.partitions.values()
            if (d := p.next_shrink_deadline_ms(self.config.replica_lag_time_max_ms)) is not None
        ]
        return min(deadlines, default=None)

    def leads(self, tp: TopicPartition) -> bool:
        partition = self.partitions.get(tp)
        return partition is not None and partition.role == Role.LEADER

    # -- ZooKeeper ---------------------------------------------------------------------

    def _call(self, purpose: Purpose, op: Op) -> ZkCall:
        call_id = self._next_call
        self._next_call += 1
        self._calls[call_id] = purpose
        return ZkCall(call_id, op)

    def _session_started(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = [self._call(("path",), Create(path)) for path in PERSISTENT_PATHS]
        effects.append(
            self._call(
                ("register",),
                Create(
                    broker_path(self.broker_id),
                    encode_broker_registration(9092 + self.broker_id, now_ms),
                    ephemeral=True,
                ),
            )
        )
        # An ISR write whose result the old session never saw: learn what ZooKeeper holds.
        for partition in self.partitions.values():
            if partition.pending_isr is not None:
                effects.append(
                    self._call(
                        ("reread", partition.tp, partition.leader_epoch),
                        GetData(state_path(partition.tp)),
                    )
                )
        return effects

    def _result(self, event: ZkResult) -> list[Effect]:
        purpose = self._calls.pop(event.call_id, None)
        if purpose is None:
            raise UsageError(
                f"Broker {self.broker_id}: ZkResult for call {event.call_id}, which is not outstanding"
            )
        match purpose:
            case ("controller", call_id):
                return self._from_controller(
                    self.controller.handle(ZkResult(event.now_ms, call_id, event.result))
                )
            case ("register",):
                if event.result.code == Code.NODEEXISTS:
                    raise UsageError(
                        f"Broker {self.broker_id}: {broker_path(self.broker_id)} exists; start a broker again only after its old session is gone"
                    )
                if event.result.code != Code.OK:
                    return []  # the session ended before the registration: a new session registers
                self.registered = True
                return self._from_controller(
                    self.controller.handle(ControllerStartup(event.now_ms))
                )
            case ("isr", tp, leader_epoch, isr):
                return self._isr_written(event.result, tp, leader_epoch, isr)
            case ("reread", tp, leader_epoch):
                return self._reread(event.result, tp, leader_epoch)
        return []  # persistent paths and ISR change notifications: nothing to learn

    def _from_controller(self, effects: list[Effect]) -> list[Effect]:
        """The controller's effects, its ZooKeeper calls renumbered into this broker's."""
        return [
            self._call(("controller", e.call_id), e.op) if isinstance(e, ZkCall) else e
            for e in effects
        ]

    # -- controller requests (ISR-11) ----------------------------------------------------------

    def _fenced(self, controller_epoch: int) -> bool:
        """A request from an older controller than one already heard is ignored
        (STALE_CONTROLLER_EPOCH)."""
        if controller_epoch < self.controller_epoch:
            return True
        self.controller_epoch = controller_epoch
        return False

    def _leader_and_isr(self, now_ms: int, request: LeaderAndIsr) -> list[Effect]:
        if self._fenced(request.controller_epoch):
            return []
        effects: list[Effect] = []
        for decision in request.partitions:
            if self.broker_id not in decision.replicas:
                continue
            partition = self.partitions.get(decision.tp)
            if partition is None:
                partition = self.partitions[decision.tp] = Partition(
                    decision.tp,
                    self.broker_id,
                    self.logs.setdefault(decision.tp, ReplicaLog()),
                    substeps=self.substeps,
                )
            if decision.leader_epoch > partition.leader_epoch:  # an older or equal epoch is stale
                effects += partition.apply(now_ms, decision, self.config.min_insync_replicas)
        return effects

    def _stop_replica(self, request: StopReplica) -> list[Effect]:
        if self._fenced(request.controller_epoch):
            return []
        effects: list[Effect] = []
        for tp in request.partitions:
            partition = self.partitions.pop(tp, None)
            if partition is not None:
                effects += partition.stop()
            if request.delete:
                self.logs.pop(tp, None)
            if partition is not None or request.delete:
                effects.append(ReplicaStopped(tp.topic, tp.partition, request.delete))
        return effects

    # -- leaders: fetches and ISR changes (ISR-14 … ISR-17, ISR-19) ------------------------------------

    def _serve_fetch(self, fetch: Fetch) -> list[Effect]:
        tp = TopicPartition(fetch.topic, fetch.partition)
        partition = self.partitions.get(tp)
        if partition is None:
            return [
                FetchResponse(
                    fetch.now_ms,
                    self.broker_id,
                    fetch.topic,
                    fetch.partition,
                    fetch.leader_epoch,
                    "NOT_LEADER_OR_FOLLOWER",
                    None,
                    fetch.fetch_offset,
                    (),
                    0,
                )
            ]
        response, effects = partition.serve_fetch(fetch, self.config.min_insync_replicas)
        if response.error is not None or response.diverging is not None:
            # Kafka 2.6 updates a follower's fetch state, and maybe expands the ISR, only on a
            # fetch it served: never on one fenced at another leader epoch, where the LEO the
            # follower reported at an older epoch would count (found by trace validation).
            return [response, *effects]
        expanded = partition.isr_to_expand(fetch.replica_id)
        if expanded is not None:
            effects += self._write_isr(partition, expanded)
        return [response, *effects]

    def _tick(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        for partition in self.partitions.values():
            shrunk = partition.isr_to_shrink(now_ms, self.config.replica_lag_time_max_ms)
            if shrunk is not None:
                effects += self._write_isr(partition, shrunk)
        return effects

    def _write_isr(self, partition: Partition, isr: tuple[int, ...]) -> list[Effect]:
        """ShrinkIsr / ExpandIsr: a SetData conditional on the zk_version the leader holds."""
        state = PartitionState(
            self.broker_id, partition.leader_epoch, isr, partition.controller_epoch
        )
        partition.pending_isr = isr
        op = SetData(state_path(partition.tp), state.encode(), partition.zk_version)
        effects: list[Effect] = [self._call(("isr", partition.tp, partition.leader_epoch, isr), op)]
        effects += partition.advance_high_watermark(self.config.min_insync_replicas)
        return effects

    def _current_leader(self, tp: TopicPartition, leader_epoch: int) -> Partition | None:
        partition = self.partitions.get(tp)
        if (
            partition is None
            or partition.role != Role.LEADER
            or partition.leader_epoch != leader_epoch
        ):
            return None
        return partition

    def _isr_written(
        self, result: Result, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...]
    ) -> list[Effect]:
        partition = self._current_leader(tp, leader_epoch)
        if partition is None:
            return []  # leadership changed meanwhile; the new decision replaced the proposal
        if isinstance(result, SetDataResult) and result.code == Code.OK:
            partition.isr_written(isr, stat_of(result).version)
            notify = self._call(
                ("notify",), Create(ISR_CHANGE_PREFIX, encode_isr_change([tp]), sequential=True)
            )
            updated = IsrUpdated(tp.topic, tp.partition, leader_epoch, isr, stat_of(result).version)
            return [
                updated,
                notify,
                *partition.advance_high_watermark(self.config.min_insync_replicas),
            ]
        if result.code == Code.SESSIONEXPIRED:
            return []  # the new session re-reads
        return [self._call(("reread", tp, leader_epoch), GetData(state_path(tp)))]

    def _reread(self, result: Result, tp: TopicPartition, leader_epoch: int) -> list[Effect]:
        partition = self._current_leader(tp, leader_epoch)
        if partition is None or result.code == Code.SESSIONEXPIRED:
            return []
        if isinstance(result, GetDataResult) and result.code == Code.OK:
            published = PartitionState.decode(state_path(tp), data_of(result))
            return partition.resolve_conflict(
                published, stat_of(result).version, self.config.min_insync_replicas
            )
        return partition.resolve_conflict(None, -1, self.config.min_insync_replicas)
