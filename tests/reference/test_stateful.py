"""Hypothesis state machines: simulated consumers against the reference coordinator.

Clients join, sync, heartbeat, commit, fetch, delete offsets and leave, crash and come back, and keep
sending with stale generations as zombies, while time advances and (in the second
machine) the log fails some appends. The coordinator's Monitor checks the named
invariants after every step (GenerationMonotonic, NoStaleGenerationCommit,
LeaderIsMember, AtMostOneOwnerPerPartition, StableImpliesAllSynced, StaticMembersMapped);
the machines add that no request is ever lost. Examples: --examples N (default 300).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from coordspec.reference.assignors.leader import lead
from coordspec.reference.choices import SeededChoices
from coordspec.reference.consumer_protocol import Assignment as ConsumerAssignment
from coordspec.reference.consumer_protocol import (
    Subscription,
    TopicPartitions,
    encode_assignment,
    encode_subscription,
)
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import (
    AppendCompleted,
    Assignment,
    CommitPartition,
    CommitTopic,
    GroupConfig,
    GroupCoordinator,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    MemberIdentity,
    OffsetCommit,
    OffsetDelete,
    OffsetDeletePartition,
    OffsetDeleteTopic,
    OffsetFetch,
    Protocol,
    SyncGroup,
    Tick,
)
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.invariants import Monitor

GROUP = "g"
TOPIC = "t"
PARTITIONS = 6
CONFIG = GroupConfig(
    min_session_timeout_ms=10,
    initial_rebalance_delay_ms=300,
    new_member_join_timeout_ms=5_000,
    offsets_retention_ms=20_000,
    offsets_retention_check_interval_ms=5_000,
)
RESET_ERRORS = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}


@dataclass
class Client:
    name: str
    join_version: int
    instance_id: str | None = None
    member_id: str = ""
    generation_id: int = -1
    leader: bool = False
    protocol_name: str | None = None
    members: tuple = ()  # the leader's member list from JoinGroup
    synced_generation: int = -1
    assignment: bytes = b""
    in_flight: set = field(default_factory=set)


CLIENTS = (
    ("dyn-v9", 9, None),
    ("dyn-v3", 3, None),
    ("static-v9", 9, "instance-a"),
    ("static-v5", 5, "instance-b"),
)


def subscription() -> tuple[Protocol, ...]:
    meta = encode_subscription(Subscription((TOPIC,)))
    return (Protocol("range", meta), Protocol("roundrobin", meta))


class GroupMachine(RuleBasedStateMachine):
    complete_appends = True

    def __init__(self) -> None:
        super().__init__()
        self.clients = {
            name: Client(name, version, instance) for name, version, instance in CLIENTS
        }
        self.requests: dict[int, tuple[Client, object]] = {}
        self.next_id = 0
        self.now_ms = 0
        self.pending_appends: list[AppendRecords] = []
        self.coordinator: GroupCoordinator | None = None
        self.last_error = ErrorCode.NONE

    @initialize(seed=st.integers(0, 2**16), arbitrary=st.booleans())
    def start(self, seed, arbitrary):
        self.coordinator = GroupCoordinator(
            CONFIG,
            SeededChoices(seed, arbitrary),
            complete_appends=self.complete_appends,
            observer=Monitor(),
        )

    # -- plumbing -------------------------------------------------------------------

    def handle(self, event) -> None:
        for effect in self.coordinator.handle(event):
            if isinstance(effect, Reply):
                client, request = self.requests.pop(effect.request_id)
                client.in_flight.discard(effect.request_id)
                self.on_reply(client, request, effect.response)
            elif not self.complete_appends:
                self.pending_appends.append(effect)

    def send(self, client: Client, make) -> None:
        self.next_id += 1
        request = make(self.next_id, self.now_ms)
        self.requests[self.next_id] = (client, request)
        client.in_flight.add(self.next_id)
        self.handle(request)

    def on_reply(self, client: Client, request, response) -> None:
        error = getattr(response, "error_code", ErrorCode.NONE)
        self.last_error = error
        if isinstance(request, JoinGroup):
            if error == ErrorCode.MEMBER_ID_REQUIRED:
                client.member_id = response.member_id
            elif error == ErrorCode.NONE:
                client.member_id = response.member_id
                client.generation_id = response.generation_id
                client.leader = response.leader == response.member_id
                client.protocol_name = response.protocol_name
                client.members = response.members
            elif error in RESET_ERRORS:
                client.member_id, client.generation_id = "", -1
        elif (
            isinstance(request, SyncGroup)
            and error == ErrorCode.NONE
            and request.member_id == client.member_id
        ):
            client.assignment = response.assignment
            client.synced_generation = request.generation_id
        elif (
            isinstance(request, (Heartbeat, SyncGroup))
            and error in RESET_ERRORS
            and request.member_id == client.member_id
        ):
            client.member_id, client.generation_id = "", -1
        elif isinstance(request, OffsetDelete):
            self.check_offsets_deleted(request, response)

    def check_offsets_deleted(self, request, response) -> None:
        """GM-63: every member speaks the consumer protocol, so the group is never refused as
        non-empty; a partition answered NONE holds no offset once the writes before the reply
        are done (the bare coordinator may answer before an expiry's tombstone is written)."""
        assert response.error_code != ErrorCode.NON_EMPTY_GROUP
        group = self.coordinator.groups.get(GROUP)
        if group is None or self.coordinator.pending_appends():
            return
        for topic in response.topics:
            for p in topic.partitions:
                if p.error_code == ErrorCode.NONE:
                    assert (topic.name, p.partition_index) not in group.offsets

    def abandoned_by_kafka(self) -> None:
        """Kafka drops a parked JoinGroup/SyncGroup when the same member sends another."""
        open_ids = set(self.coordinator.open_requests())
        for request_id in [r for r in self.requests if r not in open_ids]:
            client, _ = self.requests.pop(request_id)
            client.in_flight.discard(request_id)

    # -- rules ------------------------------------------------------------------------

    def known_clients(self) -> list[str]:
        """Clients that hold a member id (a current one, or a stale one as zombies do)."""
        return [c.name for c in self.clients.values() if c.member_id]

    def pick_known(self, data) -> Client:
        return self.clients[data.draw(st.sampled_from(self.known_clients()), label="client")]

    @rule(name=st.sampled_from([c[0] for c in CLIENTS]), changed=st.booleans())
    def join(self, name, changed):
        self.send_join(self.clients[name], changed)

    def send_join(self, c: Client, changed: bool) -> None:
        protocols = subscription()[:1] if changed else subscription()
        self.send(
            c,
            lambda rid, now: JoinGroup(
                rid,
                c.join_version,
                now,
                group_id=GROUP,
                member_id=c.member_id,
                group_instance_id=c.instance_id,
                session_timeout_ms=1_000,
                rebalance_timeout_ms=2_000,
                protocols=protocols,
                client_id=c.name,
            ),
        )
        self.abandoned_by_kafka()

    @precondition(lambda self: self.known_clients())
    @rule(data=st.data())
    def sync(self, data):
        self.send_sync(self.pick_known(data))

    def send_sync(self, c: Client) -> None:
        # The leader runs the assignor the group selected over the members JoinGroup listed.
        plan = (
            lead(c.protocol_name, {TOPIC: PARTITIONS}, c.members) if c.leader and c.members else {}
        )
        self.send(
            c,
            lambda rid, now: SyncGroup(
                rid,
                5,
                now,
                group_id=GROUP,
                generation_id=c.generation_id,
                member_id=c.member_id,
                group_instance_id=c.instance_id,
                protocol_type="consumer",
                protocol_name=c.protocol_name,
                assignments=tuple(Assignment(m, a) for m, a in plan.items()),
            ),
        )
        self.abandoned_by_kafka()

    @rule(name=st.sampled_from([c[0] for c in CLIENTS]))
    def next_step(self, name):
        """What a well-behaved consumer does next: join, sync the generation it joined, or heartbeat."""
        c = self.clients[name]
        if c.in_flight:
            return
        if not c.member_id or c.generation_id < 0:
            self.send_join(c, changed=False)
        elif c.synced_generation != c.generation_id:
            self.send_sync(c)
        else:
            self.send_heartbeat(c)
            if (
                c.member_id
                and not c.in_flight
                and self.last_error
                in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION)
            ):
                self.send_join(c, changed=False)

    @precondition(lambda self: self.known_clients())
    @rule(data=st.data(), back=st.integers(1, 3))
    def zombie_sync(self, data, back):
        """A zombie leader of an older generation hands every partition to itself."""
        c = self.pick_known(data)
        greedy = encode_assignment(
            ConsumerAssignment((TopicPartitions(TOPIC, tuple(range(PARTITIONS))),))
        )
        self.send(
            c,
            lambda rid, now: SyncGroup(
                rid,
                5,
                now,
                group_id=GROUP,
                generation_id=c.generation_id - back,
                member_id=c.member_id,
                group_instance_id=c.instance_id,
                protocol_type="consumer",
                protocol_name="range",
                assignments=(Assignment(c.member_id, greedy),),
            ),
        )

    @precondition(lambda self: self.known_clients())
    @rule(data=st.data())
    def heartbeat(self, data):
        self.send_heartbeat(self.pick_known(data))

    def send_heartbeat(self, c: Client) -> None:
        self.send(
            c,
            lambda rid, now: Heartbeat(
                rid,
                4,
                now,
                group_id=GROUP,
                generation_id=c.generation_id,
                member_id=c.member_id,
                group_instance_id=c.instance_id,
            ),
        )

    @precondition(lambda self: self.known_clients())
    @rule(data=st.data(), staleness=st.sampled_from([0, 0, 1, 2, None]))
    def commit(self, data, staleness):
        """Commit with the client's generation, an older one (a zombie), or none (-1)."""
        c = self.pick_known(data)
        generation = -1 if staleness is None else c.generation_id - staleness
        topic = CommitTopic(TOPIC, (CommitPartition(self.now_ms % PARTITIONS, self.now_ms),))
        self.send(
            c,
            lambda rid, now: OffsetCommit(
                rid,
                9,
                now,
                group_id=GROUP,
                generation_id=generation,
                member_id=c.member_id if staleness is not None else "",
                topics=(topic,),
            ),
        )

    @rule(name=st.sampled_from([c[0] for c in CLIENTS]))
    def fetch(self, name):
        self.send(
            self.clients[name],
            lambda rid, now: OffsetFetch(rid, 9, now, group_id=GROUP, topics=None),
        )

    @rule(name=st.sampled_from([c[0] for c in CLIENTS]), topic=st.sampled_from([TOPIC, "other"]))
    def delete_offsets(self, name, topic):
        partitions = tuple(OffsetDeletePartition(p) for p in range(PARTITIONS))
        self.send(
            self.clients[name],
            lambda rid, now: OffsetDelete(
                rid, 0, now, group_id=GROUP, topics=(OffsetDeleteTopic(topic, partitions),)
            ),
        )

    @precondition(lambda self: self.known_clients())
    @rule(data=st.data())
    def leave(self, data):
        c = self.pick_known(data)
        self.send(
            c,
            lambda rid, now: LeaveGroup(
                rid, 5, now, group_id=GROUP, members=(MemberIdentity(c.member_id, c.instance_id),)
            ),
        )

    @rule(name=st.sampled_from([c[0] for c in CLIENTS]))
    def crash(self, name):
        """The process restarts: it forgets its member id (a static member keeps its instance id)."""
        c = self.clients[name]
        c.member_id, c.generation_id, c.leader, c.members, c.assignment = "", -1, False, (), b""
        c.synced_generation = -1

    @rule(ms=st.sampled_from([1, 50, 300, 1_000, 2_000, 6_000]))
    def advance(self, ms):
        self.now_ms += ms
        self.handle(Tick(self.now_ms))
        self.abandoned_by_kafka()

    @rule()
    def run_to_next_deadline(self):
        deadline = self.coordinator.next_deadline_ms()
        if deadline is not None:
            self.now_ms = max(self.now_ms, deadline)
            self.handle(Tick(self.now_ms))
            self.abandoned_by_kafka()

    # -- invariants beyond the Monitor's -----------------------------------------------------

    @invariant()
    def no_request_is_lost(self):
        """Every unanswered request is parked by a member or waits on an append."""
        if self.coordinator is None:
            return
        held = set()
        for group in self.coordinator.groups.values():
            for member in group.members.values():
                for parked in (member.awaiting_join, member.awaiting_sync):
                    if parked is not None:
                        held.add(parked.request_id)
        waiting = set(self.coordinator.open_requests()) - held
        if waiting:
            assert self.coordinator.pending_appends(), (
                f"requests {sorted(waiting)} are neither parked nor awaiting a write"
            )

    @invariant()
    def timers_are_in_the_future(self):
        if self.coordinator is not None:
            deadline = self.coordinator.next_deadline_ms()
            assert deadline is None or deadline > self.coordinator.now_ms


class GroupMachineWithLog(GroupMachine):
    """The driver owns the log: appends complete late, or fail."""

    complete_appends = False

    @precondition(lambda self: self.pending_appends)
    @rule(
        error=st.sampled_from(
            [
                ErrorCode.NONE,
                ErrorCode.NONE,
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                ErrorCode.REQUEST_TIMED_OUT,
            ]
        )
    )
    def complete_append(self, error):
        append = self.pending_appends.pop(0)
        self.handle(AppendCompleted(append.append_id, self.now_ms, error))


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(stateful_step_count=40)
TestGroupMachineWithLog = GroupMachineWithLog.TestCase
TestGroupMachineWithLog.settings = settings(stateful_step_count=40)
