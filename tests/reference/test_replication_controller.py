"""The controller alone on the ZooKeeper model, driven as a real driver would drive it
(benchmarks/failover_10k.py does the same on a real ZooKeeper): election with the epoch,
batched and one-at-a-time writes, a multi that fails part-way, a stale controller."""

from __future__ import annotations

from collections import deque

from coordspec.reference.replication.batching import (
    DEFAULT_MULTI_BYTE_BUDGET,
    JUTE_MAXBUFFER,
    max_ops_per_multi,
    multi_bytes,
    op_bytes,
)
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import (
    LeadersChanged,
    ResignedController,
    SendRequest,
    ZkCall,
)
from coordspec.reference.replication.events import ControllerStartup, ZkResult, ZkWatch
from coordspec.reference.replication.messages import LeaderAndIsr
from coordspec.reference.replication.znodes import (
    BROKER_IDS,
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    PERSISTENT_PATHS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    broker_path,
    delete_topic_path,
    partition_path,
    partitions_path,
    state_path,
    topic_path,
)
from coordspec.reference.zookeeper import (
    Check,
    CloseSession,
    Code,
    Create,
    Delete,
    EventType,
    GetData,
    Multi,
    OpenSession,
    Reply,
    Request,
    SetData,
    WatchFired,
    ZooKeeperConfig,
    ZooKeeperServer,
)

ADMIN = 1


class Driver:
    """Runs a controller's ZooKeeper calls on the model, one session per controller."""

    def __init__(self) -> None:
        self.zk = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=500))
        self.zk.handle(OpenSession(0, ADMIN, 4000))
        for path in PERSISTENT_PATHS:
            self.admin(Create(path))
        self.ops: list[tuple[int, object]] = []  # (session, op) in the order run
        self.watches: dict[int, list[WatchFired]] = {}
        self.rounds: list[int] = []  # how many writes (multis) each handle emitted

    def admin(self, op):
        return self.request(ADMIN, op)

    def request(self, session: int, op):
        effects = self.zk.handle(Request(0, session, op))
        for effect in effects:
            if isinstance(effect, WatchFired):
                self.watches.setdefault(effect.session_id, []).append(effect)
        return next(e.result for e in effects if isinstance(e, Reply))

    def open(self, session: int) -> None:
        self.zk.handle(OpenSession(0, session, 4000))

    def run(self, controller: Controller, session: int, event, interfere=None) -> list:
        """Feed ``event``, then run every call until the controller is quiet; the other
        effects, in order. ``interfere(op)`` runs before each call (another writer)."""
        out = []
        pending = deque([controller.handle(event)])
        while pending:
            effects = pending.popleft()
            self.rounds.append(
                sum(isinstance(e, ZkCall) and isinstance(e.op, Multi) for e in effects)
            )
            for effect in effects:
                if not isinstance(effect, ZkCall):
                    out.append(effect)
                    continue
                if interfere is not None:
                    interfere(effect.op)
                self.ops.append((session, effect.op))
                pending.append(
                    controller.handle(ZkResult(0, effect.call_id, self.request(session, effect.op)))
                )
        return out

    def register(self, broker_id: int) -> None:
        self.open(100 + broker_id)
        assert (
            self.request(
                100 + broker_id, Create(broker_path(broker_id), b"{}", ephemeral=True)
            ).code
            == Code.OK
        )

    def kill(self, broker_id: int) -> None:
        for effect in self.zk.handle(CloseSession(0, 100 + broker_id)):
            if isinstance(effect, WatchFired):
                self.watches.setdefault(effect.session_id, []).append(effect)

    def seed_topic(self, topic: str, partitions: int, replicas) -> None:
        """A topic whose states a controller published earlier (leader = first replica)."""
        assignment = {p: replicas(p) for p in range(partitions)}
        self.admin(Create(topic_path(topic), TopicAssignment.of(assignment).encode()))
        self.admin(Create(partitions_path(topic)))
        for p, r in assignment.items():
            tp = TopicPartition(topic, p)
            self.admin(Create(partition_path(tp)))
            self.admin(Create(state_path(tp), PartitionState(r[0], 0, tuple(r), 0).encode()))

    def state(self, tp: TopicPartition) -> tuple[PartitionState, int]:
        node = self.zk.tree.node(state_path(tp))
        return PartitionState.decode(state_path(tp), node.data), node.version


def rf3(p: int) -> tuple[int, ...]:
    return tuple((p + i) % 3 + 1 for i in range(3))


def elected(
    driver: Driver, broker_id: int, config: ReplicationConfig, out: list | None = None
) -> Controller:
    """A controller on session 10 + broker_id, elected; its other effects go to ``out``."""
    driver.open(10 + broker_id)
    controller = Controller(broker_id, config)
    effects = driver.run(controller, 10 + broker_id, ControllerStartup(0))
    assert controller.active and controller.idle
    if out is not None:
        out += effects
    return controller


def test_election_is_one_multi_creating_the_controller_znode_and_bumping_the_epoch():
    driver = Driver()
    first = elected(driver, 1, ReplicationConfig())
    claims = [op for _, op in driver.ops if isinstance(op, Multi)]
    assert len(claims) == 1
    create, bump = claims[0].ops
    assert (
        create == Create(CONTROLLER, create.data, ephemeral=True) and b'"brokerid":1' in create.data
    )
    assert bump == SetData(CONTROLLER_EPOCH, b"1", 0), (
        "conditional on the /controller_epoch version read"
    )
    assert (first.controller_epoch, first.epoch_zk_version) == (1, 1)
    driver.open(12)
    second = Controller(2, ReplicationConfig())
    driver.run(second, 12, ControllerStartup(0))
    assert not second.active, "a broker that finds /controller waits for its watch"


def test_a_new_controller_bumps_the_epoch_and_resends_every_published_decision():
    driver = Driver()
    for b in (1, 2, 3):
        driver.register(b)
    driver.seed_topic("t", 30, rf3)
    controller = elected(driver, 1, ReplicationConfig())
    sent = [
        e
        for e in driver.run(controller, 11, ZkWatch(0, BROKER_IDS, EventType.NodeChildrenChanged))
        if isinstance(e, SendRequest)
    ]
    assert not sent, "nothing changed"
    driver.zk.handle(CloseSession(0, 11))  # the controller's session ends
    out: list = []
    successor = elected(driver, 2, ReplicationConfig(), out)
    assert successor.controller_epoch == 2
    resent = {
        (r.broker_id, d.partition, d.leader_epoch)
        for r in out
        if isinstance(r, SendRequest)
        for d in r.request.partitions
    }
    assert resent == {(b, p, 0) for p in range(30) for b in (1, 2, 3)}, (
        "every decision, to every live replica"
    )
    assert all(r.request.controller_epoch == 2 for r in out if isinstance(r, SendRequest))


def _failover(batch_writes: bool, budget: int = DEFAULT_MULTI_BYTE_BUDGET, partitions: int = 1500):
    driver = Driver()
    for b in (1, 2, 3):
        driver.register(b)
    driver.seed_topic("t", partitions, rf3)
    controller = elected(
        driver, 1, ReplicationConfig(batch_writes=batch_writes, multi_byte_budget=budget)
    )
    driver.ops.clear()
    driver.rounds.clear()
    driver.kill(3)
    (watch,) = [w for w in driver.watches[11] if w.path == BROKER_IDS]
    out = driver.run(controller, 11, ZkWatch(0, watch.path, watch.type))
    return driver, controller, out


def test_a_failover_writes_every_decision_in_a_few_multis_under_the_byte_budget():
    budget = 64 * 1024
    driver, controller, out = _failover(batch_writes=True, budget=budget)
    writes = [op for _, op in driver.ops if isinstance(op, Multi)]
    sets = [o for m in writes for o in m.ops if isinstance(o, SetData)]
    assert len(sets) == 1500, "every partition has broker 3 as a replica: each changes once"
    assert all(m.ops[0] == Check(CONTROLLER_EPOCH, controller.epoch_zk_version) for m in writes)
    assert all(multi_bytes(m.ops) <= budget for m in writes)
    per_multi = max_ops_per_multi(budget)
    assert len(writes) == -(-1500 // min(per_multi, len(writes[0].ops) - 1)), (
        "packed full, not one request per partition"
    )
    assert 1 < len(writes) < 10
    assert max(driver.rounds) == len(writes), "all multis of the round go out together"
    done = [e for e in out if isinstance(e, LeadersChanged)]
    assert done == [LeadersChanged("BrokerChange", 1500, len(writes))]
    assert out[-1] == done[0], (
        "the notice comes after the last write's result and the LeaderAndIsr requests"
    )
    for p in (0, 1, 2, 1499):
        state, version = driver.state(TopicPartition("t", p))
        assert (
            3 not in state.isr
            and state.leader in state.isr
            and state.leader_epoch == 1
            and version == 1
        )


def test_leader_and_isr_goes_out_once_per_broker_listing_all_its_partitions():
    _, controller, out = _failover(batch_writes=True)
    requests = [e for e in out if isinstance(e, SendRequest)]
    assert sorted(r.broker_id for r in requests) == [1, 2]
    assert all(
        isinstance(r.request, LeaderAndIsr) and len(r.request.partitions) == 1500 for r in requests
    )
    assert all(r.request.controller_epoch == controller.controller_epoch for r in requests)


def test_one_at_a_time_mode_writes_one_partition_per_multi_each_after_the_last_result():
    driver, _, out = _failover(batch_writes=False, partitions=300)
    writes = [op for _, op in driver.ops if isinstance(op, Multi)]
    assert len(writes) == 300
    assert all(
        len(m.ops) == 2 and isinstance(m.ops[0], Check) and isinstance(m.ops[1], SetData)
        for m in writes
    )
    assert max(driver.rounds) == 1, "never more than one write in flight"
    assert [e for e in out if isinstance(e, LeadersChanged)] == [
        LeadersChanged("BrokerChange", 300, 300)
    ]


def test_a_multi_that_meets_a_newer_version_is_reread_recomputed_and_retried():
    driver = Driver()
    for b in (1, 2, 3):
        driver.register(b)
    driver.seed_topic("t", 20, rf3)
    controller = elected(driver, 1, ReplicationConfig())
    victim = TopicPartition("t", 7)  # replicas (2, 3, 1): leader 2
    interfered = []

    def leader_shrinks_isr_first(op) -> None:
        if isinstance(op, Multi) and not interfered and any(isinstance(o, SetData) for o in op.ops):
            state, version = driver.state(victim)
            interfered.append(
                driver.admin(SetData(state_path(victim), state.with_isr((2, 3)).encode(), version))
            )

    driver.kill(3)
    driver.ops.clear()
    out = driver.run(
        controller,
        11,
        ZkWatch(0, BROKER_IDS, EventType.NodeChildrenChanged),
        interfere=leader_shrinks_isr_first,
    )
    assert interfered and interfered[0].code == Code.OK
    multis = [op for _, op in driver.ops if isinstance(op, Multi)]
    first_failed_keys = {o.path for o in multis[0].ops if isinstance(o, SetData)}
    assert state_path(victim) in first_failed_keys
    rereads = [op.path for _, op in driver.ops if isinstance(op, GetData)]
    assert sorted(rereads) == sorted(first_failed_keys), (
        "the partitions of the failed multi are read again"
    )
    assert driver.state(victim) == (PartitionState(2, 1, (2,), 1), 2), (
        "recomputed from the leader's ISR: 3 leaves, 1 stays out"
    )
    assert [e for e in out if isinstance(e, LeadersChanged)] == [
        LeadersChanged("BrokerChange", 20, 2)
    ]


def test_a_stale_controller_fails_its_epoch_check_resigns_and_changes_nothing():
    driver = Driver()
    for b in (1, 2, 3):
        driver.register(b)
    driver.seed_topic("t", 6, rf3)
    stale = elected(driver, 10, ReplicationConfig())
    driver.zk.handle(CloseSession(0, 20))  # its session ends; it has not heard yet (a GC pause)
    newer = elected(driver, 11, ReplicationConfig())
    assert newer.controller_epoch == stale.controller_epoch + 1
    before = {p: driver.state(TopicPartition("t", p)) for p in range(6)}
    driver.open(50)  # the stale controller's handle reconnected on a new session
    driver.kill(3)
    out = driver.run(stale, 50, ZkWatch(0, BROKER_IDS, EventType.NodeChildrenChanged))
    assert [e for e in out if isinstance(e, ResignedController)] == [
        ResignedController(1, "controller epoch moved on")
    ]
    assert not stale.active
    assert not [e for e in out if isinstance(e, SendRequest)], (
        "a controller that resigned sends no decision"
    )
    assert {p: driver.state(TopicPartition("t", p)) for p in range(6)} == before


def test_a_topic_delete_that_meets_a_leaders_isr_write_reads_again_and_retries():
    """ISR-9: the state znodes go by versioned deletes, so a leader's ISR write landing
    between the controller's read and its delete fails the delete, not the ISR write."""
    driver = Driver()
    for b in (1, 2, 3):
        driver.register(b)
    driver.seed_topic("t", 3, rf3)
    controller = elected(driver, 1, ReplicationConfig())
    victim = TopicPartition("t", 1)  # replicas (2, 3, 1): leader 2
    interfered = []

    def leader_shrinks_isr_first(op) -> None:
        deletes_state = isinstance(op, Multi) and any(
            isinstance(o, Delete) and o.path == state_path(victim) for o in op.ops
        )
        if deletes_state and not interfered:
            state, version = driver.state(victim)
            interfered.append(
                driver.admin(SetData(state_path(victim), state.with_isr((2, 3)).encode(), version))
            )

    driver.admin(Create(delete_topic_path("t")))
    driver.ops.clear()
    out = driver.run(
        controller,
        11,
        ZkWatch(0, DELETE_TOPICS, EventType.NodeChildrenChanged),
        interfere=leader_shrinks_isr_first,
    )
    assert interfered and interfered[0].code == Code.OK, "the leader's write is not fenced"
    victim_deletes = [
        o.version
        for _, op in driver.ops
        if isinstance(op, Multi)
        for o in op.ops
        if isinstance(o, Delete) and o.path == state_path(victim)
    ]
    assert victim_deletes == [0, 1], "the stale delete failed; the retry names the new version"
    assert all(
        isinstance(o, Delete) and o.version >= 0
        for _, op in driver.ops
        if isinstance(op, Multi)
        for o in op.ops
        if isinstance(o, Delete) and "/state" in o.path
    )
    for path in (topic_path("t"), partitions_path("t"), delete_topic_path("t")):
        assert driver.zk.tree.node(path) is None, path
    stops = sorted(e.broker_id for e in out if isinstance(e, SendRequest))
    assert stops == [1, 2, 3], "StopReplica(delete) once to each live replica, before the retry"
    assert controller.idle and "t" not in controller.assignments


def test_added_partitions_reach_the_controller_by_its_data_watch_on_the_topic():
    """ISR-20: the controller watches each topic's assignment; a rewrite listing new
    partitions starts those alone (InitLeaders), one that adds none writes nothing."""
    driver = Driver()
    for b in (1, 2, 3):
        driver.register(b)
    driver.seed_topic("t", 2, rf3)
    controller = elected(driver, 1, ReplicationConfig())
    grown = TopicAssignment.of({p: rf3(p) for p in range(3)})
    driver.watches.clear()
    assert driver.admin(SetData(topic_path("t"), grown.encode(), 0)).code == Code.OK
    (fired,) = driver.watches.pop(11)
    assert (fired.path, fired.type) == (topic_path("t"), EventType.NodeDataChanged)
    driver.ops.clear()
    out = driver.run(controller, 11, ZkWatch(0, fired.path, fired.type))
    new = TopicPartition("t", 2)
    (multi,) = [op for _, op in driver.ops if isinstance(op, Multi)]
    assert [type(o) for o in multi.ops] == [Check, Create, Create]
    assert [o.path for o in multi.ops[1:]] == [partition_path(new), state_path(new)]
    assert driver.state(new) == (PartitionState(3, 0, (3, 1, 2), controller.controller_epoch), 0)
    requests = [e.request for e in out if isinstance(e, SendRequest)]
    assert sorted(e.broker_id for e in out if isinstance(e, SendRequest)) == [1, 2, 3]
    assert {(p.topic, p.partition) for r in requests for p in r.partitions} == {("t", 2)}
    assert controller.assignments["t"].partitions == grown.partitions
    # The watch was set again: a rewrite that adds nothing is read and left alone.
    assert driver.admin(SetData(topic_path("t"), grown.encode(), 1)).code == Code.OK
    (again,) = driver.watches.pop(11)
    driver.ops.clear()
    assert driver.run(controller, 11, ZkWatch(0, again.path, again.type)) == []
    assert [type(op) for _, op in driver.ops] == [GetData] and controller.idle


def test_the_byte_budget_keeps_a_10k_failover_in_three_multis_under_jute_maxbuffer():
    op = SetData(
        "/brokers/topics/t/partitions/5000/state", PartitionState(2, 1, (2, 3), 2).encode(), 0
    )
    assert 115 <= op_bytes(op) <= 135, "about the ~124 bytes measured per state write with kazoo"
    assert multi_bytes([op] * 10_000) > JUTE_MAXBUFFER, (
        "one 10K multi is over the limit (as measured: 1.27 MB)"
    )
    per_multi = max_ops_per_multi()
    assert 3_500 <= per_multi <= 4_500
    assert -(-10_000 // per_multi) == 3
