"""``coordspec simulate --cluster``: seeded runs of a whole cluster (reference/failover's
``FailoverCluster`` on the replication model), written as traces and checked.

Three brokers host ``__consumer_offsets`` (replicated three ways) and a data topic; groups of
consumers join, sync, heartbeat and commit through the coordinator of their offsets
partition, and a producer writes to the data partition with acks=all, while brokers crash
and restart, pause and resume, and lose their ZooKeeper sessions, so leadership and the
coordinators move. Every step of the cluster is recorded:

- each group's requests and responses (kind ``request`` / ``response``), as the one-coordinator
  simulator writes them; when a broker loads a group's offsets partition (the coordinator
  moved) a ``load_group`` fault, with the time the previous coordinator stopped serving;
  requests in flight then get no recorded response (the client looks for the coordinator
  again);
- each partition's events (kind ``partition``, spec/trace-format.md): the conditional writes
  of its state in ZooKeeper, as the ZooKeeper model saw them, and every change of a replica
  (LeaderAndIsr, StepDown, Produce, Replicate, AdvanceHighWatermark, ...), read off the
  cluster after each of its steps by :class:`PartitionRecorder`, which also runs the
  reference's own replication Monitor.

A planted bug (:data:`BUGS`) breaks the replication layer; the trace check must find it.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field, replace
from typing import TextIO

from coordspec.conformance.simulate import planted
from coordspec.conformance.simulate.consumers import (
    SOURCE,
    Client,
    learn,
    message,
    request_for,
    run_name,
)
from coordspec.conformance.trace.format import FORMAT_VERSION, TraceWriter
from coordspec.reference.errors import InvariantViolation
from coordspec.reference.failover import FailoverCluster, partition_for
from coordspec.reference.replication import invariants
from coordspec.reference.replication.cluster import Cluster
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.log import Record
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import (
    CONTROLLER_EPOCH,
    PartitionState,
    TopicPartition,
    decode_controller_epoch,
    state_path_partition,
)
from coordspec.reference.zookeeper import Check, Code, Create, Multi, SetData
from coordspec.reference.zookeeper.sessions import SessionState

BROKERS = (1, 2, 3)
OFFSETS_PARTITIONS = 2
DATA = TopicPartition("data", 0)
# A follower that stops fetching leaves the ISR after 1 s, not Kafka's 30 s: a coordinator's
# write waits for the high watermark, and the oracle, which completes writes at once, cannot
# follow group timers that fire during a long wait (and the ISR moves more often).
REPLICATION = ReplicationConfig(replica_lag_time_max_ms=1_000)
# A planted bug: its name, what it breaks, and the rule the check must report.
BUGS = {
    # the leader acknowledges acks=all as soon as it appends (in what the trace reports, as
    # the group bugs rewrite what clients hear; the cluster itself still waits)
    "ack-before-isr": "ISR-12",
    # ZooKeeper takes a leader's ISR write whatever version it expects: a zombie's stale write wins
    "isr-write-skips-version": "ISR-15",
}


# -- the partition records --------------------------------------------------------------------


@dataclass(frozen=True)
class _ReplicaSnapshot:
    up: bool
    paused: bool
    session: int | None
    role: str | None = None
    leader: int | None = None
    leader_epoch: int | None = None
    isr: tuple[int, ...] | None = None
    zk_version: int | None = None
    controller_epoch: int | None = None
    high_watermark: int = 0
    log: tuple[Record, ...] = ()


class PartitionRecorder:
    """A replication ``monitor`` (``Cluster(monitor=...)`` calls ``check`` after every step)
    that writes each step's partition events, then runs the reference's Monitor.

    ZooKeeper writes are seen through the cluster's ``_zk`` (wrapped on the first check,
    before any partition exists), so failed conditional writes are recorded too."""

    def __init__(self, emit, bug: str | None = None) -> None:
        self.emit = emit  # emit(tp, **fields) writes one partition record
        self.bug = bug
        self.monitor = invariants.Monitor()
        self.step = 0
        self.cluster: Cluster | None = None
        self._writes: list[dict] = []  # this step's writes, in order
        self._failed_writers: set[tuple[int, TopicPartition]] = set()
        self._seen: dict[tuple[int, TopicPartition], _ReplicaSnapshot] = {}
        self._acked: dict[TopicPartition, set[int]] = {}
        self._early_acks: dict[TopicPartition, set[int]] = {}

    def check(self, cluster: Cluster) -> None:
        if self.cluster is None:
            self.cluster = cluster
            write = cluster._zk
            cluster._zk = lambda broker_id, op: self._zk(write, broker_id, op)
        self.step += 1
        for fields in self._writes:
            self.emit(fields.pop("tp"), step=self.step, **fields)
        self._writes.clear()
        self._replicas(cluster)
        self._acks(cluster)
        self._failed_writers.clear()
        self.monitor.check(cluster)

    # -- ZooKeeper writes ----------------------------------------------------------------

    def _zk(self, write, broker_id: int | None, op):
        ops = op.ops if isinstance(op, Multi) else (op,)
        by_controller = (
            isinstance(op, Multi) and isinstance(ops[0], Check) and ops[0].path == CONTROLLER_EPOCH
        )
        meant = None  # the version a leader's ISR write was conditional on, when the planted bug drops the condition
        if (
            self.bug == "isr-write-skips-version"
            and not by_controller
            and isinstance(op, SetData)
            and state_path_partition(op.path)
        ):
            meant, op = op.version, SetData(op.path, op.data, -1)
            ops = (op,)
        states = [
            (o, state_path_partition(o.path)) for o in ops if isinstance(o, (SetData, Create))
        ]
        states = [(o, tp) for o, tp in states if tp is not None]
        tree = self.cluster.zk.tree
        nodes = {o.path: tree.node(o.path) for o, _ in states}
        before = {
            path: node.version if node is not None else None for path, node in nodes.items()
        }  # nodes change in place
        replica = self.cluster.broker(broker_id).partitions if broker_id is not None else {}
        held = {tp: replica[tp].isr if tp in replica else () for _, tp in states}
        epoch_node = tree.node(CONTROLLER_EPOCH)
        zk_epoch = decode_controller_epoch(CONTROLLER_EPOCH, epoch_node.data) if epoch_node else -1
        written = len(self.cluster.state_writes)
        result = write(broker_id, op)
        if (
            meant is not None
        ):  # the ghost history, and so the reference's own check, knows what the leader meant
            self.cluster.state_writes[written:] = [
                replace(w, expected_version=meant) for w in self.cluster.state_writes[written:]
            ]
        for o, tp in states:
            state = PartitionState.decode(o.path, o.data)
            if isinstance(o, Create):
                event = "InitLeaders"
            elif by_controller:
                event = "ElectLeader"
            else:  # a leader's: ShrinkIsr or ExpandIsr of the ISR it holds
                event = "ShrinkIsr" if len(state.isr) < len(held[tp]) else "ExpandIsr"
            node = tree.node(o.path)
            ok = result.code == Code.OK
            if not ok and not by_controller:
                self._failed_writers.add((broker_id, tp))
            self._writes.append(
                {
                    "tp": tp,
                    "event": event,
                    "broker": broker_id,
                    "expected_zk_version": -1
                    if isinstance(o, Create)
                    else meant
                    if meant is not None
                    else o.version,
                    "zk_version_before": before[o.path],
                    "outcome": "ok" if ok else result.code.name,
                    "zk_controller_epoch": zk_epoch,
                    "leader": state.leader,
                    "leader_epoch": state.leader_epoch,
                    "isr": list(state.isr),
                    "controller_epoch": state.controller_epoch,
                    "zk_version": node.version if ok and node is not None else None,
                }
            )
        return result

    # -- replicas ------------------------------------------------------------------------

    def _snapshot(self, cluster: Cluster, broker_id: int, tp: TopicPartition) -> _ReplicaSnapshot:
        slot = cluster.slots[broker_id]
        alive = slot.broker is not None
        session = slot.session_id if not slot.expired else None
        log = slot.logs.get(tp)
        replica = slot.broker.partitions.get(tp) if alive else None
        common = {
            "up": alive,
            "paused": slot.paused,
            "session": session,
            "high_watermark": log.high_watermark if log else 0,
            "log": tuple(log.records) if log else (),
        }
        if replica is None:
            return _ReplicaSnapshot(**common)
        return _ReplicaSnapshot(
            **common,
            role=str(replica.role),
            leader=replica.leader,
            leader_epoch=replica.leader_epoch,
            isr=tuple(replica.isr),
            zk_version=replica.zk_version,
            controller_epoch=replica.controller_epoch,
        )

    def _replicas(self, cluster: Cluster) -> None:
        for tp in sorted(cluster.published()):
            for broker_id in sorted(cluster.slots):
                now = self._snapshot(cluster, broker_id, tp)
                was = self._seen.get(
                    (broker_id, tp), _ReplicaSnapshot(up=True, paused=False, session=now.session)
                )
                if now != was:
                    self._changed(broker_id, tp, was, now)
                self._seen[(broker_id, tp)] = now

    def _changed(
        self, broker_id: int, tp: TopicPartition, was: _ReplicaSnapshot, now: _ReplicaSnapshot
    ) -> None:
        def replica(event: str, **extra) -> None:
            state = (
                {
                    "role": now.role,
                    "leader": now.leader,
                    "leader_epoch": now.leader_epoch,
                    "isr": list(now.isr) if now.isr is not None else None,
                    "zk_version": now.zk_version,
                    "controller_epoch": now.controller_epoch,
                }
                if now.up and now.role is not None
                else {}
            )
            self.emit(
                tp,
                step=self.step,
                event=event,
                broker=broker_id,
                high_watermark=now.high_watermark,
                log_end_offset=len(now.log),
                **state,
                **extra,
            )

        if was.up != now.up:
            replica("StartBroker" if now.up else "CrashBroker")
        if now.up and was.paused != now.paused:
            replica("PauseBroker" if now.paused else "ResumeBroker")
        if now.up and was.up and was.session is not None and was.session != now.session:
            replica("ExpireSession")
        held = (now.role, now.leader, now.leader_epoch, now.isr, now.zk_version)
        if (
            now.up
            and held != (was.role, was.leader, was.leader_epoch, was.isr, was.zk_version)
            and now.role is not None
        ):
            if (broker_id, tp) in self._failed_writers:
                replica("StepDown")
            elif (now.role, now.leader_epoch) == (was.role, was.leader_epoch) and now.role == str(
                Role.LEADER
            ):
                replica("IsrUpdated")
            else:
                replica("LeaderAndIsr")
        if now.log != was.log:
            kept = next(
                (i for i, (a, b) in enumerate(zip(was.log, now.log, strict=False)) if a != b),
                min(len(was.log), len(now.log)),
            )
            log = [[r.leader_epoch, r.payload_id] for r in now.log]
            if now.role == str(Role.LEADER) and kept == len(was.log):
                for offset in range(kept, len(now.log)):
                    replica(
                        "Produce",
                        log=log,
                        offset=offset,
                        payload_id=now.log[offset].payload_id,
                        outcome="appended",
                        acks="all",
                    )
                    if self.bug == "ack-before-isr":
                        self._early_acks.setdefault(tp, set()).add(offset)
                        replica(
                            "Produce",
                            offset=offset,
                            payload_id=now.log[offset].payload_id,
                            outcome="acknowledged",
                            acks="all",
                        )
            else:
                replica("Replicate", log=log, truncated_to=kept if kept < len(was.log) else None)
        if now.high_watermark != was.high_watermark:
            replica("AdvanceHighWatermark")

    def _acks(self, cluster: Cluster) -> None:
        """Records the cluster counts as acknowledged since the last step (its ghost history)."""
        for tp, records in cluster.committed.items():
            done = self._acked.setdefault(tp, set())
            for offset in sorted(set(records) - done):
                done.add(offset)
                if offset in self._early_acks.get(tp, ()):
                    continue  # the planted bug acknowledged it already
                leader = next(
                    (
                        b
                        for b in cluster.leaders(tp)
                        if self._holds(cluster, b, tp, offset, records[offset])
                    ),
                    None,
                )
                if leader is None:
                    continue
                log = cluster.slots[leader].logs[tp]
                self.emit(
                    tp,
                    step=self.step,
                    event="Produce",
                    broker=leader,
                    offset=offset,
                    payload_id=records[offset].payload_id,
                    outcome="acknowledged",
                    acks="all",
                    high_watermark=log.high_watermark,
                    log_end_offset=len(log.records),
                    leader_epoch=cluster.broker(leader).partitions[tp].leader_epoch,
                )

    @staticmethod
    def _holds(
        cluster: Cluster, broker_id: int, tp: TopicPartition, offset: int, record: Record
    ) -> bool:
        log = cluster.slots[broker_id].logs.get(tp)
        return log is not None and offset < log.high_watermark and log.records[offset] == record


# -- the run ----------------------------------------------------------------------------------


@dataclass
class _Group:
    name: str
    clients: list[Client]
    coordinator: object = (
        None  # the GroupCoordinator the clients talk to (coordspec.reference.group)
    )
    epoch: int = -1  # the leader epoch it loaded the group's partition at
    last_ms: int = 0  # the time of its host's last event while it ran and served the group
    up: bool = False  # it serves the group, on a running broker
    sent: dict[str, tuple[int, object]] = field(default_factory=dict)  # client -> (broker, request)


class ClusterRun:
    def __init__(self, seed: int, options, out: TextIO) -> None:
        self.rng = random.Random(seed)
        self.options, self.out = options, out
        self.trace = TraceWriter(out, SOURCE)
        self.run_id = run_name(seed, options)
        self.faults = options.faults
        self.recorder = PartitionRecorder(
            self._partition_record, options.bug if options.bug in BUGS else None
        )
        self.cluster = FailoverCluster(
            list(BROKERS),
            OFFSETS_PARTITIONS,
            replication_monitor=self.recorder,
            seed=seed,
            replication_config=REPLICATION,
        )
        self.groups = [
            _Group(f"sim-{seed}-g{g}", [Client(f"c{i + 1}") for i in range(options.clients)])
            for g in range(2)
        ]
        self.rewrite = (
            planted.BUGS[options.bug][0] if options.bug in planted.BUGS else None
        )  # a group bug
        self.ids = 0
        self.cluster.cluster.create_topic(DATA.topic, {DATA.partition: BROKERS})
        self._settle()

    @property
    def now(self) -> int:
        return self.recorder.cluster.now_ms  # the recorder has the cluster from its first step on

    def _partition_record(self, tp: TopicPartition, **fields) -> None:
        line = {
            "v": FORMAT_VERSION,
            "source": SOURCE,
            "run": self.run_id,
            "ts_ms": round(time.time() * 1000, 3),
            "t_ms": self.now,
            "kind": "partition",
            "topic": tp.topic,
            "partition": tp.partition,
            **{k: v for k, v in fields.items() if v is not None},
        }
        self.out.write(json.dumps(line, separators=(",", ":")) + "\n")

    def _group_record(self, group: _Group, t_ms: int, **fields) -> None:
        self.trace.write(self.run_id, None, group.name, t_ms, **fields)

    def play(self) -> None:
        for _ in range(self.options.steps):
            self.step()
            self._settle()

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.17:
            self._fault(roll)
        elif roll < 0.35:
            longest = 25_000 if self.faults and self.rng.random() < 0.15 else 3_000
            self._tick(self.rng.randrange(100, longest))
        elif roll < 0.45:
            self._produce()
        else:
            group = self.rng.choice(self.groups)
            idle = [c for c in group.clients if not c.crashed and not c.waiting]
            if idle:
                self._send(group, self.rng.choice(idle))
            elif self.rng.random() < 0.03 and "crash" in self.faults:
                self.rng.choice(group.clients).crashed = True

    def _fault(self, roll: float) -> None:
        """A broker crashes or starts again, pauses or resumes, or loses its ZooKeeper session
        (each in its band of ``roll``; nothing if that fault is not enabled)."""
        slots = self.cluster.cluster.slots
        running = [b for b in BROKERS if self.cluster.running(b)]
        fault = "crash" if roll < 0.08 else "pause" if roll < 0.15 else "expire"
        if fault not in self.faults:
            return
        if roll < 0.04 and len(running) > 1:
            self.cluster.crash(self.rng.choice(running))
        elif 0.04 <= roll < 0.08:
            down = [b for b in BROKERS if slots[b].broker is None and self._session_closed(b)]
            if down:
                self.cluster.restart(self.rng.choice(down))
        elif 0.08 <= roll < 0.11 and len(running) > 1:
            self.cluster.pause(self.rng.choice(running))
        elif 0.11 <= roll < 0.15:
            paused = [b for b in BROKERS if slots[b].broker is not None and slots[b].paused]
            if paused:
                resumed = self.rng.choice(paused)
                self.cluster.resume(resumed)
                self._resumed(resumed)
                if (
                    self.rng.random() < 0.5
                ):  # it acts before the controller's news reach it: a zombie
                    self._tick(REPLICATION.replica_lag_time_max_ms + 1)
        elif fault == "expire":
            open_ = [
                b for b in BROKERS if slots[b].broker is not None and not self._session_closed(b)
            ]
            if open_:
                self.cluster.expire_session(self.rng.choice(open_))

    def _resumed(self, broker_id: int) -> None:
        """The groups a paused broker still coordinates get a ``pause`` fault: the timers due
        while it slept fire now, late, as on a stopped broker that goes on."""
        host = self.cluster.hosts[broker_id]
        for group in self.groups:
            partition = partition_for(group.name, OFFSETS_PARTITIONS)
            if group.coordinator is not None and host.serving(partition) is group.coordinator:
                self._group_record(
                    group, self.now, kind="fault", fault="pause", down_ms=group.last_ms
                )

    def _session_closed(self, broker_id: int) -> bool:
        session = self.cluster.cluster.slots[broker_id].session_id
        return (
            session is None or self.cluster.cluster.zk.session_state(session) != SessionState.OPEN
        )

    def _tick(self, ms: int) -> None:
        """Let ``ms`` pass, stopping at each group timer due on the way, so that a timer fires
        (and its answers are recorded) at its deadline, as GM-36 asks of a broker."""
        end, caught_up = self.now + ms, -1
        while (due := self._next_group_deadline()) is not None and due < end:
            if due <= self.now:  # overdue: a broker that resumed fires them first, at once
                if caught_up == self.now:
                    break
                caught_up = self.now
            self.cluster.tick(max(0, due - self.now))
            self._collect()
        self.cluster.tick(end - self.now)
        for group in self.groups:
            if group.up:  # a stopped coordinator's timers do not fire: the trace's time stands still until the load
                self._group_record(group, self.now, kind="time", advance_ms=ms)

    def _next_group_deadline(self) -> int | None:
        """The earliest group timer of a running coordinator host."""
        deadlines = [
            d
            for broker_id, host in self.cluster.hosts.items()
            if self.cluster.running(broker_id) and (d := host.next_deadline_ms()) is not None
        ]
        return min(deadlines, default=None)

    def _produce(self) -> None:
        leaders = [b for b in self.cluster.cluster.leaders(DATA) if self.cluster.running(b)]
        if leaders:
            self.cluster.cluster.produce(self.rng.choice(leaders), DATA)

    def _send(self, group: _Group, c: Client) -> None:
        """To the group's coordinator, if one serves it now (else the client asks again later)."""
        broker = self.cluster.coordinator_for(group.name)
        partition = partition_for(group.name, OFFSETS_PARTITIONS)
        if (
            broker is None
            or not self.cluster.running(broker)
            or self.cluster.hosts[broker].serving(partition) is not group.coordinator
        ):
            return
        if self.cluster.hosts[broker].hosted[partition].uncommitted() or not self._commits_at_once(
            broker, partition
        ):
            return
        self.ids += 1
        request = request_for(c, group.name, self.ids, self.now, self.rng)
        group.sent[c.name] = (broker, request)
        c.waiting = True
        self._group_record(group, self.now, kind="request", client=c.name, **message(request))
        self.cluster.send(broker, request)

    def _commits_at_once(self, broker: int, partition: int) -> bool:
        """The oracle completes a write at once, so a client sends only when the coordinator's
        write would be committed in this step: every member of the ISR it holds runs and
        follows it (the invariants' ``can_commit`` counts a paused follower as following)."""
        tp = self.cluster.tp(partition)
        isr = self.cluster.cluster.broker(broker).partitions[tp].isr
        return invariants.can_commit(self.cluster.cluster, broker, tp) and all(
            self.cluster.running(b) for b in isr
        )

    def _settle(self) -> None:
        """What the cluster does between the driver's steps: watches and controller requests
        are delivered, leaders load, followers fetch; then clients read their answers."""
        self.cluster.settle()
        self._loads()
        for _ in range(2):
            self.cluster.replicate_all()
            for broker_id in self.cluster.cluster.followers(DATA):
                if self.cluster.running(broker_id):
                    self.cluster.cluster.replicate(broker_id, DATA)
            self.cluster.settle()
            self._loads()
        self._collect()

    def _loads(self) -> None:
        """Leaders waiting to load do; a load at a newer leader epoch than the coordinator a
        group talks to is a coordinator move, recorded as a ``load_group`` fault."""
        for broker_id, partition in sorted(self.cluster.pending_loads):
            if not self.cluster.running(broker_id):
                continue
            self.cluster.load(broker_id, partition)
            hosted = self.cluster.hosts[broker_id].hosted.get(partition)
            if hosted is None or not hosted.serving:
                continue
            for group in self.groups:
                if (
                    partition_for(group.name, OFFSETS_PARTITIONS) == partition
                    and hosted.leader_epoch > group.epoch
                ):
                    if group.coordinator is not None:
                        self._moved(group)
                    group.coordinator, group.epoch = hosted.coordinator, hosted.leader_epoch
        for group in self.groups:
            partition = partition_for(group.name, OFFSETS_PARTITIONS)
            host = next(
                (
                    h
                    for h in self.cluster.hosts.values()
                    if h.serving(partition) is group.coordinator
                ),
                None,
            )
            group.up = host is not None and self.cluster.running(host.broker_id)
            if host is None and group.coordinator is not None:
                self._orphan(
                    group
                )  # it resigned or its broker died: what it still answers is NOT_COORDINATOR
            elif group.up:
                group.last_ms = (
                    host.now_ms
                )  # paused, it does nothing: it stopped here, unless it comes back

    def _orphan(self, group: _Group) -> None:
        """The group's coordinator stopped: requests in flight get no recorded answer (a
        client asks for the coordinator again), as the ``load_group`` fault will say."""
        for c in group.clients:
            c.waiting = False
        group.sent.clear()

    def _moved(self, group: _Group) -> None:
        """Another coordinator loaded the group, after the last one's last event."""
        self._orphan(group)
        self._group_record(
            group, self.now, kind="fault", fault="load_group", down_ms=min(group.last_ms, self.now)
        )

    def _collect(self) -> None:
        for group in self.groups:
            for c in group.clients:
                if not c.waiting or c.name not in group.sent:
                    continue
                broker, request = group.sent[c.name]
                reply = self.cluster.replies.pop((broker, request.request_id), None)
                if reply is None:
                    continue
                response = self.rewrite(request, reply.response) if self.rewrite else reply.response
                self._group_record(
                    group, self.now, kind="response", client=c.name, **message(request, response)
                )
                c.waiting = False
                del group.sent[c.name]
                if not c.crashed:
                    learn(c, request, response)


def play(seed: int, options, out: TextIO) -> str:
    """One cluster run written to ``out``; an invariant the reference itself broke ("" if none)."""
    try:
        ClusterRun(seed, options, out).play()
    except InvariantViolation as exc:
        return f"{exc.invariant}: {exc.detail}"
    return ""
