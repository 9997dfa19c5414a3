"""Spec check of the reference's KIP-848 consumer group (reference/group/consumer) against
tla/ConsumerGroup.tla, both ways, at the bounds of ``_CONSTANTS`` below (members m1, m2
dynamic and m3, m4 static; topics t1, t2 of 2 partitions; MaxGroupEpoch 10, MaxLost 3).

``validate_random_traces`` (reference -> spec): a seeded driver plays the spec's consumer
processes against one group of the reference coordinator; TLC checks that every recorded
trace is a behaviour of the spec (tla/TraceConsumerGroup.tla). ``replay_simulated_behaviours``
(spec -> reference): TLC's random behaviours (tla/SimConsumerGroup.tla) are replayed on the
reference, which must give the same answers and reach the same state at every step.

The mapping (one vocabulary: the spec's actions are the reference's events):

- ``ConsumerGroupHeartbeat(m, sub, delivered)``: a ConsumerGroupHeartbeat v1 from process m
  with its epoch, ``sub`` and the partitions it owns, always the full request (rebalance
  timeout, subscription, owned partitions); with ``delivered`` FALSE the driver drops the
  answer. ``LeaveGroup(m)`` and ``StaticLeave(m)`` are heartbeats with epoch -1 and -2;
  ``Subscribe(m, sub)`` is the process deciding to join (no request); ``SessionTimeout(m)``
  and ``RebalanceTimeout(m)`` are the reference's timers of those names, made due now;
  ``OffsetCommit(m)`` is an OffsetCommit v9 with the process's epoch as generation id (-1
  and no member id from outside the group), ``OffsetCommitRejected`` one the reference
  refused (TLC: OffsetCommit must not be enabled).
- Member ids are the spec's member names (v1: the client chooses them); a static member's
  group.instance.id is ``i`` and its number. Partition ``(t, i)`` is the spec's ``<<t, i + 1>>``.
- Every coordinator variable is the reference group's field of the same name (a member the
  group does not hold: epochs 0, STABLE, no partitions, no subscription, no target); the
  process variables and ``acked_commit`` / ``lost`` are the driver's.
- The assignor: the spec's is any valid one. Reference -> spec runs Kafka's ``uniform``
  assignor, whose targets TLC checks are valid. Spec -> reference installs the spec's chosen
  target as the assignor for the step (as Kafka's tests install MockPartitionAssignor): the
  replay checks everything but the assignor's choice.
- Time: every request moves the clock by 1 ms, far below the session (45 s) and rebalance
  (5 min) timeouts, so no timer fires unless the driver makes it due.
- A commit from outside the group (-1) is sent only once the group exists: to an unknown
  group id it would create a classic group, which the spec does not model.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

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
from coordspec.conformance.formal.harness import validate_random_traces as validate
from coordspec.conformance.formal.tla_values import tla_value
from coordspec.conformance.formal.tlc import TlcError
from coordspec.reference.assignors import server as server_assignors
from coordspec.reference.assignors.server import GroupSpec
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.consumer import heartbeat as consumer_heartbeat
from coordspec.reference.group.consumer.state import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    from_topic_partitions,
    to_topic_partitions,
)
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.invariants import Monitor
from coordspec.reference.group.requests import (
    CommitPartition,
    CommitTopic,
    ConsumerGroupHeartbeat,
    OffsetCommit,
    Tick,
)

MEMBERS = ("m1", "m2", "m3", "m4")
STATIC = {"m3": "i3", "m4": "i4"}  # member -> group.instance.id
TOPICS = {"t1": 2, "t2": 2}
SUBSCRIPTIONS = (frozenset({"t1"}), frozenset({"t2"}), frozenset({"t1", "t2"}))
MAX_GROUP_EPOCH = 10
MAX_LOST = 3
GROUP = "g"
NONE = "none"
REBALANCE_TIMEOUT_MS = 300_000
STATES = {
    STABLE: "STABLE",
    UNREVOKED_PARTITIONS: "UNREVOKED_PARTITIONS",
    UNRELEASED_PARTITIONS: "UNRELEASED_PARTITIONS",
}
TIMERS = (consumer_heartbeat.SESSION_TIMER, consumer_heartbeat.REBALANCE_TIMER)
ARGS = ("actor", "sub", "delivered")
VARIABLES = (
    "group_epoch",
    "members",
    "subscription",
    "member_epoch",
    "previous_member_epoch",
    "member_state",
    "assigned",
    "pending_revocation",
    "target_assignment",
    "assignment_epoch",
    "client_epoch",
    "client_subscription",
    "owned",
    "acked_commit",
    "lost",
)
NO_COMMIT = {
    "member": NONE,
    "sent_epoch": -1,
    "member_epoch": -1,
    "was_member": False,
    "group_empty": True,
}
EMPTY: frozenset = frozenset()


def spec_partitions(partitions) -> frozenset:
    """Reference partitions (0-based) as the spec's (1-based)."""
    return frozenset((t, p + 1) for t, p in partitions)


def reference_partitions(partitions) -> frozenset:
    return frozenset((t, p - 1) for t, p in partitions)


@dataclass
class Client:
    """A consumer process as the spec sees it."""

    epoch: int = -1
    subscription: frozenset = EMPTY
    owned: frozenset = EMPTY  # reference partitions


@dataclass
class Harness:
    """One consumer group on the reference coordinator, the spec's processes, and the spec's
    view of both."""

    coordinator: GroupCoordinator = field(
        default_factory=lambda: GroupCoordinator(topics=TOPICS, observer=Monitor())
    )
    clients: dict[str, Client] = field(default_factory=lambda: {m: Client() for m in MEMBERS})
    acked_commit: dict = field(default_factory=lambda: dict(NO_COMMIT))
    lost: int = 0
    now_ms: int = 0
    requests: int = 0
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.steps.append(Step("Init", (NONE, EMPTY, True), self.abstract()))

    @property
    def group(self):
        return self.coordinator.consumer_groups.get(GROUP)

    def abstract(self) -> dict:
        group = self.group
        held = {} if group is None else group.members

        def of(m: str, read, absent):
            return read(held[m]) if m in held else absent

        return {
            "group_epoch": 0 if group is None else group.group_epoch,
            "members": frozenset(held),
            "subscription": {
                m: of(m, lambda x: frozenset(x.subscribed_topic_names), EMPTY) for m in MEMBERS
            },
            "member_epoch": {m: of(m, lambda x: x.member_epoch, 0) for m in MEMBERS},
            "previous_member_epoch": {
                m: of(m, lambda x: x.previous_member_epoch, 0) for m in MEMBERS
            },
            "member_state": {m: of(m, lambda x: STATES[x.state], "STABLE") for m in MEMBERS},
            "assigned": {m: of(m, lambda x: spec_partitions(x.assigned), EMPTY) for m in MEMBERS},
            "pending_revocation": {
                m: of(m, lambda x: spec_partitions(x.pending_revocation), EMPTY) for m in MEMBERS
            },
            "target_assignment": {
                m: EMPTY if group is None else spec_partitions(group.target.get(m, EMPTY))
                for m in MEMBERS
            },
            "assignment_epoch": 0 if group is None else group.assignment_epoch,
            "client_epoch": {m: c.epoch for m, c in self.clients.items()},
            "client_subscription": {m: c.subscription for m, c in self.clients.items()},
            "owned": {m: spec_partitions(c.owned) for m, c in self.clients.items()},
            "acked_commit": dict(self.acked_commit),
            "lost": self.lost,
        }

    def _record(self, action: str, m: str, sub: frozenset, delivered: bool = True) -> Step:
        step = Step(action, (m, sub, delivered), self.abstract())
        self.steps.append(step)
        return step

    def _send(self, request_type, **fields):
        self.requests += 1
        self.now_ms += 1
        request = request_type(self.requests, fields.pop("version"), self.now_ms, **fields)
        replies = [e for e in self.coordinator.handle(request) if isinstance(e, Reply)]
        if len(replies) != 1:
            raise TraceMismatch(f"{request_type.__name__} from {fields}: {len(replies)} answers")
        return replies[0].response

    def _heartbeat(self, m: str, epoch: int, **fields):
        return self._send(
            ConsumerGroupHeartbeat,
            version=1,
            group_id=GROUP,
            member_id=m,
            member_epoch=epoch,
            instance_id=STATIC.get(m),
            **fields,
        )

    # -- the spec's actions -------------------------------------------------------------

    def heartbeat(self, m: str, sub: frozenset, deliver: bool = True) -> Step:
        """ConsumerGroupHeartbeat(m, sub, delivered): the answer is dropped when ``deliver``
        is False, unless it is an error (the spec never loses those)."""
        me = self.clients[m]
        response = self._heartbeat(
            m,
            me.epoch,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            subscribed_topic_names=tuple(sorted(sub)),
            topic_partitions=to_topic_partitions(me.owned),
        )
        self.acked_commit = dict(NO_COMMIT)
        error = response.error_code
        if error != ErrorCode.NONE:
            if error != ErrorCode.UNRELEASED_INSTANCE_ID:
                if error not in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                    raise TraceMismatch(f"heartbeat from {m} answered {error.name}")
                me.epoch, me.owned = 0, EMPTY
            return self._record("ConsumerGroupHeartbeat", m, me.subscription)
        me.subscription = sub
        if not deliver:
            self.lost += 1
            return self._record("ConsumerGroupHeartbeat", m, sub, False)
        me.epoch = response.member_epoch
        if response.assignment is None:
            raise TraceMismatch(f"a full heartbeat from {m} was answered without an assignment")
        me.owned = from_topic_partitions(response.assignment)
        return self._record("ConsumerGroupHeartbeat", m, sub)

    def subscribe(self, m: str, sub: frozenset) -> Step:
        me = self.clients[m]
        me.epoch, me.subscription = 0, sub
        self.acked_commit = dict(NO_COMMIT)
        return self._record("Subscribe", m, sub)

    def leave(self, m: str, static: bool = False) -> Step:
        me = self.clients[m]
        epoch = -2 if static else -1
        response = self._heartbeat(m, epoch)
        if response.error_code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID):
            raise TraceMismatch(f"leave {epoch} from {m} answered {response.error_code.name}")
        me.epoch, me.owned = -1, EMPTY
        self.acked_commit = dict(NO_COMMIT)
        return self._record("StaticLeave" if static else "LeaveGroup", m, EMPTY)

    def fire(self, action: str, m: str) -> Step:
        """SessionTimeout(m) or RebalanceTimeout(m): the reference's timer made due now."""
        self.now_ms += 1
        self.coordinator.timers.schedule((action, GROUP, m), self.now_ms)
        self.coordinator.handle(Tick(self.now_ms))
        self.acked_commit = dict(NO_COMMIT)
        return self._record(action, m, EMPTY)

    def commit(self, m: str) -> Step:
        me = self.clients[m]
        group = self.group
        held = {} if group is None else group.members
        context = {
            "member": m,
            "sent_epoch": me.epoch,
            "member_epoch": held[m].member_epoch if m in held else -1,
            "was_member": m in held,
            "group_empty": not held,
        }
        response = self._send(
            OffsetCommit,
            version=9,
            group_id=GROUP,
            generation_id=me.epoch,
            member_id=m if me.epoch >= 0 else "",
            topics=(CommitTopic("t1", (CommitPartition(0, self.requests),)),),
        )
        errors = {p.error_code for t in response.topics for p in t.partitions}
        if errors == {ErrorCode.NONE}:
            self.acked_commit = context
            return self._record("OffsetCommit", m, EMPTY)
        return self._record("OffsetCommitRejected", m, EMPTY)


# -- reference -> spec: the random driver --------------------------------------------------------


def random_trace(seed: int, steps: int) -> list[Step]:
    """A random run of the reference within the spec's bounds, at least ``steps`` steps
    after Init (or shorter when nothing is left to do)."""
    rng = random.Random(seed)
    h = Harness()
    while len(h.steps) <= steps:
        group = h.group
        epoch = 0 if group is None else group.group_epoch
        room = epoch < MAX_GROUP_EPOCH
        held = {} if group is None else group.members
        moves: list[tuple[int, object]] = []
        for m, me in h.clients.items():
            if me.epoch >= 0:
                subs = SUBSCRIPTIONS if room else (me.subscription,)
                sub = me.subscription if rng.random() < 0.8 else rng.choice(subs)
                moves.append((8, lambda m=m, sub=sub: h.heartbeat(m, sub)))
                if h.lost < MAX_LOST:
                    moves.append((1, lambda m=m, sub=sub: h.heartbeat(m, sub, deliver=False)))
            if me.epoch == -1 and room:
                moves.append((2, lambda m=m: h.subscribe(m, rng.choice(SUBSCRIPTIONS))))
            if me.epoch > 0:
                if room:
                    moves.append((1, lambda m=m: h.leave(m)))
                if m in STATIC:
                    moves.append((1, lambda m=m: h.leave(m, static=True)))
            if me.epoch != 0 and (me.epoch > 0 or group is not None):
                moves.append((2, lambda m=m: h.commit(m)))
            if m in held:
                member = held[m]
                if room or me.epoch < 0:  # past the bound, only a member no process heartbeats
                    moves.append((1 if room else 3, lambda m=m: h.fire("SessionTimeout", m)))
                if room and member.state == UNREVOKED_PARTITIONS and member.member_epoch != -2:
                    moves.append((2, lambda m=m: h.fire("RebalanceTimeout", m)))
        if not moves:
            break
        rng.choices([move for _, move in moves], [w for w, _ in moves])[0]()
    return h.steps


def corrupt_epoch_jump(trace: list[Step]) -> tuple[list[Step], int]:
    """The first group epoch bump jumps by 2 instead (and stays 1 ahead): (trace, 1-based
    index of the record changed)."""
    out = [Step(s.action, s.args, dict(s.state)) for s in trace]
    for k in range(1, len(out)):
        if out[k].state["group_epoch"] > out[k - 1].state["group_epoch"]:
            for s in out[k:]:
                s.state["group_epoch"] += 1
            return out, k + 1
    raise ValueError("the trace never bumps the group epoch")


def corrupt_stale_commit(trace: list[Step]) -> tuple[list[Step], int] | None:
    """A commit the reference refused from a member of the group (a stale epoch), recorded
    as acknowledged instead."""
    for k, s in enumerate(trace):
        m = s.args[0]
        before = trace[k - 1].state
        if s.action != "OffsetCommitRejected" or m not in before["members"]:
            continue
        commit = {
            "member": m,
            "sent_epoch": before["client_epoch"][m],
            "member_epoch": before["member_epoch"][m],
            "was_member": True,
            "group_empty": False,
        }
        out = [Step(x.action, x.args, dict(x.state)) for x in trace[: k + 1]]
        out[k].action = "OffsetCommit"
        out[k].state["acked_commit"] = commit
        return out, k + 1
    return None


# -- TLA+ values ----------------------------------------------------------------------------------

_MODEL_VALUES = frozenset(MEMBERS + tuple(TOPICS))
_SHARED = VARIABLES[2:9] + VARIABLES[10:14]  # the functions: few distinct values, named once


def tla(value) -> str:
    """Python -> TLA+: members and topics are model values; a partition is a pair."""
    return tla_value(value, _MODEL_VALUES)


def trace_module(traces: list[list[Step]]) -> str:
    rows = trace_rows(traces, VARIABLES, lambda name, value: tla(value), tla)
    return trace_data_module(
        rows, [*VARIABLES, "action", *ARGS], [*MEMBERS, *TOPICS], [*_SHARED, "sub"]
    )


_CONSTANTS = f"""CONSTANTS
    m1 = m1
    m2 = m2
    m3 = m3
    m4 = m4
    t1 = t1
    t2 = t2
    Members = {{m1, m2, m3, m4}}
    StaticMembers = {{m3, m4}}
    Topics = {{t1, t2}}
    PartitionsPerTopic = 2
    MaxGroupEpoch = {MAX_GROUP_EPOCH}
    MaxLost = {MAX_LOST}
    BugAssignUnreleased = FALSE
    BugEpochPerHeartbeat = FALSE
    BugCommitWithoutEpochCheck = FALSE
    BugNoBumpOnLeave = FALSE
"""


def check_traces(traces: list[list[Step]]) -> TraceCheck:
    """One TLC run: is every trace a behaviour of ConsumerGroup?"""
    return check_trace_data(
        "ConsumerGroup",
        trace_module(traces),
        _CONSTANTS + "INIT TraceInit\nNEXT TraceNext\nINVARIANT StartsInInit\n",
        traces,
    )


def validate_random_traces(count: int, steps: int, seed: int) -> RandomTraceSummary:
    """``count`` random reference runs of at least ``steps`` steps, checked by TLC in one run."""
    return validate(
        lambda run: random_trace(run, steps), check_traces, count, steps, seed, count * 3
    )


# -- spec -> reference: TLC simulation replayed ----------------------------------------------------


def _normal(value):
    """A parsed TLC value in the harness's shapes: a partition <<t, i>> is a pair."""
    if isinstance(value, frozenset):
        return frozenset(_normal(v) for v in value)
    if isinstance(value, dict):
        if set(value) == {1, 2} and isinstance(value[2], int):
            return (value[1], value[2])
        return {k: _normal(v) for k, v in value.items()}
    return value


def _spec_state(values: dict) -> dict:
    return {name: _normal(values[name]) for name in VARIABLES} | {"act": _normal(values["act"])}


def simulate(count: int, depth: int, seed: int) -> list[list[tuple[dict, dict]]]:
    """``count`` behaviours of the spec of at most ``depth`` steps, from one TLC simulation
    run: each a list of (act, spec state) with Init first."""
    behaviours = simulate_behaviours(
        "ConsumerGroup", _CONSTANTS, count, depth, seed, VARIABLES, _spec_state
    )[:count]
    if len(behaviours) != count:
        raise TlcError(f"simulation seed {seed}: expected {count} behaviours")
    return [[(s["act"], _state(s)) for _, s in b] for b in behaviours]


def _state(s: dict) -> dict:
    return {name: s[name] for name in VARIABLES}


@contextlib.contextmanager
def assignor_choosing(target: dict) -> Iterator[None]:
    """Every server assignor answers ``target`` (spec partitions by member) for this step,
    as Kafka's tests install MockPartitionAssignor."""

    def chosen(spec: GroupSpec) -> dict[str, dict[str, frozenset[int]]]:
        out: dict[str, dict[str, frozenset[int]]] = {m: {} for m in spec.members}
        for m in spec.members:
            for topic, p in reference_partitions(target[m]):
                out[m][topic] = out[m].get(topic, frozenset()) | {p}
        return out

    original = dict(server_assignors.ASSIGNORS)
    server_assignors.ASSIGNORS.update(dict.fromkeys(original, chosen))
    try:
        yield
    finally:
        server_assignors.ASSIGNORS.update(original)


def replay(behaviour: list[tuple[dict, dict]]) -> int:
    """Replay a spec behaviour on the reference; raise TraceMismatch at the first step whose
    state (answers included: the process's epoch and partitions) differs."""
    h = Harness()
    if h.steps[0].state != behaviour[0][1]:
        diff = state_diff(VARIABLES, h.steps[0].state, behaviour[0][1])
        raise TraceMismatch(f"initial states differ: {diff}")
    for k, (act, want) in enumerate(behaviour[1:], start=1):
        action, m = act["action"], act["actor"]
        if action == "ConsumerGroupHeartbeat":
            with assignor_choosing(want["target_assignment"]):
                step = h.heartbeat(m, act["sub"], act["delivered"])
        elif action == "Subscribe":
            step = h.subscribe(m, act["sub"])
        elif action in ("LeaveGroup", "StaticLeave"):
            step = h.leave(m, static=action == "StaticLeave")
        elif action in TIMERS:
            step = h.fire(action, m)
        elif action == "OffsetCommit":
            step = h.commit(m)
        else:
            raise TraceMismatch(f"step {k}: unknown action {action}")
        if step.action != action:
            raise TraceMismatch(f"step {k} {action}({m}): the reference took {step.action}")
        if step.state != want:
            raise TraceMismatch(
                f"step {k} {action}({m}): {state_diff(VARIABLES, step.state, want)}"
            )
    return len(behaviour) - 1


def replay_behaviours(behaviours: list[list[tuple[dict, dict]]], seed: int) -> ReplaySummary:
    """Replay each behaviour (of the simulation run with ``-seed seed``) on the reference."""
    started = time.monotonic()
    return replay_all(behaviours, lambda b, number: replay(b), seed, started, TraceMismatch)


def replay_simulated_behaviours(count: int, depth: int, seed: int) -> ReplaySummary:
    """``count`` behaviours of at most ``depth`` steps from one TLC simulation (``-seed
    seed``), each replayed on the reference."""
    return replay_behaviours(simulate(count, depth, seed), seed)
