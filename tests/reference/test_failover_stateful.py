"""A Hypothesis state machine: consumer groups committing offsets while their coordinator
moves (CF-20 … CF-23).

Three brokers run the replication model with ``__consumer_offsets`` (2 partitions, RF 3);
each broker hosts the coordinators of the partitions it leads. Two groups live on different
partitions: clients c1 and c2 in one, c3 in the other. The clients behave as consumers do
(join, sync, heartbeat, commit, fetch, find the coordinator again after NOT_COORDINATOR or
COORDINATOR_LOAD_IN_PROGRESS, give up on a broker that does not answer), while brokers crash,
restart, pause (a GC pause: a zombie when it resumes), lose their ZooKeeper session, and the
driver decides when followers fetch, when controller requests arrive and when loading ends.

Checked after every step: the four failover invariants (Monitor, and again as @invariant
rules), the five replication invariants (replication Monitor) and the group invariants of
every partition's coordinator (group Monitor). Examples: --examples N (default 300).
``test_the_machine_finds_mutants`` shows the machine reaches the states that matter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
from driver import protocols
from hypothesis import Phase, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from test_failover_invariants import acknowledge_on_local_append, serve_without_loading

from coordspec.reference.errors import ErrorCode, InvariantViolation
from coordspec.reference.failover.cluster import FailoverCluster
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.failover.placement import partition_for
from coordspec.reference.group import (
    CommitPartition,
    CommitTopic,
    DescribeGroups,
    GroupConfig,
    Heartbeat,
    JoinGroup,
    ListGroups,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
)
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.invariants import Monitor as ReplicationMonitor
from coordspec.reference.zookeeper.sessions import SessionState

BROKERS = (1, 2, 3)
OFFSETS_PARTITIONS = 2
GROUPS = {"c1": "alpha", "c2": "alpha", "c3": "orders"}
GROUP_CONFIG = GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=300)
REPLICATION = ReplicationConfig(zookeeper_session_timeout_ms=6_000, replica_lag_time_max_ms=10_000)
SESSION_MS = 8_000
REDISCOVER = {
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
}
REJOIN = {ErrorCode.ILLEGAL_GENERATION, ErrorCode.REBALANCE_IN_PROGRESS}


def test_the_groups_live_on_different_partitions():
    assert partition_for("alpha", OFFSETS_PARTITIONS) != partition_for("orders", OFFSETS_PARTITIONS)


@dataclass
class Client:
    name: str
    group_id: str
    coordinator: int | None = None
    member_id: str = ""
    generation_id: int = -1
    synced_generation: int = -1
    in_flight: set = field(default_factory=set)


class FailoverMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.fc: FailoverCluster | None = None
        self.clients = {name: Client(name, group) for name, group in GROUPS.items()}
        self.requests: dict[int, tuple[Client, int, object]] = {}  # id -> (client, broker, request)
        self.next_id = 0

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed):
        self.fc = FailoverCluster(
            list(BROKERS),
            OFFSETS_PARTITIONS,
            group_config=GROUP_CONFIG,
            replication_config=REPLICATION,
            replication_monitor=ReplicationMonitor(),
            seed=seed,
        )

    # -- plumbing -------------------------------------------------------------------

    def running(self) -> list[int]:
        return [b for b in BROKERS if self.fc.running(b)]

    def paused(self) -> list[int]:
        return [
            b
            for b in BROKERS
            if self.fc.cluster.slots[b].broker is not None and self.fc.cluster.slots[b].paused
        ]

    def crashed(self) -> list[int]:
        """Crashed brokers whose old session is gone, so that they can register again."""
        slots = self.fc.cluster.slots
        return [
            b
            for b in BROKERS
            if slots[b].broker is None
            and self.fc.cluster.zk.session_state(slots[b].session_id) != SessionState.OPEN
        ]

    def send(self, c: Client, make) -> None:
        if c.coordinator is None or not self.fc.running(c.coordinator):
            c.coordinator = self.fc.coordinator_for(c.group_id)  # FindCoordinator
            if c.coordinator is None or not self.fc.running(c.coordinator):
                return
        self.next_id += 1
        request = make(self.next_id, self.fc.now_ms)
        self.requests[self.next_id] = (c, c.coordinator, request)
        c.in_flight.add(self.next_id)
        self.fc.send(c.coordinator, request)

    def collect(self) -> None:
        """Hand every reply that arrived to its client."""
        for request_id, (c, broker, request) in list(self.requests.items()):
            reply = self.fc.reply(broker, request_id)
            if reply is not None:
                del self.requests[request_id]
                if request_id in c.in_flight:
                    c.in_flight.discard(request_id)
                    self.on_reply(c, request, reply.response)

    def on_reply(self, c: Client, request, response) -> None:
        if isinstance(request, (DescribeGroups, ListGroups)):
            return  # the Monitor judges these; a consumer does not act on them
        if isinstance(request, OffsetCommit):
            errors = {p.error_code for t in response.topics for p in t.partitions}
            error = next(iter(errors - {ErrorCode.NONE}), ErrorCode.NONE)
        else:
            error = response.error_code
        if error in REDISCOVER:
            c.coordinator = None
        elif isinstance(request, JoinGroup):
            if error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED):
                c.member_id = response.member_id
                c.generation_id = response.generation_id
            elif error == ErrorCode.UNKNOWN_MEMBER_ID:
                c.member_id, c.generation_id = "", -1
        elif error == ErrorCode.UNKNOWN_MEMBER_ID:
            c.member_id, c.generation_id = "", -1
        elif error in REJOIN:
            c.generation_id = -1
        elif isinstance(request, SyncGroup) and error == ErrorCode.NONE:
            c.synced_generation = request.generation_id

    def after_step(self) -> None:
        self.collect()

    # -- clients ------------------------------------------------------------------------

    @rule(name=st.sampled_from(sorted(GROUPS)))
    def client_step(self, name):
        """What a consumer does next: join, sync the generation it joined, or heartbeat."""
        c = self.clients[name]
        if c.in_flight:
            return
        if c.generation_id < 0:
            self.send(
                c,
                lambda rid, now: JoinGroup(
                    rid,
                    4,
                    now,
                    group_id=c.group_id,
                    member_id=c.member_id,
                    protocols=protocols("range"),
                    session_timeout_ms=SESSION_MS,
                    rebalance_timeout_ms=SESSION_MS,
                ),
            )
        elif c.synced_generation != c.generation_id:
            self.send(
                c,
                lambda rid, now: SyncGroup(
                    rid,
                    3,
                    now,
                    group_id=c.group_id,
                    generation_id=c.generation_id,
                    member_id=c.member_id,
                ),
            )
        else:
            self.send(
                c,
                lambda rid, now: Heartbeat(
                    rid,
                    3,
                    now,
                    group_id=c.group_id,
                    generation_id=c.generation_id,
                    member_id=c.member_id,
                ),
            )
        self.after_step()

    @rule(ms=st.sampled_from([100, 400]))
    def round(self, ms):
        """Every client takes its next step, the followers fetch, time passes."""
        for name in sorted(GROUPS):
            self.client_step(name)
        self.fc.replicate_all()
        self.fc.tick(ms)
        self.after_step()

    @rule(name=st.sampled_from(sorted(GROUPS)), partition=st.integers(0, 1), simple=st.booleans())
    def commit(self, name, partition, simple):
        """Commit with the generation the client synced, or as a simple consumer (generation -1)."""
        c = self.clients[name]
        generation, member = (-1, "") if simple else (c.generation_id, c.member_id)
        topics = (CommitTopic("t", (CommitPartition(partition, self.next_id + 1),)),)
        self.send(
            c,
            lambda rid, now: OffsetCommit(
                rid,
                9,
                now,
                group_id=c.group_id,
                generation_id=generation,
                member_id=member,
                topics=topics,
            ),
        )
        self.after_step()

    @rule(name=st.sampled_from(sorted(GROUPS)))
    def fetch(self, name):
        c = self.clients[name]
        self.send(c, lambda rid, now: OffsetFetch(rid, 9, now, group_id=c.group_id, topics=None))
        self.after_step()

    @rule(name=st.sampled_from(sorted(GROUPS)), listing=st.booleans())
    def describe(self, name, listing):
        """An admin asks the client's coordinator about both groups (split by partition), or lists."""
        groups = tuple(sorted(set(GROUPS.values())))
        self.send(
            self.clients[name],
            lambda rid, now: (
                ListGroups(rid, 4, now) if listing else DescribeGroups(rid, 5, now, groups=groups)
            ),
        )
        self.after_step()

    @rule(name=st.sampled_from(sorted(GROUPS)))
    def give_up(self, name):
        """The client stops waiting (request timeout) and will look for the coordinator again."""
        c = self.clients[name]
        c.in_flight.clear()
        c.coordinator = None

    # -- the cluster ----------------------------------------------------------------------

    @rule(data=st.data())
    def replicate(self, data):
        broker = (
            data.draw(st.sampled_from(self.running()), label="broker") if self.running() else None
        )
        if broker is not None:
            self.fc.replicate(
                broker, data.draw(st.integers(0, OFFSETS_PARTITIONS - 1), label="partition")
            )
        self.after_step()

    @rule()
    def replicate_all(self):
        self.fc.replicate_all()
        self.after_step()

    @rule(ms=st.sampled_from([100, 1_000, 3_000, 7_000]))
    def tick(self, ms):
        self.fc.tick(ms)
        self.after_step()

    @rule()
    def settle(self):
        self.fc.settle()
        self.after_step()

    @precondition(lambda self: self.fc is not None and self.fc.cluster.deliverable())
    @rule(data=st.data())
    def deliver(self, data):
        self.fc.deliver(data.draw(st.sampled_from(self.fc.cluster.deliverable()), label="request"))
        self.after_step()

    @precondition(lambda self: self.fc is not None and self.fc.pending_loads)
    @rule(data=st.data())
    def load(self, data):
        broker, partition = data.draw(st.sampled_from(sorted(self.fc.pending_loads)), label="load")
        if self.fc.running(broker):
            self.fc.load(broker, partition)
        self.after_step()

    @precondition(lambda self: self.fc is not None and self.fc.pending_loads)
    @rule()
    def load_all(self):
        self.fc.load_all()
        self.after_step()

    @precondition(lambda self: self.fc is not None and len(self.running()) >= 2)
    @rule(data=st.data())
    def crash(self, data):
        self.crash_broker(data.draw(st.sampled_from(self.running()), label="broker"))

    def crash_broker(self, broker: int) -> None:
        self.fc.crash(broker)
        for request_id, (c, to, _) in list(self.requests.items()):
            if to == broker:  # the connection breaks: no answer will come
                del self.requests[request_id]
                c.in_flight.discard(request_id)
                c.coordinator = None

    @precondition(lambda self: self.fc is not None and len(self.running()) >= 2)
    @rule(group=st.sampled_from(sorted(set(GROUPS.values()))), pause=st.booleans())
    def fail_over(self, group, pause):
        """The group's coordinator dies or stops (GC pause); its session expires; the
        controller elects another leader and tells the brokers."""
        broker = self.fc.coordinator_for(group)
        if broker is None or not self.fc.running(broker):
            return
        if pause:
            self.fc.pause(broker)
        else:
            self.crash_broker(broker)
        self.fc.tick(REPLICATION.zookeeper_session_timeout_ms + 1_000)
        self.fc.settle()
        self.after_step()

    @precondition(lambda self: self.fc is not None and self.crashed())
    @rule(data=st.data())
    def restart(self, data):
        self.fc.restart(data.draw(st.sampled_from(self.crashed()), label="broker"))
        self.after_step()

    @precondition(lambda self: self.fc is not None and len(self.running()) >= 2)
    @rule(data=st.data())
    def pause(self, data):
        self.fc.pause(data.draw(st.sampled_from(self.running()), label="broker"))

    @precondition(lambda self: self.fc is not None and self.paused())
    @rule(data=st.data())
    def resume(self, data):
        self.fc.resume(data.draw(st.sampled_from(self.paused()), label="broker"))
        self.after_step()

    @precondition(lambda self: self.fc is not None and self.running())
    @rule(data=st.data())
    def expire_session(self, data):
        self.fc.expire_session(data.draw(st.sampled_from(self.running()), label="broker"))
        self.after_step()

    # -- the four failover invariants, by name --------------------------------------------------

    @invariant()
    def SingleActiveCoordinator(self):
        if self.fc is not None:
            self.fc.monitor.check_single_active_coordinator()

    @invariant()
    def NoCommittedOffsetLost(self):
        if self.fc is not None:
            self.fc.monitor.check_no_committed_offset_lost()

    @invariant()
    def LoadBeforeServe(self):
        if self.fc is not None:
            self.fc.monitor.check_load_before_serve()

    @invariant()
    def NoStaleGenerationAfterFailover(self):
        if self.fc is not None:
            self.fc.monitor.check_no_stale_generation_after_failover()


TestFailoverMachine = FailoverMachine.TestCase
TestFailoverMachine.settings = settings(stateful_step_count=40)


@pytest.mark.parametrize(
    ("mutant", "invariant"),
    [
        (acknowledge_on_local_append, "NoCommittedOffsetLost"),
        (
            lambda monkeypatch: monkeypatch.setattr(
                CoordinatorHost, "_become", serve_without_loading
            ),
            "LoadBeforeServe",
        ),
    ],
)
def test_the_machine_finds_mutants(monkeypatch, mutant, invariant):
    """The machine reaches the states that matter: with a mutant host it finds the violation
    (deterministically: derandomized, no shrinking)."""
    mutant(monkeypatch)
    with pytest.raises(InvariantViolation) as caught:
        run_state_machine_as_test(
            FailoverMachine,
            settings=settings(
                max_examples=1_000,
                stateful_step_count=40,
                derandomize=True,
                phases=[Phase.generate],
            ),
        )
    assert caught.value.invariant == invariant
