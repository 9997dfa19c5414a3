"""One broker of the cluster: the replication model and the coordinator host, driven by
real ZooKeeper, real connections and real time.

Every decision is the reference's. :class:`ClusterNode` owns

- ``replica``, a :class:`coordspec.reference.replication.broker.Broker` (ZooKeeper registration,
  controller candidacy, LeaderAndIsr, partitions with logs, HW and ISR changes), whose
  ZooKeeper calls run on the broker's kazoo session (:mod:`coordspec.broker.cluster.zk_session`),
  whose ``SendRequest`` effects go to the other brokers over the wire, and whose followers
  fetch from their leaders over the wire (:mod:`coordspec.broker.cluster.peer_wire`);
- ``host``, a :class:`coordspec.reference.failover.host.CoordinatorHost`: the group coordinator of
  every ``__consumer_offsets`` partition this broker leads. The model's notices become host
  events as in :class:`coordspec.reference.failover.cluster.FailoverCluster` (BecameLeader is
  BecomeCoordinator, LeadershipLost / BecameFollower / ReplicaStopped ResignCoordinator,
  HighWatermarkMoved HighWatermarkUpdated), and the host's appends are produces to the
  model's leader replica, answered once the high watermark passes them; the host's
  requests, replies and timer go through :mod:`coordspec.broker.group_driver` (meanwhile
  a group's next requests wait their turn, :mod:`coordspec.broker.group_turns`);
- ``trace``, the JSONL trace of what its coordinators decide (:mod:`coordspec.broker.cluster.group_trace`).

All of it runs on one asyncio loop; a step (one model or host event) runs to completion,
its logs are written (:mod:`coordspec.broker.cluster.replica_logs`), and the model's timer or
the host's is armed for its earliest deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError

from coordspec.broker.cluster.group_trace import GroupTrace
from coordspec.broker.cluster.peer_wire import ERROR_CODES, ERROR_NAMES, PeerConnection, PeerError
from coordspec.broker.cluster.published import PublishedView
from coordspec.broker.cluster.replica_logs import (
    ReplicaFiles,
    fetch_index,
    index_of,
    kafka_offset,
    split_batches,
    stamped,
)
from coordspec.broker.cluster.zk_session import ZkSession, now_ms
from coordspec.broker.group_driver import GroupDriver
from coordspec.broker.group_image import Image, Resolutions, call_keeping_request
from coordspec.broker.group_turns import commits_only, groups_of
from coordspec.broker.log.batches import read_header
from coordspec.broker.log.group_batches import decode_group_batch, encode_group_batch
from coordspec.broker.trace import Trace
from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.effects import AppendToPartition, LoadPartition
from coordspec.reference.failover.events import (
    AppendFailed,
    BecomeCoordinator,
    HighWatermarkUpdated,
    LoadGroup,
    ResignCoordinator,
)
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.failover.placement import OFFSETS_TOPIC
from coordspec.reference.group import GroupConfig, ResolveRegularExpressions
from coordspec.reference.group.effects import Reply
from coordspec.reference.replication.broker import Broker
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.effects import (
    BecameFollower,
    BecameLeader,
    HighWatermarkMoved,
    LeadershipLost,
    ProduceAccepted,
    ProduceAcked,
    ProduceFailed,
    ReplicaStopped,
    SendRequest,
    ZkCall,
)
from coordspec.reference.replication.events import (
    BrokerTick,
    DeliverRequest,
    Fetch,
    FetchResponse,
    Produce,
)
from coordspec.reference.replication.messages import ControllerRequest
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import (
    TopicAssignment,
    TopicPartition,
    broker_path,
    delete_topic_path,
    topic_path,
)
from coordspec.reference.wire import kafka_uuid

log = logging.getLogger("coordspec.broker.cluster")

FETCH_MAX_WAIT_MS = 500
FETCH_MAX_BYTES = 8 * 1024 * 1024
RETRY_S = 0.2
OFFSETS_TOPIC_WAIT_S = 10.0
_MIN_TIMER_S = 0.05  # a deadline already due (an ISR write in flight) is retried, not spun on


class NodeStartError(Exception):
    """The broker cannot join the cluster; one line."""


@dataclass(frozen=True)
class NodeConfig:
    broker_id: int
    peers: dict[int, tuple[str, int]]  # every broker of the cluster: id -> advertised address
    zookeeper: str
    data_dir: Path
    offsets_partitions: int = 3
    replication: ReplicationConfig = field(default_factory=ReplicationConfig)
    group: GroupConfig = field(default_factory=GroupConfig)
    trace: Path | None = None  # the JSONL trace of the group protocol; None: none
    trace_run: str = "cluster"  # the same for every broker of the cluster
    trace_epoch_ms: int = 0  # the cluster's clock for the trace's t_ms: ms since this instant


@dataclass(frozen=True)
class _Unwritten:
    """A group's write in flight: the batch at ``offset`` of its offsets partition."""

    offset: int
    group_id: str
    commits_only: bool


class ClusterNode:
    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.files = ReplicaFiles(config.data_dir)
        self.replica = Broker(config.broker_id, config.replication, logs=self.files.logs)
        self.host = CoordinatorHost(
            config.broker_id,
            config.offsets_partitions,
            config.group,
            SeededChoices(secrets.randbits(64)),
            now_ms=now_ms(),
        )
        trace = Trace(
            config.trace,
            config.broker_id,
            now_ms(),
            run=config.trace_run,
            epoch_ms=config.trace_epoch_ms,
        )
        self.image = Image(-1, {}, {})  # the topics the host was last given (none yet)
        self._resolutions = Resolutions()
        self.trace = GroupTrace(
            trace,
            self.host,
            config.replication.zookeeper_session_timeout_ms,
            now_ms(),
            lambda: self.image,
        )
        self.zk: ZkSession | None = None
        self.view: PublishedView | None = None
        self.progress = (
            asyncio.Event()
        )  # set (and replaced) when a log grows or a high watermark moves
        self._now = now_ms()
        self._notices: deque = deque()
        self._draining = False
        self._produces: dict[
            tuple[str, int, int], tuple[asyncio.Future, bool]
        ] = {}  # (topic, p, payload id) -> future, acks=all
        self.driver = GroupDriver(self._host, self.host.next_deadline_ms, self.now, self.trace)
        self._unwritten: dict[
            int, list[_Unwritten]
        ] = {}  # offsets partition -> its group writes in flight
        self._fetchers: dict[TopicPartition, asyncio.Task] = {}
        self._channels: dict[int, asyncio.Queue] = {}
        self._tasks: set[asyncio.Task] = set()
        # The replication model's timer; the coordinator host's is the driver's.
        self._timer: asyncio.TimerHandle | None = None
        self._stopping = False

    # -- life ---------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.view = await asyncio.to_thread(PublishedView.open, self.config.zookeeper)
        await self._wait_for_old_registration()
        self.zk = ZkSession(
            self.config.zookeeper,
            self.config.replication.zookeeper_session_timeout_ms,
            self.replicate,
            loop,
        )
        await asyncio.to_thread(self.zk.start)
        self._spawn(self._create_offsets_topic())

    async def stop(self) -> None:
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        self.driver.stop()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.zk is not None:
            await asyncio.to_thread(self.zk.stop)  # its ephemerals go at once: a clean stop
        if self.view is not None:
            await asyncio.to_thread(self.view.close)
        self.trace.close()

    async def _wait_for_old_registration(self) -> None:
        """A broker restarted after a crash finds its old registration until ZooKeeper expires
        the old session; registering over it is refused (Kafka's broker then fails to start).
        Waiting out one session timeout is the restart a supervisor would do."""
        assert self.view is not None
        path = broker_path(self.broker_id)
        patience_s = 2 * self.config.replication.zookeeper_session_timeout_ms / 1000
        deadline = asyncio.get_running_loop().time() + patience_s
        while await asyncio.to_thread(self.view.client.exists, path) is not None:
            if asyncio.get_running_loop().time() > deadline:
                raise NodeStartError(
                    f"{path} is still registered by another session after {patience_s:.0f} s"
                )
            await asyncio.sleep(0.2)

    async def _create_offsets_topic(self) -> None:
        """``__consumer_offsets`` with replicas spread round-robin (Kafka's assignment), at
        most 3 per partition, written once by whichever broker comes first. It waits (a
        while) for every broker to register: the controller elects the first live replica
        of each partition, so the leaders, and the groups, spread over the brokers."""
        assert self.view is not None
        ids = sorted(self.config.peers)
        deadline = asyncio.get_running_loop().time() + OFFSETS_TOPIC_WAIT_S
        while (
            not self.view.live_brokers >= set(ids) and asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.05)
        factor = min(3, len(ids))
        assignment = {
            p: tuple(ids[(p + i) % len(ids)] for i in range(factor))
            for p in range(self.config.offsets_partitions)
        }
        await asyncio.to_thread(self.create_topic, OFFSETS_TOPIC, assignment, uuid.uuid4())

    def create_topic(
        self, topic: str, assignment: dict[int, tuple[int, ...]], topic_id: uuid.UUID
    ) -> bool | str:
        """Write the topic's assignment with its new id, as AdminZkClient does in Kafka 2.8+
        (the controller's child watch does the rest): True, False if it exists, or what
        ZooKeeper said instead."""
        assert self.view is not None
        try:
            self.view.client.create(
                topic_path(topic), TopicAssignment.of(assignment, topic_id).encode(), makepath=True
            )
        except NodeExistsError:
            return False
        except KazooException as e:
            return f"ZooKeeper did not create the topic: {type(e).__name__}"
        return True

    def grow_topic(
        self, topic: str, grow: Callable[[TopicAssignment], TopicAssignment], write: bool
    ) -> bool | str:
        """AdminZkClient.createPartitionsWithAssignment: the topic's assignment replaced by
        ``grow`` of it (which raises to refuse), by a setData on the version read (read and
        grown again if another write came first); the controller's data watch does the
        rest. True; False if the topic does not exist; or what ZooKeeper said instead."""
        assert self.view is not None
        path = topic_path(topic)
        try:
            while True:
                if self.view.client.exists(path) is None:
                    return False
                data, stat = self.view.client.get(path)
                grown = grow(TopicAssignment.decode(path, data))
                if not write:
                    return True
                with contextlib.suppress(BadVersionError):
                    self.view.client.set(path, grown.encode(), version=stat.version)
                    return True
        except KazooException as e:
            return f"ZooKeeper did not take the new partitions: {type(e).__name__}"

    def queued_for_deletion(self, topic: str) -> bool:
        """Marked under /admin/delete_topics (False too if ZooKeeper cannot say: the write
        that follows reports it)."""
        assert self.view is not None
        with contextlib.suppress(KazooException):
            return self.view.client.exists(delete_topic_path(topic)) is not None
        return False

    def mark_for_deletion(self, topic: str) -> bool | str:
        """Kafka's AdminZkClient.deleteTopic: /admin/delete_topics/<topic> (the controller's
        child watch does the rest). True, also if already marked; False if the topic does
        not exist; or what ZooKeeper said instead."""
        assert self.view is not None
        try:
            if self.view.client.exists(topic_path(topic)) is None:
                return False
            self.view.client.create(delete_topic_path(topic), makepath=True)
        except NodeExistsError:
            return True
        except KazooException as e:
            return f"ZooKeeper did not mark the topic for deletion: {type(e).__name__}"
        return True

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:  # a bug: say so now, not at exit
            log.error(
                "broker %d: %s failed",
                self.broker_id,
                task.get_coro().__name__,
                exc_info=task.exception(),
            )

    def now(self) -> int:
        self._now = max(self._now, now_ms())
        return self._now

    # -- the replication model ------------------------------------------------------------

    def replicate(self, event) -> list:
        """One step of the replication model; its effects, after they were carried out."""
        if self._stopping:
            return []
        effects = self.replica.handle(event)
        self.files.sync()
        self._carry_out(effects)
        return effects

    def _carry_out(self, effects: list) -> None:
        for effect in effects:
            if isinstance(effect, ZkCall):
                assert self.zk is not None
                self.zk.run(effect)
            elif isinstance(effect, SendRequest):
                self._send_controller_request(effect.broker_id, effect.request)
        self._notices.extend(
            e for e in effects if not isinstance(e, (ZkCall, SendRequest, FetchResponse))
        )
        if not self._draining:
            self._draining = True
            try:
                while self._notices:
                    self._notice(self._notices.popleft())
            finally:
                self._draining = False
        self._arm_timer()

    def _notice(self, effect) -> None:
        if isinstance(effect, (ProduceAccepted, HighWatermarkMoved, LeadershipLost)):
            self.progress.set()
            self.progress = asyncio.Event()
        if isinstance(effect, BecameFollower):
            self._follow(TopicPartition(effect.topic, effect.partition))
        if isinstance(effect, (ProduceAccepted, ProduceAcked, ProduceFailed)):
            waiting = self._produces.get((effect.topic, effect.partition, effect.payload_id))
            if waiting is not None and (
                isinstance(effect, ProduceFailed) or isinstance(effect, ProduceAcked) == waiting[1]
            ):
                del self._produces[(effect.topic, effect.partition, effect.payload_id)]
                if not waiting[0].done():
                    waiting[0].set_result(effect)
        if getattr(effect, "topic", None) == OFFSETS_TOPIC:
            self._coordinator_notice(effect)

    def _coordinator_notice(self, effect) -> None:
        """The notices about offsets partitions, as host events (FailoverCluster's mapping)."""
        partition, now = effect.partition, self.now()
        if isinstance(effect, BecameLeader):
            self.trace.became(partition, now)
            self._host(BecomeCoordinator(partition, effect.leader_epoch, now))
        elif isinstance(effect, LeadershipLost):
            if not self._reelected(partition):
                self._host(ResignCoordinator(partition, None, now))
        elif isinstance(effect, BecameFollower):
            self._host(ResignCoordinator(partition, effect.leader_epoch, now))
        elif isinstance(effect, ReplicaStopped):
            self._host(ResignCoordinator(partition, None, now))
        elif isinstance(effect, HighWatermarkMoved):
            self._host(HighWatermarkUpdated(partition, effect.high_watermark, now))

    def _reelected(self, partition: int) -> bool:
        """A leader re-elected at a newer epoch sees LeadershipLost, then BecameLeader, at once."""
        for effect in self._notices:
            if (
                getattr(effect, "topic", None) == OFFSETS_TOPIC
                and effect.partition == partition
                and isinstance(effect, (BecameLeader, LeadershipLost, BecameFollower))
            ):
                return isinstance(effect, BecameLeader)
        return False

    def _arm_timer(self) -> None:
        """The replication model's timer, armed again after each of its steps. The coordinator
        host's timer is the driver's: replication's steps, many a second, leave it alone."""
        if self._stopping:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.replica.next_deadline_ms()
        if deadline is not None:
            delay = max(_MIN_TIMER_S, (deadline - self.now()) / 1000)
            self._timer = asyncio.get_running_loop().call_later(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        try:
            self.replicate(BrokerTick(self.now()))
        except Exception:  # a bug in a timer's step: log it and keep serving
            log.exception("broker %d failed on a timer", self.broker_id)
        self._arm_timer()

    # -- the controller's requests -------------------------------------------------------

    def _send_controller_request(self, target: int, request: ControllerRequest) -> None:
        if target == self.broker_id:
            asyncio.get_running_loop().call_soon(
                lambda: self.replicate(DeliverRequest(self.now(), request))
            )
            return
        queue = self._channels.get(target)
        if queue is None:
            queue = self._channels[target] = asyncio.Queue()
            self._spawn(self._channel(target, queue))
        queue.put_nowait(request)

    def _still_sending(self, target: int, request: ControllerRequest) -> bool:
        """Kafka's controller keeps a request for a broker until it answers or is removed."""
        controller = self.replica.controller
        return (
            controller.active
            and controller.controller_epoch == request.controller_epoch
            and target in controller.live_brokers
        )

    async def _channel(self, target: int, queue: asyncio.Queue) -> None:
        """Requests to one broker, in order, each retried while it still matters."""
        host, port = self.config.peers[target]
        connection = PeerConnection(host, port, f"controller-{self.broker_id}")
        try:
            while True:
                request = await queue.get()
                while self._still_sending(target, request):
                    try:
                        await connection.controller_request(request)
                        break
                    except PeerError as e:
                        log.info("controller %d: %s", self.broker_id, e)
                        await asyncio.sleep(RETRY_S)
        finally:
            connection.close()

    def deliver(self, request: ControllerRequest) -> None:
        """A controller's request arrived over the wire."""
        self.replicate(DeliverRequest(self.now(), request))

    # -- followers: fetching from leaders ------------------------------------------------

    def _follow(self, tp: TopicPartition) -> None:
        task = self._fetchers.get(tp)
        if task is None or task.done():
            self._fetchers[tp] = self._spawn(self._fetcher(tp))

    async def _fetcher(self, tp: TopicPartition) -> None:
        """Kafka's replica fetcher for one partition: fetch from the leader this broker follows,
        hand each answer to the model, until it no longer follows anyone."""
        connections: dict[int, PeerConnection] = {}
        try:
            while not self._stopping:
                partition = self.replica.partitions.get(tp)
                fetch = self.replica.fetch_request(self.now(), tp)
                if fetch is None or partition is None:
                    return
                leader = partition.leader
                connection = connections.get(leader)
                if connection is None:
                    host, port = self.config.peers[leader]
                    connection = connections[leader] = PeerConnection(
                        host, port, f"replica-{self.broker_id}"
                    )
                try:
                    response = await self._fetch_from(connection, leader, fetch)
                except PeerError:
                    await asyncio.sleep(RETRY_S)
                    continue
                self.replicate(response)
                if response.error:
                    await asyncio.sleep(
                        RETRY_S
                    )  # the leader has not applied its LeaderAndIsr yet, or moved on
        finally:
            for connection in connections.values():
                connection.close()
            if self._fetchers.get(tp) is asyncio.current_task():
                del self._fetchers[tp]

    async def _fetch_from(
        self, connection: PeerConnection, leader: int, fetch: Fetch
    ) -> FetchResponse:
        replica_log = self.files.logs[TopicPartition(fetch.topic, fetch.partition)]
        partition = {
            "partition": fetch.partition,
            "current_leader_epoch": fetch.leader_epoch,
            "fetch_offset": kafka_offset(replica_log, fetch.fetch_offset),
            "last_fetched_epoch": fetch.last_fetched_epoch,
            "log_start_offset": 0,
            "partition_max_bytes": FETCH_MAX_BYTES,
        }
        body = await connection.request(
            1,
            12,
            {
                "replica_id": self.broker_id,
                "max_wait": FETCH_MAX_WAIT_MS,
                "min_bytes": 1,
                "max_bytes": FETCH_MAX_BYTES,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": fetch.topic, "partitions": [partition]}],
            },
            timeout_s=FETCH_MAX_WAIT_MS / 1000 + 5,
        )
        answer = body.responses[0].partitions[0]
        error = (
            ERROR_NAMES.get(int(answer.error_code), f"ERROR_{int(answer.error_code)}")
            if int(answer.error_code)
            else None
        )
        diverging = None
        if not (answer.diverging_epoch.epoch == -1 and answer.diverging_epoch.end_offset == -1):
            diverging = (
                answer.diverging_epoch.epoch,
                index_of(replica_log, answer.diverging_epoch.end_offset),
            )
        records = tuple(split_batches(answer.records or b""))
        # The HW in model indices: batches before it, counting the ones this answer brings.
        hw = answer.high_watermark
        hw_index = index_of(replica_log, hw) + sum(1 for r in records if r.payload_id < hw)
        return FetchResponse(
            self.now(),
            leader,
            fetch.topic,
            fetch.partition,
            fetch.leader_epoch,
            error,
            diverging,
            fetch.fetch_offset,
            records,
            hw_index,
        )

    # -- leaders: serving replica fetches --------------------------------------------------

    async def serve_replica_fetch(
        self,
        replica_id: int,
        topic: str,
        number: int,
        leader_epoch: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        max_wait_ms: int,
        max_bytes: int,
    ) -> dict[str, Any]:
        """A follower's Fetch: served by the model at once (it learns the follower's LEO),
        and once more after waiting for the log to grow when there was nothing new."""
        tp = TopicPartition(topic, number)
        deadline = asyncio.get_running_loop().time() + max_wait_ms / 1000
        while True:
            replica_log = self.files.logs.get(tp)
            index = fetch_index(replica_log, fetch_offset) if replica_log is not None else 0
            progress = self.progress
            effects = self.replicate(
                Fetch(
                    self.now(), replica_id, topic, number, leader_epoch, index, last_fetched_epoch
                )
            )
            response = next(e for e in effects if isinstance(e, FetchResponse))
            remaining = deadline - asyncio.get_running_loop().time()
            if response.error or response.diverging or response.records or remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(progress.wait(), remaining)
        answer: dict[str, Any] = {
            "partition_index": number,
            "error_code": ERROR_CODES.get(response.error, 0) if response.error else 0,
            "high_watermark": -1,
            "records": b"",
        }
        if replica_log is None or response.error:
            return answer
        answer["high_watermark"] = kafka_offset(replica_log, response.high_watermark)
        answer["log_start_offset"] = 0
        if response.diverging is not None:
            epoch, end = response.diverging
            answer["diverging_epoch"] = {
                "epoch": epoch,
                "end_offset": kafka_offset(replica_log, end),
            }
            return answer
        answer["records"] = _take(response.records, max_bytes)
        return answer

    # -- clients: produce and fetch on leaders -------------------------------------------

    def leader_log(self, tp: TopicPartition):
        """The log of a partition this broker leads, else None."""
        return self.files.logs.get(tp) if self.replica.leads(tp) else None

    async def produce(
        self, tp: TopicPartition, batch: bytes, acks: int
    ) -> ProduceAccepted | ProduceAcked | ProduceFailed:
        """Append a producer's batch on this leader; with acks=-1 wait until it is committed."""
        replica_log = self.files.logs.get(tp)
        partition = self.replica.partitions.get(tp)
        if replica_log is None or partition is None or partition.role != Role.LEADER:
            return ProduceFailed(tp.topic, tp.partition, -1, "NOT_LEADER_OR_FOLLOWER")
        record = stamped(
            batch, kafka_offset(replica_log, replica_log.log_end_offset), partition.leader_epoch
        )
        future = asyncio.get_running_loop().create_future()
        self._produces[(tp.topic, tp.partition, record.payload_id)] = (future, acks == -1)
        try:
            if acks == -1:
                self.replicate(
                    Produce(self.now(), tp.topic, tp.partition, record.payload_id, record.value)
                )
            else:
                self._append_without_min_insync(partition, record)
            return await future
        finally:
            self._produces.pop((tp.topic, tp.partition, record.payload_id), None)

    def _append_without_min_insync(self, partition, record) -> None:
        """The model's Produce is acks=all; Kafka checks min.insync.replicas for acks=all only
        (Partition.appendRecordsToLeader), so acks=0/1 appends to the leader's log whatever
        its ISR. The high watermark this append may move is the one the model computes: it
        moves here only when the leader is alone in its ISR, with no acks=all record pending."""
        if self._stopping:
            return
        effects = partition.append(record.payload_id, record.value, 1)
        self.files.sync()
        self._carry_out(effects)

    # -- the coordinator host ------------------------------------------------------------

    async def call(self, client: str, make: Callable[[int, int], Any]) -> Any:
        """A group request built by ``make(request_id, now_ms)``; its response (coordspec.broker.apis.groups)."""
        self._refresh_image()
        request, response = await call_keeping_request(self.driver, client, make)
        if request.api == "ConsumerGroupHeartbeat":
            self._maybe_resolve(request.group_id)
        return response

    def _refresh_image(self) -> None:
        """CF-14, CG-70: the topics ZooKeeper publishes, given to the host when they changed.
        A topic whose znode has no id (written before Kafka 2.8) cannot be named by id, as
        KIP-848 clients name topics: it is left out, as if it did not exist."""
        view = self.view
        if view is None or view.topics_version == self.image.version:
            return
        version, assignments, ids = view.topics_version, view.assignments, view.topic_ids
        named = [t for t in assignments if t in ids]
        self.image = Image(
            version,
            {t: len(assignments[t]) for t in named},
            {t: kafka_uuid.to_text(ids[t]) for t in named},
        )
        self._host(self.image.event(self.now()))

    def _maybe_resolve(self, group_id: str) -> None:
        """CG-68, as the single broker: the group's coordinator here resolves its regexes."""
        coordinator = self.host.serving(self.host.partition_for(group_id))
        if self._resolutions.due(coordinator, group_id, self.image):
            now = self.now()
            self.trace.resolved(now, group_id)
            self._host(ResolveRegularExpressions(group_id, now))

    def _host(self, event) -> None:
        refused: set[int] = set()  # partitions whose earlier append of this step the log refused
        for effect in self.host.handle(event):
            if isinstance(effect, Reply):
                self.driver.reply(event.now_ms, effect, isinstance(event, ResignCoordinator))
            elif isinstance(effect, LoadPartition):
                asyncio.get_running_loop().call_soon(self._load, effect.partition)
            elif effect.partition not in refused:
                self._writing(effect)
                if not self._append(effect):
                    refused.add(effect.partition)
        if isinstance(event, HighWatermarkUpdated):
            self._written(event.partition, lambda w: w.offset < event.high_watermark)
        elif isinstance(event, AppendFailed):  # that write and every later one failed
            self._written(event.partition, lambda w: w.offset >= event.offset)
        elif isinstance(event, ResignCoordinator):
            self._written(event.partition, lambda w: True)
            self.trace.resigned(event.partition)
        self.driver.arm_timer()

    def _writing(self, append: AppendToPartition) -> None:
        """The groups of ``append`` take turns with it (coordspec.broker.group_turns) until it ends."""
        commits = commits_only(append.records)
        for group_id in groups_of(append.records):
            self._unwritten.setdefault(append.partition, []).append(
                _Unwritten(append.offset, group_id, commits)
            )
            self.driver.turns.writing(group_id, commits)

    def _written(self, partition: int, ended: Callable[[_Unwritten], bool]) -> None:
        pending = self._unwritten.get(partition, [])
        self._unwritten[partition] = [w for w in pending if not ended(w)]
        for write in pending:
            if ended(write):
                self.driver.turns.written(write.group_id, write.commits_only)

    def _append(self, append: AppendToPartition) -> bool:
        """The host's batch as a produce to the leader replica; False if the log refused it."""
        tp = TopicPartition(OFFSETS_TOPIC, append.partition)
        replica_log = self.files.logs.get(tp)
        base = (
            kafka_offset(replica_log, replica_log.log_end_offset) if replica_log is not None else 0
        )
        record = stamped(encode_group_batch(append.records, self.now()), base, append.leader_epoch)
        effects = self.replica.handle(
            Produce(self.now(), tp.topic, tp.partition, record.payload_id, record.value)
        )
        self.files.sync()
        outcome = next(e for e in effects if isinstance(e, (ProduceAccepted, ProduceFailed)))
        if isinstance(outcome, ProduceAccepted) and outcome.offset != append.offset:
            raise AssertionError(
                f"broker {self.broker_id}: the host expected offset {append.offset} of {tp}, the log appended at {outcome.offset}"
            )
        if isinstance(outcome, ProduceFailed):
            error = ErrorCode.__members__.get(outcome.error, ErrorCode.NOT_COORDINATOR)
            self._host(AppendFailed(append.partition, append.offset, error, self.now()))
        # The notices wait their turn behind the ones being handed out now (the outcome too:
        # it wakes the followers' fetches waiting for the log to grow).
        self._carry_out(effects)
        return isinstance(outcome, ProduceAccepted)

    def _load(self, number: int) -> None:
        """CF-4: read the partition's log back and hand it to the host (LOAD_IN_PROGRESS until then)."""
        tp = TopicPartition(OFFSETS_TOPIC, number)
        partition = self.replica.partitions.get(tp)
        if self._stopping or partition is None or partition.role != Role.LEADER:
            return  # leadership went meanwhile; the host heard ResignCoordinator
        replica_log = self.files.logs[tp]
        batches = tuple(decode_group_batch(r.value) for r in replica_log.records)
        self._refresh_image()  # the new coordinator starts with the current topics
        now = self.now()
        self._host(
            LoadGroup(number, partition.leader_epoch, batches, replica_log.high_watermark, now)
        )
        last = read_header(replica_log.records[-1].value) if replica_log.records else None
        self.trace.loaded(number, now, last.max_timestamp if last is not None else 0)


def _take(records, max_bytes: int) -> bytes:
    """Whole batches up to ``max_bytes``, at least one (KIP-74)."""
    out, total = [], 0
    for record in records:
        if out and total + len(record.value) > max_bytes:
            break
        out.append(record.value)
        total += len(record.value)
    return b"".join(out)
