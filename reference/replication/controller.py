"""The controller role of one broker (ZooKeeper-mode Kafka 2.6 ``KafkaController``), sans-IO.

It talks to ZooKeeper only through operations of :mod:`coordspec.reference.zookeeper.ops`, emitted as
``ZkCall(call_id, op)`` effects; the driver runs each on the broker's ZooKeeper session
and feeds the result back as ``ZkResult(now_ms, call_id, result)``, and each watch that
fires as ``ZkWatch(now_ms, path, type)``. The same controller therefore runs on the model
(:class:`~coordspec.reference.zookeeper.ZooKeeperServer`) and, through
``coordspec.broker.zookeeper.executor.KazooExecutor``, on a real ZooKeeper.

Driving it alone (what ``benchmarks/failover_10k.py`` does)::

    controller = Controller(broker_id=1, config=ReplicationConfig(batch_writes=True))
    effects = controller.handle(ControllerStartup(now_ms))     # stand for election
    while effects:                                             # run calls until quiet
        ...for ZkCall(call_id, op): result = run op on the session (Request(..., op))
        ...feed controller.handle(ZkResult(now_ms, call_id, result)) and any
        ...WatchFired(session, path, type) as controller.handle(ZkWatch(now_ms, path, type))
    assert controller.active and controller.idle

- **Seed topics** before (or after) it starts: write ``/brokers/topics/<t>`` with
  ``TopicAssignment.of({0: (1, 2, 3), ...}).encode()`` (and register brokers at
  ``/brokers/ids/<id>``, ephemeral). On election the controller reads everything, and a
  topic created later reaches it by the child watch on ``/brokers/topics`` (InitLeaders).
- **Partitions added** to a topic (its ``/brokers/topics/<t>`` rewritten) reach it by the
  data watch on that znode: feed ``ZkWatch(now_ms, topic_path(t), EventType.NodeDataChanged)``.
- **Broker changes** reach it as the ``/brokers/ids`` child watch firing: feed
  ``ZkWatch(now_ms, "/brokers/ids", EventType.NodeChildrenChanged)``.
- **Collect its ZooKeeper ops** from the ``ZkCall`` effects. Calls emitted by one
  ``handle`` may be sent pipelined, in order (e.g. kazoo's ``transaction().commit_async()``
  for each ``Multi``); the controller waits for all results of a round before the next.
- **A failover is done** when the ``LeadersChanged`` notice of its ChangeLeaders round is
  emitted: by then every partition-state write of the round has its result. ``idle``
  is True once no call is outstanding and no work is queued.
- ``SendRequest(broker_id, LeaderAndIsr | StopReplica)`` effects are its requests to brokers.

Work is processed as Kafka's controller does: one controller event at a time from a
queue (ControllerEventManager). Each event is a job written as a generator that yields a
*round* (a list of operations) and receives their results.

Every write is ``Multi([Check("/controller_epoch", epoch_zk_version), ...])`` (KAFKA-6082,
Kafka 2.2+), each partition-state write conditional on the zk_version the controller holds.
A failed multi names the first failing op: if it is the epoch check, another controller
exists and this one resigns (ISR-3); otherwise the partitions of that multi are re-read
and their decisions recomputed and retried (ISR-4).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import replace
from operator import itemgetter
from typing import TypeAlias, TypeVar

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.batching import pack
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.effects import (
    BecameController,
    Effect,
    LeadersChanged,
    ResignedController,
    SendRequest,
    ZkCall,
)
from coordspec.reference.replication.election import (
    elect_leader,
    elect_reassigned_leader,
    init_leader,
)
from coordspec.reference.replication.events import (
    ControllerEvent,
    ControllerStartup,
    ZkResult,
    ZkSessionExpired,
    ZkWatch,
)
from coordspec.reference.replication.messages import (
    LeaderAndIsr,
    LeaderAndIsrPartition,
    StopReplica,
)
from coordspec.reference.replication.znodes import (
    BROKER_IDS,
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    REASSIGN_PARTITIONS,
    TOPICS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    broker_path,
    decode_controller,
    decode_controller_epoch,
    decode_isr_change,
    decode_reassignment,
    delete_topic_path,
    encode_controller,
    encode_controller_epoch,
    partition_path,
    partitions_path,
    state_path,
    topic_path,
    topic_path_topic,
)
from coordspec.reference.substeps import UNOBSERVED, SubStepObserver
from coordspec.reference.zookeeper import (
    Check,
    Code,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetChildrenResult,
    GetData,
    Multi,
    MultiResult,
    Op,
    Result,
    SetData,
)
from coordspec.reference.zookeeper.ops import WriteOp
from coordspec.reference.zookeeper.results import data_of, expect, stat_of

T = TypeVar("T")
K = TypeVar("K")
# A job yields a round of operations, is sent their results, and returns a T.
Job: TypeAlias = Generator[Sequence[Op], list[Result], T]
# A partition's next state and the ops that write it, the state znode's write last.
Decision: TypeAlias = tuple[PartitionState, tuple[WriteOp, ...]]
Decide: TypeAlias = Callable[[TopicPartition], Decision | None]
_LOST = (Code.SESSIONEXPIRED, Code.CONNECTIONLOSS)
_OPS = itemgetter(1)  # of a Decision
_pair = tuple.__new__  # what NamedTuple's _make does


class _Resigned(Exception):
    """Raised inside a job when this controller must stop: the epoch check failed or the
    session is gone."""


class Controller:
    def __init__(self, broker_id: int, config: ReplicationConfig | None = None) -> None:
        self.broker_id = broker_id
        self.config = config or ReplicationConfig()
        # told of ChangeLeaders (reference/substeps.py; set by Broker.report_substeps)
        self.substeps: SubStepObserver = UNOBSERVED
        self.active = False
        self.controller_epoch = -1
        self.epoch_zk_version = -1
        self.live_brokers: set[int] = set()
        self.broker_sessions: dict[
            int, int
        ] = {}  # broker id -> the session owning its registration
        self.assignments: dict[str, TopicAssignment] = {}
        self.states: dict[TopicPartition, tuple[PartitionState, int]] = {}  # state, zk_version
        self.partition_dirs: dict[str, set[int] | None] = {}  # None: no /partitions znode yet
        self.reassignments: dict[
            TopicPartition, tuple[int, ...]
        ] = {}  # partition -> target replicas
        # controller events waiting their turn
        self._queue: deque[Callable[[], Job[None]]] = deque()
        self._job: Job[None] | None = None
        self._waiting: dict[int, int] = {}  # call id -> position in the round
        self._round: list[Result | None] = []
        self._next_call = 1
        self._effects: list[Effect] = []
        self.now_ms = 0

    # -- driving -----------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        return self._job is None and not self._queue

    def handle(self, event: ControllerEvent) -> list[Effect]:
        if not isinstance(event, (ControllerStartup, ZkResult, ZkWatch, ZkSessionExpired)):
            raise UsageError(
                f"Controller {self.broker_id}: {type(event).__name__} is not a controller event"
            )
        self.now_ms = event.now_ms
        self._effects = []
        if isinstance(event, ControllerStartup):
            self._queue.append(self._elect)
        elif isinstance(event, ZkWatch):
            self._watch_fired(event.path)
        elif isinstance(event, ZkSessionExpired):
            self._queue.clear()
            self._job, self._waiting, self._round = None, {}, []
            if self.active:  # the broker stands again once it has registered on a new session
                self._resign("session expired", stand_again=False)
        else:
            self._result(event)
        self._run()
        effects, self._effects = self._effects, []
        return effects

    def _watch_fired(self, path: str) -> None:
        jobs = {
            BROKER_IDS: self._broker_change,
            TOPICS: self._topic_change,
            DELETE_TOPICS: self._delete_topics,
            REASSIGN_PARTITIONS: self._reassign,
            ISR_CHANGE_NOTIFICATION: self._isr_changes,
        }
        topic = topic_path_topic(path)
        if path == CONTROLLER:
            self._queue.append(self._elect)
        elif not self.active:
            return  # a watch of an earlier term is spent: the next term sets its own
        elif path in jobs:
            self._queue.append(jobs[path])
        elif topic is not None:
            self._queue.append(lambda: self._partition_modifications(topic))

    def _result(self, event: ZkResult) -> None:
        position = self._waiting.pop(event.call_id, None)
        if position is None:
            raise UsageError(
                f"Controller {self.broker_id}: ZkResult for call {event.call_id}, which is not outstanding (outstanding: {sorted(self._waiting)})"
            )
        self._round[position] = event.result

    def _run(self) -> None:
        """Advance the current job while its round is answered; start queued jobs."""
        while True:
            if self._job is None:
                if not self._queue:
                    return
                self._job = self._queue.popleft()()
                results: list[Result] | None = None
            elif self._waiting:
                return
            else:
                # No call is waiting, so every position of the round holds its result.
                results = [r for r in self._round if r is not None]
            try:
                ops = next(self._job) if results is None else self._job.send(results)
            except StopIteration:
                self._job = None
                continue
            except _Resigned:
                self._job = None
                continue
            self._round = [None] * len(ops)
            for position, op in enumerate(ops):
                call_id = self._next_call
                self._next_call += 1
                self._waiting[call_id] = position
                self._effects.append(ZkCall(call_id, op))

    def _resign(self, reason: str, *, stand_again: bool = True) -> None:
        """Stop acting as controller; stand again at once (a watch on /controller then
        says when it goes)."""
        self.active = False
        self._effects.append(ResignedController(self.controller_epoch, reason))
        self._queue.clear()
        if stand_again:
            self._queue.append(self._elect)

    def _check_session(self, results: Sequence[Result]) -> None:
        """A lost session (or connection) ends the job and the term; the driver then
        sends ZkSessionExpired, and ControllerStartup on the new session."""
        if any(r.code in _LOST for r in results):
            if self.active:
                self._resign("lost its ZooKeeper session", stand_again=False)
            raise _Resigned()

    # -- ElectController (ISR-1) and the failover that follows (ISR-2) -----------------------------

    def _elect(self) -> Job[None]:
        if self.active:
            (owner,) = yield [GetData(CONTROLLER)]
            self._check_session([owner])
            if (
                owner.code != Code.OK
                or decode_controller(CONTROLLER, data_of(owner)) != self.broker_id
            ):
                self._resign("another broker is controller")
            return
        epoch_read, controller = yield [GetData(CONTROLLER_EPOCH), Exists(CONTROLLER, watch=True)]
        self._check_session([epoch_read, controller])
        if controller.code == Code.OK:
            return  # another broker leads; the watch says when it goes
        if epoch_read.code == Code.NONODE:
            (created,) = yield [Create(CONTROLLER_EPOCH, encode_controller_epoch(0))]
            self._check_session([created])
            (epoch_read,) = yield [GetData(CONTROLLER_EPOCH)]
            self._check_session([epoch_read])
        epoch = decode_controller_epoch(CONTROLLER_EPOCH, data_of(epoch_read))
        claim = Multi(
            (
                Create(CONTROLLER, encode_controller(self.broker_id, self.now_ms), ephemeral=True),
                SetData(
                    CONTROLLER_EPOCH,
                    encode_controller_epoch(epoch + 1),
                    stat_of(epoch_read).version,
                ),
            )
        )
        (outcome,) = yield [claim]
        self._check_session([outcome])
        if outcome.code != Code.OK:
            # Another broker won the race (NODEEXISTS), or bumped the epoch first (BADVERSION).
            (again,) = yield [Exists(CONTROLLER, watch=True)]
            self._check_session([again])
            if again.code == Code.NONODE:
                self._queue.append(self._elect)
            return
        self.active = True
        self.controller_epoch = epoch + 1
        self.epoch_zk_version = stat_of(expect(MultiResult, outcome).results[1]).version
        self._effects.append(BecameController(self.controller_epoch))
        yield from self._failover()

    def _failover(self) -> Job[None]:
        """Read every published decision, re-send them all, then elect where needed."""
        brokers, topics, deletions, reassignment, notifications = yield [
            GetChildren(BROKER_IDS, watch=True),
            GetChildren(TOPICS, watch=True),
            GetChildren(DELETE_TOPICS, watch=True),
            Exists(REASSIGN_PARTITIONS, watch=True),
            GetChildren(ISR_CHANGE_NOTIFICATION, watch=True),
        ]
        self._check_session([brokers, topics, deletions, reassignment, notifications])
        self.broker_sessions = yield from self._read_brokers(
            expect(GetChildrenResult, brokers).children
        )
        self.live_brokers = set(self.broker_sessions)
        self.assignments, self.states, self.partition_dirs = {}, {}, {}
        yield from self._read_topics(list(expect(GetChildrenResult, topics).children))
        self._send_leader_and_isr(sorted(self.states), set(self.live_brokers))
        yield from self._change_leaders(self._all_partitions(), "ControllerFailover")
        if expect(GetChildrenResult, deletions).children:
            self._queue.append(self._delete_topics)
        if reassignment.code == Code.OK:
            self._queue.append(self._reassign)
        if expect(GetChildrenResult, notifications).children:
            self._queue.append(self._isr_changes)

    def _read_brokers(self, ids: tuple[str, ...]) -> Job[dict[int, int]]:
        """The live brokers and the session of each registration (a re-registered broker
        has a new one: Kafka's broker epoch, KIP-380)."""
        numbers = sorted(int(i) for i in ids if i.isdigit())
        found = yield [Exists(broker_path(b)) for b in numbers]
        self._check_session(found)
        sessions = {
            b: stat_of(r).ephemeral_owner
            for b, r in zip(numbers, found, strict=True)
            if r.code == Code.OK
        }
        return sessions

    def _read_topics(self, topics: list[str]) -> Job[None]:
        """Assignments, partition znodes and states of ``topics`` into the caches; a data
        watch on each assignment says when partitions are added (ISR-20)."""
        topics = sorted(topics)
        results = yield [GetData(topic_path(t), watch=True) for t in topics] + [
            GetChildren(partitions_path(t)) for t in topics
        ]
        self._check_session(results)
        reads: list[TopicPartition] = []
        for topic, assignment, dirs in zip(
            topics, results[: len(topics)], results[len(topics) :], strict=True
        ):
            if assignment.code != Code.OK:
                continue  # deleted meanwhile
            self.assignments[topic] = TopicAssignment.decode(topic_path(topic), data_of(assignment))
            self.partition_dirs[topic] = (
                {int(p) for p in expect(GetChildrenResult, dirs).children if p.isdigit()}
                if dirs.code == Code.OK
                else None
            )
            reads += [TopicPartition(topic, p) for p in sorted(self.partition_dirs[topic] or ())]
        yield from self._read_states(reads)

    def _read_states(self, tps: list[TopicPartition]) -> Job[None]:
        results = yield [GetData(state_path(tp)) for tp in tps]
        self._check_session(results)
        for tp, result in zip(tps, results, strict=True):
            if result.code == Code.OK:
                self.states[tp] = (
                    PartitionState.decode(state_path(tp), data_of(result)),
                    stat_of(result).version,
                )
            else:
                self.states.pop(tp, None)

    # -- BrokerChange (ISR-6) ------------------------------------------------------------------

    def _broker_change(self) -> Job[None]:
        (brokers,) = yield [GetChildren(BROKER_IDS, watch=True)]
        self._check_session([brokers])
        sessions = yield from self._read_brokers(expect(GetChildrenResult, brokers).children)
        now_live = set(sessions)
        bounced = {
            b for b in now_live & self.live_brokers if sessions[b] != self.broker_sessions.get(b)
        }
        started = (now_live - self.live_brokers) | bounced
        gone = (self.live_brokers - now_live) | bounced
        self.broker_sessions = sessions
        if not started and not gone:
            return
        if gone:  # onBrokerFailure first, with bounced brokers counted as gone (Kafka 2.6)
            self.live_brokers = now_live - bounced
            yield from self._change_leaders(self._all_partitions(), "BrokerChange")
        self.live_brokers = now_live
        if started:  # onBrokerStartup: the published decisions for their replicas, then elections
            hosted = [tp for tp in sorted(self.states) if started & set(self._replicas(tp))]
            self._send_leader_and_isr(hosted, started)
            yield from self._change_leaders(self._all_partitions(), "BrokerChange")

    # -- ChangeLeaders: InitLeaders and ElectLeader for many partitions, batched (ISR-4, ISR-5) --------

    def _all_partitions(self) -> list[TopicPartition]:
        # TopicPartition's own __new__ is a Python function: made from pairs in C instead
        return [
            _pair(TopicPartition, (t, p))
            for t, a in sorted(self.assignments.items())
            for p in sorted(a.partitions)
        ]

    def _replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        """The full replica set (during a reassignment: target then original replicas)."""
        return self.assignments[tp.topic].partitions.get(tp.partition, ())

    def _decide(self, tp: TopicPartition) -> Decision | None:
        replicas = self.assignments[tp.topic].partitions[tp.partition]
        published = self.states.get(tp)
        if published is None:
            state = init_leader(replicas, self.live_brokers, self.controller_epoch)
            if state is None:
                return None
            dirs = self.partition_dirs.get(tp.topic)
            ops: list[WriteOp] = []
            if dirs is None:
                ops.append(Create(partitions_path(tp.topic)))
                dirs = self.partition_dirs[tp.topic] = set()
            if tp.partition not in dirs:
                ops.append(Create(partition_path(tp)))
                dirs.add(tp.partition)
            ops.append(Create(state_path(tp), state.encode()))
            return state, tuple(ops)
        state = elect_leader(
            replicas,
            published[0],
            self.live_brokers,
            self.controller_epoch,
            unclean=self.config.unclean_leader_election_enable,
        )
        if state is None:
            return None
        return state, (SetData(state_path(tp), state.encode(), published[1]),)

    def _change_leaders(
        self, tps: list[TopicPartition], reason: str, decide: Decide | None = None
    ) -> Job[None]:
        """Decide every partition of ``tps``, write all decisions batched (or one at a
        time), retry those whose write met a newer version, then send LeaderAndIsr."""
        self.substeps.started("ChangeLeaders", self)
        decide = decide or self._decide
        decided: list[TopicPartition] = []
        written = multis = 0
        pending = [tp for tp in tps if tp.topic in self.assignments]
        while pending:
            decisions = {tp: d for tp in pending if (d := decide(tp)) is not None}
            if not decisions:
                break
            # (partition, ops) pairs made in C, not by a generator resumed per partition
            outcomes = yield from self._write(
                zip(decisions, map(_OPS, decisions.values()), strict=True)
            )
            multis += len(outcomes)
            stale: list[TopicPartition] = []
            for keys, result in outcomes:
                if result.code == Code.OK:
                    self._learn_written(keys, result, decisions)
                    decided += keys
                    written += len(keys)
                else:
                    stale += keys
            for topic in {tp.topic for tp in stale}:
                yield from self._reread_dirs(topic)
            yield from self._read_states([tp for tp in stale if tp.topic in self.assignments])
            pending = [tp for tp in stale if tp.topic in self.assignments]
        self._send_leader_and_isr(decided, set(self.live_brokers))
        self._effects.append(LeadersChanged(reason, written, multis))
        self.substeps.ended("ChangeLeaders", self, ())

    def _reread_dirs(self, topic: str) -> Job[None]:
        (dirs,) = yield [GetChildren(partitions_path(topic))]
        self._check_session([dirs])
        self.partition_dirs[topic] = (
            {int(p) for p in expect(GetChildrenResult, dirs).children if p.isdigit()}
            if dirs.code == Code.OK
            else None
        )

    def _write(
        self, groups: Iterable[tuple[K, tuple[WriteOp, ...]]]
    ) -> Job[list[tuple[list[K], MultiResult]]]:
        """Write ``groups`` (key, ops) as multis headed by the epoch check: all at once,
        packed under the byte budget, or one group per multi, one multi at a time. The
        result: (keys, result) per multi, whose ops are the keys' in order after the check.
        Resigns if the epoch check failed."""
        head = (Check(CONTROLLER_EPOCH, self.epoch_zk_version),)
        if self.config.batch_writes:
            packed = list(pack(head, groups, self.config.multi_byte_budget))
            answers = yield [Multi(ops) for _, ops in packed]
            outcomes = [
                (keys, expect(MultiResult, r)) for (keys, _), r in zip(packed, answers, strict=True)
            ]
        else:
            outcomes = []
            for key, ops in groups:
                (answer,) = yield [Multi(head + ops)]
                result = expect(MultiResult, answer)
                outcomes.append(([key], result))
                if result.code != Code.OK and self._epoch_failed(result):
                    break
        results = [result for _, result in outcomes]
        self._check_session(results)
        if any(r.code != Code.OK and self._epoch_failed(r) for r in results):
            self._resign("controller epoch moved on")
            raise _Resigned()
        return outcomes

    @staticmethod
    def _epoch_failed(result: MultiResult) -> bool:
        return bool(result.results) and result.results[0].code != Code.OK

    def _learn_written(
        self,
        keys: list[TopicPartition],
        result: MultiResult,
        decisions: dict[TopicPartition, Decision],
    ) -> None:
        """Cache the states a successful multi of ``keys`` wrote, with the versions ZooKeeper
        gave them. The multi holds each key's ops in order after the epoch check, and a
        decision writes its state last, so the answers are found by counting."""
        answers = result.results
        position = 0  # answers[0]: the epoch check
        for tp in keys:
            state, ops = decisions[tp]
            position += len(ops)
            if isinstance(ops[-1], SetData):
                self.states[tp] = (state, stat_of(answers[position]).version)
            else:  # Create: a new znode's version is 0
                self.states[tp] = (state, 0)

    def _send_leader_and_isr(self, tps: list[TopicPartition], brokers: set[int]) -> None:
        """One LeaderAndIsr per broker, listing the published decision of each of its
        partitions in ``tps`` (the replicas that are live and among ``brokers``)."""
        requests: dict[int, list[LeaderAndIsrPartition]] = {
            broker: [] for broker in sorted(brokers & self.live_brokers)
        }
        states, assignments = self.states, self.assignments
        for tp in tps:
            published = states.get(tp)
            assignment = assignments.get(tp.topic)
            if published is None or assignment is None:
                continue
            state, zk_version = published
            replicas = assignment.partitions.get(tp.partition, ())
            decision = LeaderAndIsrPartition(
                tp.topic,
                tp.partition,
                state.leader,
                state.leader_epoch,
                state.isr,
                zk_version,
                replicas,
                state.controller_epoch,
            )
            for broker in replicas:
                listed = requests.get(broker)
                if listed is not None:
                    listed.append(decision)
        for broker, decisions in requests.items():
            if decisions:
                self._effects.append(
                    SendRequest(
                        broker,
                        LeaderAndIsr(self.broker_id, self.controller_epoch, tuple(decisions)),
                    )
                )

    # -- TopicChange: new topics (ISR-8) -------------------------------------------------------------

    def _topic_change(self) -> Job[None]:
        (topics,) = yield [GetChildren(TOPICS, watch=True)]
        self._check_session([topics])
        present = set(expect(GetChildrenResult, topics).children)
        for gone in set(self.assignments) - present:
            self._forget_topic(gone)
        new = sorted(present - set(self.assignments))
        if not new:
            return
        yield from self._read_topics(new)
        tps = [
            TopicPartition(t, p)
            for t in new
            if t in self.assignments
            for p in sorted(self.assignments[t].partitions)
        ]
        yield from self._change_leaders(tps, "InitLeaders")

    # -- PartitionModifications: partitions added to a topic (ISR-20) ----------------------------

    def _partition_modifications(self, topic: str) -> Job[None]:
        """The topic's assignment changed: partitions it lists that the controller does not
        know are new, and start as a new topic's do (InitLeaders). Other changes are the
        controller's own reassignment writes."""
        (read,) = yield [GetData(topic_path(topic), watch=True)]
        self._check_session([read])
        known = self.assignments.get(topic)
        if read.code != Code.OK or known is None:
            return  # deleted meanwhile, or not yet read (TopicChange reads it whole)
        listed = TopicAssignment.decode(topic_path(topic), data_of(read)).partitions
        added = {p: r for p, r in listed.items() if p not in known.partitions}
        if not added:
            return
        self.assignments[topic] = replace(known, partitions={**known.partitions, **added})
        tps = [TopicPartition(topic, p) for p in sorted(added)]
        yield from self._change_leaders(tps, "InitLeaders")

    def _forget_topic(self, topic: str) -> None:
        self.assignments.pop(topic, None)
        self.partition_dirs.pop(topic, None)
        for tp in [tp for tp in self.states if tp.topic == topic]:
            del self.states[tp]
        for tp in [tp for tp in self.reassignments if tp.topic == topic]:
            del self.reassignments[tp]

    # -- DeleteTopic (ISR-9) -------------------------------------------------------------------

    def _delete_topics(self) -> Job[None]:
        (requested,) = yield [GetChildren(DELETE_TOPICS, watch=True)]
        self._check_session([requested])
        for topic in sorted(expect(GetChildrenResult, requested).children):
            if topic in self.assignments:
                tps = [TopicPartition(topic, p) for p in sorted(self.assignments[topic].partitions)]
                stopping: dict[int, list[TopicPartition]] = {}
                for tp in tps:
                    for broker in self._replicas(tp):
                        if broker in self.live_brokers:
                            stopping.setdefault(broker, []).append(tp)
                for broker, stopped in sorted(stopping.items()):
                    self._effects.append(
                        SendRequest(
                            broker,
                            StopReplica(
                                self.broker_id, self.controller_epoch, tuple(stopped), delete=True
                            ),
                        )
                    )
            yield from self._remove_topic_znodes(topic)
            self._forget_topic(topic)
        if not self.reassignments:
            yield from self._complete_reassignments()  # a deleted topic's reassignment is over

    def _remove_topic_znodes(self, topic: str) -> Job[None]:
        """Delete the topic's znodes, children first; each state conditional on its
        zk_version. A leader's ISR write in between makes a delete fail: read again, retry."""
        while True:
            (exists,) = yield [Exists(topic_path(topic))]
            self._check_session([exists])
            yield from self._reread_dirs(topic)
            dirs = sorted(self.partition_dirs.get(topic) or ())
            tps = [TopicPartition(topic, p) for p in dirs]
            yield from self._read_states(tps)
            groups: list[tuple[object, tuple[WriteOp, ...]]] = []
            for tp in tps:
                state_delete = (
                    (Delete(state_path(tp), self.states[tp][1]),) if tp in self.states else ()
                )
                groups.append((tp, (*state_delete, Delete(partition_path(tp)))))
            tail: tuple[WriteOp, ...] = ()
            if self.partition_dirs.get(topic) is not None:
                tail += (Delete(partitions_path(topic)),)
            if exists.code == Code.OK:
                tail += (Delete(topic_path(topic)),)
            groups.append((topic, (*tail, Delete(delete_topic_path(topic)))))
            outcomes = yield from self._write(groups)
            if all(result.code == Code.OK for _, result in outcomes):
                return

    # -- IsrChangeNotification (ISR-19) ---------------------------------------------------------------

    def _isr_changes(self) -> Job[None]:
        """Leaders changed ISRs themselves: refresh the cached states (and see whether a
        reassignment's new replicas have joined)."""
        (listing,) = yield [GetChildren(ISR_CHANGE_NOTIFICATION, watch=True)]
        self._check_session([listing])
        paths = [
            f"{ISR_CHANGE_NOTIFICATION}/{name}"
            for name in expect(GetChildrenResult, listing).children
        ]
        if not paths:
            return
        notes = yield [GetData(path) for path in paths]
        self._check_session(notes)
        changed = sorted(
            {
                tp
                for path, note in zip(paths, notes, strict=True)
                if note.code == Code.OK
                for tp in decode_isr_change(path, data_of(note))
            }
        )
        yield from self._read_states([tp for tp in changed if tp.topic in self.assignments])
        yield from self._write([(path, (Delete(path),)) for path in paths])
        if any(tp in self.reassignments for tp in changed):
            yield from self._complete_reassignments()

    # -- Reassign (ISR-10) -----------------------------------------------------------------------

    def _reassign(self) -> Job[None]:
        """Start a reassignment read from /admin/reassign_partitions: the partition's
        replicas become target + current (with KIP-455's adding and removing replicas),
        the leader epoch moves, the new replicas start as followers. It completes when
        the ISR holds every target replica."""
        (request,) = yield [GetData(REASSIGN_PARTITIONS, watch=True)]
        self._check_session([request])
        if request.code != Code.OK:
            return
        targets = decode_reassignment(REASSIGN_PARTITIONS, data_of(request))
        for tp, target in sorted(targets.items()):
            assignment = self.assignments.get(tp.topic)
            if (
                assignment is None
                or tp.partition not in assignment.partitions
                or not target
                or tp in self.reassignments
            ):
                continue
            # The original replicas: a reassignment a former controller started has added some.
            adding = assignment.adding_replicas.get(tp.partition, ())
            original = tuple(r for r in assignment.partitions[tp.partition] if r not in adding)
            full = target + tuple(
                r for r in original if r not in target
            )  # ReplicaAssignment.reassignTo
            self.reassignments[tp] = target
            updated = replace(
                assignment,
                partitions={**assignment.partitions, tp.partition: full},
                adding_replicas={
                    **assignment.adding_replicas,
                    tp.partition: tuple(r for r in full if r not in original),
                },
                removing_replicas={
                    **assignment.removing_replicas,
                    tp.partition: tuple(r for r in full if r not in target),
                },
            )
            yield from self._write_assignment(tp.topic, updated)
            if (
                tp in self.states
            ):  # bump the leader epoch so every replica learns the new replica set
                yield from self._change_leaders([tp], "Reassign", decide=self._bump_epoch)
        yield from self._complete_reassignments()

    def _bump_epoch(self, tp: TopicPartition) -> Decision | None:
        state, zk_version = self.states[tp]
        if state.leader == -1:
            return None
        new = state.next(state.leader, state.isr, self.controller_epoch)
        return new, (SetData(state_path(tp), new.encode(), zk_version),)

    def _write_assignment(self, topic: str, assignment: TopicAssignment) -> Job[None]:
        yield from self._write([(topic, (SetData(topic_path(topic), assignment.encode()),))])
        self.assignments[topic] = assignment

    def _complete_reassignments(self) -> Job[None]:
        """For each reassignment whose targets are all in the ISR: lead from a target,
        drop the removed replicas from the ISR, switch the assignment, stop the old
        replicas; when none is left, delete /admin/reassign_partitions."""
        for tp, target in sorted(self.reassignments.items()):
            state = self.states.get(tp)
            if state is None or not set(target) <= set(state[0].isr):
                continue
            old = self._replicas(tp)
            yield from self._change_leaders([tp], "Reassign", decide=self._finish_decision(target))
            assignment = self.assignments[tp.topic]
            adding = {p: r for p, r in assignment.adding_replicas.items() if p != tp.partition}
            removing = {p: r for p, r in assignment.removing_replicas.items() if p != tp.partition}
            yield from self._write_assignment(
                tp.topic,
                replace(
                    assignment,
                    partitions={**assignment.partitions, tp.partition: target},
                    adding_replicas=adding,
                    removing_replicas=removing,
                ),
            )
            del self.reassignments[tp]
            dropped = [b for b in old if b not in target and b in self.live_brokers]
            for broker in dropped:
                self._effects.append(
                    SendRequest(
                        broker,
                        StopReplica(self.broker_id, self.controller_epoch, (tp,), delete=True),
                    )
                )
        if not self.reassignments:
            (exists,) = yield [Exists(REASSIGN_PARTITIONS)]
            self._check_session([exists])
            if exists.code == Code.OK:
                yield from self._write([(REASSIGN_PARTITIONS, (Delete(REASSIGN_PARTITIONS),))])

    def _finish_decision(self, target: tuple[int, ...]) -> Decide:
        def decide(tp: TopicPartition) -> Decision | None:
            state, zk_version = self.states[tp]
            new = elect_reassigned_leader(target, state, self.live_brokers, self.controller_epoch)
            if new is None:
                return None
            return new, (SetData(state_path(tp), new.encode(), zk_version),)

        return decide
