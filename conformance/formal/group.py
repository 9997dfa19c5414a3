"""Spec check of the reference coordinator (reference/group) against tla/GroupMembership.tla,
both ways at the CI bounds (clients c1, c2; partitions p1, p2; MaxGeneration 3).

``validate_random_traces`` (reference -> spec): a seeded driver plays one group on the
reference as the spec's clients; TLC checks that every recorded trace is a behaviour of the
spec (tla/TraceGroupMembership.tla). ``replay_simulated_behaviours`` (spec -> reference):
TLC's random behaviours (tla/SimGroupMembership.tla) are replayed on the reference, which
must take every step and reach the same abstract state. The mapping, and what these checks
found, are in tla/README.md.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from coordspec.conformance.formal.harness import (
    RandomTraceSummary,
    ReplaySummary,
    Step,
    TraceCheck,
    TraceMismatch,
    check_trace_data,
    replay_all,
    simulate_behaviours,
    state_diff,
    trace_data_module,
    trace_rows,
)
from coordspec.conformance.formal.harness import (
    validate_random_traces as validate,
)
from coordspec.conformance.formal.tla_values import tla_value
from coordspec.conformance.formal.tlc import TlcError
from coordspec.reference.choices import SeededChoices
from coordspec.reference.consumer_protocol import Assignment as ConsumerAssignment
from coordspec.reference.consumer_protocol import (
    Subscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import Assignment as SyncAssignment
from coordspec.reference.group import (
    CommitPartition,
    CommitTopic,
    GroupConfig,
    GroupCoordinator,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    MemberIdentity,
    OffsetCommit,
    Protocol,
    SyncGroup,
    Tick,
    rebalance,
)
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.invariants import Monitor
from coordspec.reference.substeps import Unobserved

CLIENTS = ("c1", "c2")
PARTITIONS = ("p1", "p2")
MAX_GENERATION = 3
NONE = "none"  # the spec's None
GROUP = "group"
TOPIC = "foo"
PARTITION_INDEX = {"p1": 0, "p2": 1}
CONFIG = GroupConfig(
    min_session_timeout_ms=10, max_session_timeout_ms=600_000, initial_rebalance_delay_ms=3_000
)
SESSION_MS = 30_000
REBALANCE_MS = 2_000  # not above the initial delay: the initial join phase is never extended
ARGS = ("actor", "withGeneration")  # the parameters of a trace record's action, as Step.args
VARIABLES = (
    "state",
    "generation",
    "members",
    "joined",
    "syncing",
    "pendingSync",
    "leader",
    "assignment",
    "assignmentGen",
    "clientGen",
    "clientLeader",
    "owners",
    "lastCommit",
)
NO_COMMIT = {
    "client": NONE,
    "generationId": -1,
    "groupGeneration": 0,
    "wasMember": False,
    "groupState": "Empty",
}


# -- the reference, driven as the spec's clients -----------------------------------------------------------


class ScriptedChoices(SeededChoices):
    """Seeded choices, except that a leader in ``want`` wins when it is a candidate."""

    def __init__(self, seed: int, arbitrary: bool) -> None:
        super().__init__(seed, arbitrary)
        self.want: list[str] = []

    def leader(self, candidates):
        for member_id in self.want:
            if member_id in candidates:
                return member_id
        return super().leader(candidates)


@dataclass
class Client:
    name: str
    member_id: str | None = None
    gen: int = -1
    leader: bool = False
    members_seen: tuple[str, ...] = ()  # member ids in the leader's last JoinGroup reply
    variant: int = 0  # flips to change the member's metadata


class Harness(Unobserved):
    """One group on the reference coordinator, two clients, and the spec's view of it."""

    def __init__(self, seed: int = 0, arbitrary: bool = True) -> None:
        self.choices = ScriptedChoices(seed, arbitrary)
        self.coordinator = GroupCoordinator(
            CONFIG, self.choices, now_ms=0, observer=Monitor(), substeps=self
        )
        self._mids: list[dict] | None = None  # while recording: the states before CompleteJoin
        self.now_ms = 0
        self.clients = {c: Client(c) for c in CLIENTS}
        self.client_of: dict[str, str] = {}
        self.owners = {
            g: {p: frozenset() for p in PARTITIONS} for g in range(1, MAX_GENERATION + 1)
        }
        self.last_commit = dict(NO_COMMIT)
        self.assignment = {c: frozenset() for c in CLIENTS}
        self.assignment_gen = 0
        self.pending: dict[int, tuple] = {}
        self.commit_context: dict[int, dict] = {}
        self.join_errors: dict[int, ErrorCode] = {}
        self.commit_accepted = False
        self.request_ids = 0
        self.steps: list[Step] = [Step("Init", (NONE, False), self.abstract())]

    # -- the abstraction ------------------------------------------------------

    @property
    def group(self):
        return self.coordinator.groups.get(GROUP)

    def _learn_ids(self) -> None:
        group = self.group
        if group is None:
            return
        for member in group.members.values():
            parked = member.awaiting_join
            if (
                member.member_id not in self.client_of
                and parked is not None
                and parked.request_id in self.pending
            ):
                client = self.pending[parked.request_id][0]
                self.client_of[member.member_id] = client
                self.clients[client].member_id = member.member_id

    def _client(self, member_id: str | None) -> str:
        if member_id is None:
            return NONE
        if member_id not in self.client_of:
            raise TraceMismatch(f"member id {member_id!r} was never handed to a client")
        return self.client_of[member_id]

    def abstract(self) -> dict:
        group = self.group
        self._learn_ids()
        clients = {
            "clientGen": {c: self.clients[c].gen for c in CLIENTS},
            "clientLeader": {c: self.clients[c].leader for c in CLIENTS},
            "owners": {g: dict(ps) for g, ps in self.owners.items()},
            "lastCommit": dict(self.last_commit),
        }
        if group is None:
            return {
                "state": "Empty",
                "generation": 0,
                "members": frozenset(),
                "joined": frozenset(),
                "syncing": frozenset(),
                "pendingSync": frozenset(),
                "leader": NONE,
                "assignment": dict(self.assignment),
                "assignmentGen": self.assignment_gen,
                **clients,
            }
        if (
            group.assignment_generation is not None
            and group.assignment_generation != self.assignment_gen
        ):
            self.assignment = {c: frozenset() for c in CLIENTS}
            for member in group.members.values():
                self.assignment[self._client(member.member_id)] = partitions_of(member.assignment)
            self.assignment_gen = group.assignment_generation
        members = group.members.values()
        return {
            "state": str(group.state),
            "generation": group.generation_id,
            "members": frozenset(self._client(m.member_id) for m in members),
            "joined": frozenset(
                self._client(m.member_id) for m in members if m.awaiting_join is not None
            ),
            "syncing": frozenset(
                self._client(m.member_id) for m in members if m.awaiting_sync is not None
            ),
            "pendingSync": frozenset(self._client(m) for m in group.pending_sync),
            "leader": self._client(group.leader_id),
            "assignment": dict(self.assignment),
            "assignmentGen": self.assignment_gen,
            **clients,
        }

    # -- the membership test the driver may make -------------------------------------------

    def is_member(self, c: str) -> bool:
        group, member_id = self.group, self.clients[c].member_id
        return group is not None and member_id is not None and member_id in group.members

    def member(self, c: str):
        return self.group.members[self.clients[c].member_id]

    def state(self) -> str:
        return "Empty" if self.group is None else str(self.group.state)

    def generation(self) -> int:
        return 0 if self.group is None else self.group.generation_id

    # -- events ------------------------------------------------------------------------

    def _send(self, client: str, cls, version: int, **fields) -> int:
        self.request_ids += 1
        self.now_ms += 1
        request = cls(self.request_ids, version, self.now_ms, group_id=GROUP, **fields)
        self.pending[request.request_id] = (client, cls.__name__, fields)
        self._handle(request)
        return request.request_id

    def _handle(self, event) -> None:
        for effect in self.coordinator.handle(event):
            if isinstance(effect, Reply):
                self._on_reply(effect)

    def _on_reply(self, reply: Reply) -> None:
        client, api, fields = self.pending.pop(reply.request_id)
        response = reply.response
        me = self.clients[client]
        if api == "JoinGroup":
            self.join_errors[reply.request_id] = response.error_code
        if api == "JoinGroup" and response.error_code == ErrorCode.NONE:
            self.client_of.setdefault(response.member_id, client)
            me.member_id = response.member_id
            me.gen = response.generation_id
            me.leader = response.leader == response.member_id
            if me.leader:
                me.members_seen = tuple(m.member_id for m in response.members)
        elif api == "SyncGroup" and response.error_code == ErrorCode.NONE:
            generation = fields["generation_id"]
            for p in partitions_of(response.assignment):
                self.owners[generation][p] = self.owners[generation][p] | {client}
        elif api == "OffsetCommit":
            errors = {p.error_code for t in response.topics for p in t.partitions}
            context = self.commit_context.pop(reply.request_id)
            if errors == {ErrorCode.NONE}:
                self.last_commit = context
            self.commit_accepted = errors == {ErrorCode.NONE}

    def _record(self, action: str, actor: str, with_generation: bool, run) -> list[Step]:
        """Run one reference event; split it where the join phase completed on the way."""
        before = self.steps[-1].state
        mids: list[dict] = []
        self._mids = mids
        try:
            run()
        finally:
            self._mids = None
        end = self.abstract()
        if action == "CompleteJoin":
            steps = [] if end == before else [Step("CompleteJoin", (NONE, False), end)]
        else:
            states = [*mids, end]
            steps = [Step(action, (actor, with_generation), states[0])]
            steps += [Step("CompleteJoin", (NONE, False), s) for s in states[1:]]
        self.steps.extend(steps)
        return steps

    # The reference's sub-steps (reference/substeps.py): a step is cut before CompleteJoin.

    def started(self, action: str, subject: object) -> None:
        if action == "CompleteJoin" and self._mids is not None:
            self._mids.append(self.abstract())

    def protocols(self, c: str) -> tuple[Protocol, ...]:
        sub = Subscription((TOPIC,), user_data=bytes([self.clients[c].variant]))
        return (Protocol("range", encode_subscription(sub)),)

    def join(self, c: str, changed: bool = False) -> list[Step]:
        me = self.clients[c]
        member_id = me.member_id if self.is_member(c) else ""
        if changed:
            me.variant ^= 1
        sent: list[int] = []

        def run():
            sent.append(
                self._send(
                    c,
                    JoinGroup,
                    3,
                    member_id=member_id,
                    session_timeout_ms=SESSION_MS,
                    rebalance_timeout_ms=REBALANCE_MS,
                    protocol_type="consumer",
                    protocols=self.protocols(c),
                )
            )

        steps = self._record("JoinGroup", c, False, run)
        error = self.join_errors.get(sent[0])  # None: parked
        if len(steps) == 1 and error == ErrorCode.NONE:
            steps[
                0
            ].action = "JoinGroupAnswered"  # answered at once with the current generation (GM-12)
        elif error not in (None, ErrorCode.NONE) and steps[0].action == "JoinGroup":
            steps[
                0
            ].action = (
                "JoinGroupRefused"  # no spec action refuses a JoinGroup: TLC rejects the trace
            )
        return steps

    def sync(
        self,
        c: str,
        assignment: dict[str, frozenset] | None = None,
        rng: random.Random | None = None,
    ) -> list[Step]:
        me = self.clients[c]
        assignments: tuple = ()
        if me.leader:
            if assignment is None:
                assignment = random_assignment(
                    [self._client(m) for m in me.members_seen], rng or random.Random(0)
                )
            ids = {self._client(m): m for m in me.members_seen}
            assignments = tuple(
                SyncAssignment(ids[client], encode_partitions(ps))
                for client, ps in sorted(assignment.items())
                if client in ids
            )
        return self._record(
            "SyncGroup",
            c,
            False,
            lambda: self._send(
                c,
                SyncGroup,
                5,
                generation_id=me.gen,
                member_id=me.member_id,
                protocol_type="consumer",
                protocol_name="range",
                assignments=assignments,
            ),
        )

    def heartbeat(self, c: str) -> list[Step]:
        me = self.clients[c]
        return self._record(
            "Heartbeat",
            c,
            False,
            lambda: self._send(c, Heartbeat, 4, generation_id=me.gen, member_id=me.member_id),
        )

    def leave(self, c: str) -> list[Step]:
        me = self.clients[c]
        member_id = me.member_id

        def run():
            me.gen, me.leader = -1, False
            self._send(c, LeaveGroup, 5, members=(MemberIdentity(member_id),))

        return self._record("LeaveGroup", c, False, run)

    def commit(self, c: str, with_generation: bool) -> list[Step]:
        me = self.clients[c]
        generation = me.gen if with_generation else -1
        context = {
            "client": c,
            "generationId": generation,
            "groupGeneration": self.generation(),
            "wasMember": self.is_member(c),
            "groupState": self.state(),
        }
        self.commit_accepted = False
        self.commit_context[self.request_ids + 1] = context
        self._record(
            "OffsetCommit",
            c,
            with_generation,
            lambda: self._send(
                c,
                OffsetCommit,
                9,
                generation_id=generation,
                member_id=(me.member_id or "") if with_generation else "",
                topics=(CommitTopic(TOPIC, (CommitPartition(0, self.request_ids),)),),
            ),
        )
        if not self.commit_accepted:
            self.steps[-1].action = "OffsetCommitRejected"
        return [self.steps[-1]]

    def crash(self, c: str) -> list[Step]:
        me = self.clients[c]

        def run():
            me.gen, me.leader = -1, False

        return self._record("Crash", c, False, run)

    def fire(self, action: str, c: str | None = None) -> list[Step]:
        """A timer fires now: CompleteJoin, ExpireSession(c) or ExpirePendingSync."""
        if action == "CompleteJoin":
            key = rebalance.join_key(GROUP)
        elif action == "ExpirePendingSync":
            key = rebalance.sync_key(GROUP)
        else:
            key = rebalance.session_key(GROUP, self.clients[c].member_id)

        def run():
            self.now_ms += 1
            self.coordinator.timers.schedule(key, self.now_ms)
            self._handle(Tick(self.now_ms))

        return self._record(action, c or NONE, False, run)


def partitions_of(data: bytes) -> frozenset:
    if not data:
        return frozenset()
    names = {i: p for p, i in PARTITION_INDEX.items()}
    return frozenset(
        names[i]
        for tp in decode_assignment(data).partitions
        if tp.topic == TOPIC
        for i in tp.partitions
    )


def encode_partitions(partitions) -> bytes:
    indexes = tuple(sorted(PARTITION_INDEX[p] for p in partitions))
    return encode_assignment(
        ConsumerAssignment((TopicPartitions(TOPIC, indexes),) if indexes else ())
    )


def random_assignment(members: list[str], rng: random.Random) -> dict[str, frozenset]:
    out = {c: set() for c in members}
    for p in PARTITIONS:
        out[rng.choice(members)].add(p)
    return {c: frozenset(ps) for c, ps in out.items()}


# -- reference -> spec: the random driver --------------------------------------------------------------------


def random_trace(seed: int, steps: int) -> list[Step]:
    """A random run of the reference, recorded as at least ``steps`` spec steps after Init."""
    rng = random.Random(seed)
    h = Harness(seed, arbitrary=True)
    while len(h.steps) <= steps:
        moves = []
        group, state, generation = h.group, h.state(), h.generation()
        for c in CLIENTS:
            me = h.clients[c]
            member = h.is_member(c)
            if generation < MAX_GENERATION:
                moves += [(4, lambda c=c: h.join(c, changed=rng.random() < 0.5))]
            elif member and (
                state == "CompletingRebalance"
                or (state == "Stable" and group.leader_id != me.member_id)
            ):
                moves += [(2, lambda c=c: h.join(c, changed=False))]
            if me.gen >= 0:
                moves += [
                    (4, lambda c=c: h.sync(c, rng=rng)),
                    (1, lambda c=c: h.heartbeat(c)),
                    (2, lambda c=c: h.commit(c, True)),
                    (1, lambda c=c: h.crash(c)),
                ]
            moves += [(1, lambda c=c: h.commit(c, False))]
            if member:
                moves += [(1, lambda c=c: h.leave(c))]
                m = h.member(c)
                if m.awaiting_join is None and m.awaiting_sync is None:
                    moves += [(1, lambda c=c: h.fire("ExpireSession", c))]
        if state == "PreparingRebalance":
            moves += [(4, lambda: h.fire("CompleteJoin"))]
        if state in ("CompletingRebalance", "Stable") and group.pending_sync:
            moves += [(1, lambda: h.fire("ExpirePendingSync"))]
        weights = [w for w, _ in moves]
        rng.choices([m for _, m in moves], weights)[0]()
    return h.steps


def corrupt_generation_jump(trace: list[Step]) -> tuple[list[Step], int]:
    """The first generation increase jumps by 2 instead (and stays 1 ahead): (trace, 1-based index)."""
    out = [Step(s.action, s.args, dict(s.state)) for s in trace]
    for k in range(1, len(out)):
        if out[k].state["generation"] > out[k - 1].state["generation"]:
            for s in out[k:]:
                s.state["generation"] += 1
            return out, k + 1
    raise ValueError("the trace never advances the generation")


def corrupt_stale_commit(trace: list[Step]) -> tuple[list[Step], int] | None:
    """A commit the reference refused for a stale generation, recorded as accepted instead."""
    for k, s in enumerate(trace):
        actor, with_generation = s.args
        if s.action == "OffsetCommitRejected" and with_generation:
            before = trace[k - 1].state
            gen = before["clientGen"][actor]
            if (
                before["state"] not in ("PreparingRebalance", "Stable")
                or gen == before["generation"]
            ):
                continue
            commit = {
                "client": actor,
                "generationId": gen,
                "groupGeneration": before["generation"],
                "wasMember": actor in before["members"],
                "groupState": before["state"],
            }
            old = s.state["lastCommit"]
            out = [Step(x.action, x.args, dict(x.state)) for x in trace]
            out[k].action = "OffsetCommit"
            for x in out[k:]:
                if x.state["lastCommit"] != old:
                    break
                x.state["lastCommit"] = commit
            return out, k + 1
    return None


# -- TLA+ values --------------------------------------------------------------------------------------------


_MODEL_VALUES = frozenset(CLIENTS + PARTITIONS)


def tla(value) -> str:
    """Python -> TLA+: clients and partitions are model values, other strings are strings."""
    return tla_value(value, _MODEL_VALUES)


_SHARED = (
    "assignment",
    "clientGen",
    "clientLeader",
    "owners",
    "lastCommit",
)  # few distinct values: named once


def trace_module(traces: list[list[Step]]) -> str:
    """The traces as the TraceData module (record-valued variables with few distinct values named once)."""
    rows = trace_rows(traces, VARIABLES, lambda name, value: tla(value), tla)
    return trace_data_module(rows, [*VARIABLES, "action", *ARGS], ["c1", "c2", "p1", "p2"], _SHARED)


# -- running TLC ------------------------------------------------------------------------------------------------

_CONSTANTS = """CONSTANTS
    c1 = c1
    c2 = c2
    p1 = p1
    p2 = p2
    Clients = {c1, c2}
    Partitions = {p1, p2}
    MaxGeneration = 3
    BugCommitWithoutGenerationCheck = FALSE
    BugSyncAnyGeneration = FALSE
    BugStableBeforeWrite = FALSE
    BugLeaderKeptOnLeave = FALSE
    BugGenerationReset = FALSE
"""


def check_traces(traces: list[list[Step]]) -> TraceCheck:
    """One TLC run: is every trace a behaviour of GroupMembership?"""
    return check_trace_data(
        "GroupMembership",
        trace_module(traces),
        _CONSTANTS + "INIT TraceInit\nNEXT TraceNext\nINVARIANT StartsInInit\n",
        traces,
    )


def validate_random_traces(count: int, steps: int, seed: int) -> RandomTraceSummary:
    """``count`` random reference runs of at least ``steps`` steps each, checked by TLC in one run."""
    return validate(lambda run: random_trace(run, steps), check_traces, count, steps, seed)


# -- spec -> reference: TLC simulation replayed ---------------------------------------------------------------------


def simulate(count: int, depth: int, seed: int) -> list[list[tuple[dict, dict]]]:
    """``count`` behaviours of the spec, ``depth`` steps each, from one TLC simulation run:
    each a list of (act, spec state) with Init first."""
    behaviours = simulate_behaviours(
        "GroupMembership", _CONSTANTS, count, depth, seed, VARIABLES, _normal
    )[:count]
    if len(behaviours) != count or any(len(x) != depth + 1 for x in behaviours):
        raise TlcError(f"simulation seed {seed}: expected {count} behaviours of {depth} steps")
    return behaviours


def _normal(state: dict) -> dict:
    """The parsed and the mapped state in one shape (TLC prints 1..3 functions as sequences)."""
    return {name: state[name] for name in VARIABLES}


def replay(behaviour: list[tuple[dict, dict]], seed: int = 0) -> int:
    """Replay a spec behaviour on the reference; raise TraceMismatch on the first disagreement."""
    h = Harness(seed, arbitrary=False)
    if _normal(h.steps[0].state) != behaviour[0][1]:
        raise TraceMismatch(
            f"initial states differ: {state_diff(VARIABLES, h.steps[0].state, behaviour[0][1])}"
        )
    k = 1
    while k < len(behaviour):
        act, target = behaviour[k]
        action, c = act["action"], act["actor"]
        final = target
        if (
            k + 1 < len(behaviour)
            and behaviour[k + 1][0]["action"] == "CompleteJoin"
            and action != "CompleteJoin"
        ):
            final = behaviour[k + 1][1]
        h.choices.want = [
            h.clients[x].member_id
            for x in (final["leader"],)
            if x in CLIENTS and h.clients[x].member_id
        ]
        if action == "JoinGroup":
            group, member = h.group, h.is_member(c)
            rebalancing = h.state() == "PreparingRebalance"
            leader_in_stable = (
                member and h.state() == "Stable" and group.leader_id == h.clients[c].member_id
            )
            steps = h.join(c, changed=member and not rebalancing and not leader_in_stable)
        elif action == "JoinGroupAnswered":
            steps = h.join(c, changed=False)
        elif action == "SyncGroup":
            steps = h.sync(c, assignment={x: target["assignment"][x] for x in CLIENTS})
        elif action == "Heartbeat":
            steps = h.heartbeat(c)
        elif action == "LeaveGroup":
            steps = h.leave(c)
        elif action == "OffsetCommit":
            steps = h.commit(c, act["withGeneration"])
        elif action == "Crash":
            steps = h.crash(c)
        elif action in ("CompleteJoin", "ExpirePendingSync"):
            steps = h.fire(action)
        elif action == "ExpireSession":
            steps = h.fire(action, c)
        else:
            raise TraceMismatch(f"step {k}: unknown action {action}")
        if action == "CompleteJoin" and not steps:
            raise TraceMismatch(
                f"step {k} CompleteJoin: the reference's join timer changed nothing"
            )
        for s in steps:
            if k >= len(behaviour):
                raise TraceMismatch(f"the reference took {s.action} beyond the behaviour's end")
            want_act, want = behaviour[k]
            if s.action != want_act["action"]:
                raise TraceMismatch(
                    f"step {k} {want_act['action']}({want_act['actor']}): the reference took {s.action}"
                )
            if _normal(s.state) != want:
                raise TraceMismatch(
                    f"step {k} {want_act['action']}({want_act['actor']}): {state_diff(VARIABLES, s.state, want)}"
                )
            k += 1
    return k - 1


def replay_simulated_behaviours(count: int, depth: int, seed: int) -> ReplaySummary:
    """``count`` behaviours of ``depth`` steps from one TLC simulation (``-seed seed``), each replayed on the reference."""
    started = time.monotonic()
    return replay_all(
        simulate(count, depth, seed),
        lambda behaviour, number: replay(behaviour, seed + number),
        seed,
        started,
        TraceMismatch,
    )
