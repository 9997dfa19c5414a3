"""Spec check of the replication model (reference/replication) against
tla/IsrVersionedWrites.tla: one partition on three brokers, at the CI bounds.

``validate_random_traces`` (reference -> spec): a seeded driver plays the :class:`Cluster`
at the spec's granularity; TLC checks that every recorded trace is a behaviour of the spec
(tla/TraceIsrVersionedWrites.tla). ``replay_simulated_behaviours`` (spec -> reference): TLC's
random behaviours (tla/SimIsrVersionedWrites.tla, constrained to the model's choices) are
replayed on the model, each free step tried against every driver move that may start with
it. The mapping, the model/spec differences the driver steers around, and what these checks
found, are in tla/README.md.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import time
from collections.abc import Sequence

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
from coordspec.reference.replication.broker import Broker
from coordspec.reference.replication.cluster import Cluster
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import ProduceAcked
from coordspec.reference.replication.events import BrokerTick, ControllerStartup, FetchResponse
from coordspec.reference.replication.messages import LeaderAndIsr
from coordspec.reference.replication.partition import Partition, Role
from coordspec.reference.replication.znodes import (
    NO_LEADER,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    broker_path,
    partition_path,
    partitions_path,
    state_path,
    topic_path,
)
from coordspec.reference.substeps import Unobserved
from coordspec.reference.zookeeper import Create, ZooKeeperConfig

BROKERS = (1, 2, 3)
NAME = {1: "b1", 2: "b2", 3: "b3"}
NONE = "none"
TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
MIN_ISR = 2
BOUNDS = {
    "MaxRecords": 2,
    "MaxLeaderEpoch": 2,
    "MaxControllerEpoch": 2,
    "MaxVersion": 4,
    "MaxFaults": 1,
}
LAG_MS = 1_000
CONFIG = ReplicationConfig(
    min_insync_replicas=MIN_ISR, replica_lag_time_max_ms=LAG_MS, zookeeper_session_timeout_ms=10**9
)
ZK = ZooKeeperConfig(tick_time_ms=500, max_session_timeout_ms=10**9)
ARGS = ("actor", "other")  # Step.args: other is the follower of ShrinkIsr / ExpandIsr, else "none"
VARIABLES = (
    "controller",
    "controllerEpoch",
    "session",
    "partState",
    "zkVersion",
    "brokerState",
    "ctrlEpochOf",
    "seenCtrlEpoch",
    "view",
    "fetched",
    "log",
    "hw",
    "lisr",
    "lastWrite",
    "committed",
    "faults",
)
NO_VIEW = {
    "leader": NONE,
    "leaderEpoch": -1,
    "isr": frozenset(),
    "controllerEpoch": 0,
    "zkVersion": -1,
}


# -- the reference, with controller candidacies held back --------------------------------------------------


class HeldController(Controller):
    """A controller whose candidacy waits for the driver."""

    def __init__(self, broker_id, config=None):
        super().__init__(broker_id, config)
        self.held: ControllerStartup | None = None

    def handle(self, event):
        if isinstance(event, ControllerStartup) and not getattr(self, "_releasing", False):
            self.held = event
            return []
        return super().handle(event)

    def release(self, now_ms: int):
        self.held, self._releasing = None, True
        try:
            return super().handle(ControllerStartup(now_ms))
        finally:
            self._releasing = False


class HeldBroker(Broker):
    def __init__(self, broker_id, config=None, *, logs=None):
        super().__init__(broker_id, config, logs=logs)
        self.controller = HeldController(broker_id, self.config)


class Harness(Unobserved):
    """One partition on three brokers, driven at the spec's granularity."""

    def __init__(self) -> None:
        self.cluster = Cluster(
            list(BROKERS), CONFIG, zookeeper=ZK, broker_factory=HeldBroker, substeps=self
        )
        for op in (
            Create(topic_path(TOPIC), TopicAssignment.of({0: BROKERS}).encode()),
            Create(partitions_path(TOPIC)),
            Create(partition_path(TP)),
            Create(state_path(TP), PartitionState(NO_LEADER, 0, BROKERS, 0).encode()),
        ):
            self.cluster._admin(op, "seed")
        self.fetched: dict = dict.fromkeys(BROKERS)  # the role at which it last fetched
        self.hw = dict.fromkeys(BROKERS, 0)
        self.faults = 0
        self.lisr: set = set()
        self.written: set = (
            set()
        )  # (controller epoch, leader epoch, zk_version) of controller writes
        self.observing = False
        self._cuts: list = []
        self.steps: list[Step] = [Step("Init", (NONE, NONE), self.abstract())]

    # -- the reference's sub-steps (reference/substeps.py), where a move is cut --------------------------------

    def started(self, action: str, subject: object) -> None:
        """A ChangeLeaders round or a high watermark advance begins: what came before is a step."""
        if self.observing:
            self.cut(None)

    def ended(self, action: str, subject: object, effects: Sequence[object]) -> None:
        if action != "AdvanceHighWatermark" or not self.observing or not effects:
            return
        assert isinstance(subject, Partition)
        self.hw[subject.broker_id] = subject.log.high_watermark
        for (
            effect
        ) in effects:  # the Cluster records acks as it carries the effects out: here, at once
            if isinstance(effect, ProduceAcked):
                self.cluster.committed.setdefault(subject.tp, {})[effect.offset] = (
                    subject.log.records[effect.offset]
                )
        self.cut(("AdvanceHighWatermark", NAME[subject.broker_id], NONE))

    # -- the abstraction ----------------------------------------------------------------------------------

    def _view(self, b: int) -> dict:
        slot = self.cluster.slots[b]
        part = slot.broker.partitions.get(TP) if slot.broker is not None else None
        if part is None:
            return dict(NO_VIEW)
        leader = NAME[part.leader] if part.role != Role.NONE and part.leader != NO_LEADER else NONE
        return {
            "leader": leader,
            "leaderEpoch": part.leader_epoch,
            "isr": frozenset(NAME[r] for r in part.isr),
            "controllerEpoch": max(part.controller_epoch, 0),
            "zkVersion": part.zk_version,
        }

    def _request_record(self, request: LeaderAndIsr, d) -> tuple:
        return (
            request.controller_epoch,
            NAME[d.leader] if d.leader != NO_LEADER else NONE,
            d.leader_epoch,
            frozenset(NAME[r] for r in d.isr),
            d.controller_epoch,
            d.zk_version,
        )

    def _genuine(self, record: tuple) -> bool:
        return record[0] == record[4] and (record[4], record[2], record[5]) in self.written

    def abstract(self) -> dict:
        c = self.cluster
        state, version = c.published()[TP]
        controller = c.controller_id()
        lisr = set(self.lisr)
        for message in c.in_flight:
            if isinstance(message.request, LeaderAndIsr):
                for d in message.request.partitions:
                    record = self._request_record(message.request, d)
                    if self._genuine(record):
                        lisr.add(record)
        writes = c.state_writes
        brokers = {}
        for b in BROKERS:
            slot = c.slots[b]
            broker = slot.broker
            log = slot.logs.get(TP)
            brokers[b] = {
                "session": c.zk.tree.node(broker_path(b)) is not None,
                "brokerState": "down" if broker is None else ("paused" if slot.paused else "up"),
                "ctrlEpochOf": broker.controller.controller_epoch
                if broker is not None and broker.controller.active
                else 0,
                "seenCtrlEpoch": max(broker.controller_epoch, 0) if broker is not None else 0,
                "view": self._view(b),
                "log": tuple(r.leader_epoch for r in log.records) if log else (),
            }
        return {
            "controller": NAME[controller] if controller is not None else NONE,
            "controllerEpoch": c.controller_epoch() or 0,
            "session": {NAME[b]: brokers[b]["session"] for b in BROKERS},
            "partState": {
                "leader": NAME[state.leader] if state.leader != NO_LEADER else NONE,
                "leaderEpoch": state.leader_epoch,
                "isr": frozenset(NAME[r] for r in state.isr),
                "controllerEpoch": state.controller_epoch,
            },
            "zkVersion": version,
            "brokerState": {NAME[b]: brokers[b]["brokerState"] for b in BROKERS},
            "ctrlEpochOf": {NAME[b]: brokers[b]["ctrlEpochOf"] for b in BROKERS},
            "seenCtrlEpoch": {NAME[b]: brokers[b]["seenCtrlEpoch"] for b in BROKERS},
            "view": {NAME[b]: brokers[b]["view"] for b in BROKERS},
            "fetched": {
                NAME[b]: self.fetched[b] is not None and self.fetched[b] == self._role(b)
                for b in BROKERS
            },
            "log": {NAME[b]: brokers[b]["log"] for b in BROKERS},
            "hw": {NAME[b]: self.hw[b] for b in BROKERS},
            "lisr": frozenset(lisr),
            "lastWrite": {
                "expected": writes[-1].expected_version,
                "before": writes[-1].version_before,
            }
            if writes
            else {"expected": 0, "before": 0},
            "committed": frozenset(
                (o + 1, r.leader_epoch) for o, r in c.committed.get(TP, {}).items()
            ),
            "faults": self.faults,
        }

    # -- recording ----------------------------------------------------------------------------------------

    def cut(self, label) -> None:
        """Observe the model now; ``label`` names the spec step that ends here (None: the move's own)."""
        self._sync_ghosts()
        self._cuts.append((label, self.abstract()))

    def _sync_ghosts(self) -> None:
        c = self.cluster
        state, version = c.published()[TP]
        if state.controller_epoch > 0 and all(w[1] != state.leader_epoch for w in self.written):
            self.written.add((state.controller_epoch, state.leader_epoch, version))
        for message in c.in_flight:
            if isinstance(message.request, LeaderAndIsr):
                for d in message.request.partitions:
                    record = self._request_record(message.request, d)
                    if self._genuine(record):
                        self.lisr.add(record)
        for b in BROKERS:
            log = c.slots[b].logs.get(TP)
            self.hw[b] = min(self.hw[b], len(log.records) if log else 0)

    def _drop_resends(self) -> None:
        c = self.cluster
        kept = []
        for message in c.in_flight:
            request = message.request
            if isinstance(request, LeaderAndIsr) and all(
                self._genuine(self._request_record(request, d)) for d in request.partitions
            ):
                kept.append(message)
        c.in_flight = kept

    def move(self, label: tuple, run, stutter: bool = False) -> list[Step]:
        """Run one driver move; record the spec steps it is."""
        before = self.steps[-1].state
        self._cuts = []
        self.observing = True
        try:
            run()
            self._sync_ghosts()
            self._drop_resends()
            self.cut(None)
        finally:
            self.observing = False
        steps: list[Step] = []
        prev = before
        for cut_label, state in self._cuts:
            if state == prev:
                continue
            action, actor, other = cut_label or classify(prev, state, label)
            steps.append(Step(action, (actor, other), state))
            prev = state
        if not steps and stutter:
            steps.append(Step(label[0], label[1:], before))
        self.steps.extend(steps)
        return steps

    def _role(self, b: int):
        slot = self.cluster.slots[b]
        part = slot.broker.partitions.get(TP) if slot.broker is not None else None
        return None if part is None else (part.role, part.leader, part.leader_epoch)

    # -- the driver's moves ---------------------------------------------------------------------------------

    def stand(self, b: int) -> list[Step]:
        """Broker b stands for controller (its held candidacy, or the /controller watch)."""
        c = self.cluster
        slot = c.slots[b]

        def run():
            ctrl = slot.broker.controller
            if ctrl.held is not None:
                c._run(b, slot.broker._from_controller(ctrl.release(c.now_ms)))
            else:
                c.deliver_watches(b)

        return self.move(("ElectController", NAME[b], NONE), run)

    def controller_job(self, b: int) -> list[Step]:
        return self.move(("ElectLeader", NAME[b], NONE), lambda: self.cluster.deliver_watches(b))

    def deliver(self, index: int) -> list[Step]:
        b = self.cluster.in_flight[index].destination
        return self.move(("LeaderAndIsr", NAME[b], NONE), lambda: self.cluster.deliver(index))

    def produce(self, b: int) -> list[Step]:
        return self.move(("Produce", NAME[b], NONE), lambda: self.cluster.produce(b, TP))

    def replicate(self, f: int) -> list[Step]:
        c = self.cluster
        follower = c.slots[f].broker
        part = follower.partitions[TP]
        leader_id = part.leader

        def fetch(apply_answer: bool, one_record: bool = True) -> bool:
            request = follower.fetch_request(c.now_ms, TP)
            leader = c.slots.get(leader_id)
            if request is None or leader is None or not leader.running:
                return False
            responses = []
            others = []
            for effect in leader.broker.handle(request):
                (responses if isinstance(effect, FetchResponse) else others).append(effect)
            c._run(leader_id, others)
            served = bool(responses) and responses[0].error is None
            if apply_answer and served:
                self.cut(None)  # the leader's side (its HW, an ISR write) before the follower's
                response = responses[0]
                if one_record and len(response.records) > 1:
                    response = dataclasses.replace(response, records=response.records[:1])
                diverging = response.diverging is not None
                follower.handle(response)
                self.fetched[f] = self._role(f)
                if diverging:
                    fetch(True, True)
            return served

        served: list[bool] = []

        def run():
            start = len(self._cuts)
            if fetch(True):
                served.append(True)
                self.cut(("Replicate", NAME[f], NONE))
                self._replicate_first(f, start)
                fetch(
                    False
                )  # the next fetch tells the leader the follower's log end; its answer is lost

        steps = self.move(("Replicate", NAME[f], NONE), run, stutter=True)
        if not served and steps and steps[-1].state == self.steps[-2].state:
            self.steps.pop()
            return []
        return steps

    def _replicate_first(self, f: int, start: int) -> None:
        """The leader's side of a fetch (its HW advance, an ISR expansion) comes before the
        follower's (Replicate) in the model, after it in the spec, whose leader acts only on
        followers that have fetched. The two touch different variables: reorder them, the
        follower's log, hw and fetched taken into every leader-side state."""
        before = self.steps[-1].state
        serve = [(label, state) for label, state in self._cuts[start:-1]]
        replicated = self._cuts[-1][1]
        if all(state == before for _, state in serve):
            return
        name = NAME[f]

        def with_follower(state: dict) -> dict:
            out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in state.items()}
            for var in ("log", "hw", "fetched"):
                out[var][name] = replicated[var][name]
            return out

        self._cuts[start:] = (
            [(("Replicate", name, NONE), with_follower(before))]
            + [(label, with_follower(state)) for label, state in serve]
            + [(None, replicated)]
        )

    def shrink(self, leader: int, f: int, at_ms: int) -> list[Step]:
        c = self.cluster

        def run():  # the leader's lag check, as of ``at_ms`` (the cluster's clock stays: nothing else times out)
            broker = c.slots[leader].broker
            c._run(leader, broker.handle(BrokerTick(at_ms)))

        return self.move(("ShrinkIsr", NAME[leader], NAME[f]), run)

    def crash(self, b: int) -> list[Step]:
        def run():
            self.faults += 1
            self.cluster.crash(b)

        return self.move(("CrashBroker", NAME[b], NONE), run)

    def pause(self, b: int) -> list[Step]:
        def run():
            self.faults += 1
            self.cluster.pause(b)

        return self.move(("PauseBroker", NAME[b], NONE), run)

    def resume(self, b: int) -> list[Step]:
        c = self.cluster
        slot = c.slots[b]

        def run():
            expired = slot.expired
            slot.paused = False
            slot.expired = False
            if expired:
                self.cut(("ResumeBroker", NAME[b], NONE))
                c._renew_session(b)
                self.cut(("StartBroker", NAME[b], NONE))

        return self.move(("ResumeBroker", NAME[b], NONE), run)

    def expire(self, b: int) -> list[Step]:
        return self.move(("ExpireSession", NAME[b], NONE), lambda: self.cluster.expire_session(b))


def classify(prev: dict, state: dict, default: tuple) -> tuple:
    """The spec step from ``prev`` to ``state`` where no hook named it."""
    if prev["controller"] != state["controller"] and state["controller"] != NONE:
        return ("ElectController", state["controller"], NONE)
    if prev["zkVersion"] != state["zkVersion"]:
        old, new = prev["partState"], state["partState"]
        if new["leaderEpoch"] != old["leaderEpoch"]:
            actor = (
                default[1]
                if default[0] in ("ElectController", "ElectLeader")
                else next((b for b, e in state["ctrlEpochOf"].items() if e > 0), default[1])
            )
            return ("ElectLeader", actor, NONE)
        leader = new["leader"]
        if new["isr"] < old["isr"]:
            return ("ShrinkIsr", leader, min(old["isr"] - new["isr"]))
        return (
            "ExpandIsr",
            leader,
            min(new["isr"] - old["isr"]) if new["isr"] - old["isr"] else NONE,
        )
    if default[0] != "LeaderAndIsr":
        for b, v in prev["view"].items():
            if (
                v["leader"] == b
                and state["view"][b] != v
                and state["brokerState"][b] == prev["brokerState"][b]
            ):
                return ("StepDown", b, NONE)
    return default


# -- reference -> spec: the random driver --------------------------------------------------------------------


def _within_bounds(state: dict) -> bool:
    return (
        state["partState"]["leaderEpoch"] <= BOUNDS["MaxLeaderEpoch"]
        and state["zkVersion"] <= BOUNDS["MaxVersion"]
        and state["controllerEpoch"] <= BOUNDS["MaxControllerEpoch"]
        and state["faults"] <= BOUNDS["MaxFaults"]
        and all(len(x) <= BOUNDS["MaxRecords"] for x in state["log"].values())
    )


def _known_difference(move: str, before: dict, steps: list[Step]) -> str | None:
    """A move the model takes and the spec forbids, for a documented reason (tla/README.md)."""
    # A leader that stays leader at a newer leader epoch (the controller dropped a dead ISR member)
    # advances its HW at once with what its followers' fetches at the older epoch told it, and
    # acknowledges its records of the older epoch (Kafka 2.6 makeLeader -> maybeIncrementLeaderHW).
    # The spec's AdvanceHighWatermark waits for fetches at the new epoch and commits records of
    # the current epoch only.
    # The same leader keeps what its followers' fetches at the older epoch told it: a fetch at the
    # new epoch may then advance the HW before the other ISR members fetched at the new epoch.
    prev = before
    for s in steps:
        if s.action == "AdvanceHighWatermark":
            leader = s.args[0]
            epoch = prev["view"][leader]["leaderEpoch"]
            others = prev["view"][leader]["isr"] - {leader}
            if not all(
                prev["view"][m]["leader"] == leader
                and prev["view"][m]["leaderEpoch"] == epoch
                and prev["fetched"][m]
                for m in others
            ):
                return (
                    "(a) HW advanced on fetches at an older epoch"
                    if move != "deliver"
                    else "(a) HW advanced on a LeaderAndIsr"
                )
            if any(e != epoch for _, e in s.state["committed"] - prev["committed"]):
                return "(a) a record of an older epoch acknowledged"
            # The model's leader counts the log end a fetch reported, before the fetch's answer
            # was appended; the spec's reads the follower's log: the first fetch of a follower at a
            # new leadership can move the model's HW to less than the spec's.
            if s.state["hw"][leader] != min(len(prev["log"][m]) for m in others | {leader}):
                return "(b) HW below the least log end of the ISR"
        prev = s.state
    return None


def _in_sync(state: dict, f: str, leader: str) -> bool:
    vf, vl = state["view"][f], state["view"][leader]
    return (
        vf["leader"] == leader
        and vf["leaderEpoch"] == vl["leaderEpoch"]
        and state["fetched"][f]
        and len(state["log"][f]) == len(state["log"][leader])
    )


def _moves(h: Harness, rng: random.Random) -> list[tuple[int, str, tuple]]:
    c = h.cluster
    state = h.steps[-1].state
    moves: list[tuple[int, str, tuple]] = []
    for b in BROKERS:
        slot = c.slots[b]
        if slot.broker is None:
            continue
        if slot.paused:
            # a zombie re-registers only once the controller has handled its expiry: the model's
            # controller then sees a bounce (KIP-380) and drops it from the ISR, which the spec's
            # Decisions (registrations only) forbid
            busy = any(
                s.broker is not None and s.broker.controller.active and s.inbox
                for s in c.slots.values()
            )
            if not (slot.expired and busy):
                moves.append((2, "resume", (b,)))
            if state["session"][NAME[b]]:
                moves.append((2, "expire", (b,)))
            continue
        ctrl = slot.broker.controller
        if ctrl.held is not None or (slot.inbox and not ctrl.active):
            moves.append((6, "stand", (b,)))
        if ctrl.active and slot.inbox:
            moves.append((6, "controller_job", (b,)))
        part = slot.broker.partitions.get(TP)
        if part is not None and part.role == Role.LEADER:
            moves.append((3, "produce", (b,)))
            for f in part.isr:
                if f != b and not _in_sync(state, NAME[f], NAME[b]):
                    at = part.followers[f].last_caught_up_ms + LAG_MS + 1
                    if part.isr_to_shrink(at, LAG_MS) == tuple(r for r in part.isr if r != f):
                        moves.append((2, "shrink", (b, f, at)))
        if part is not None and part.role == Role.FOLLOWER:
            leader = c.slots.get(part.leader)
            lpart = (
                leader.broker.partitions.get(TP) if leader is not None and leader.running else None
            )
            behind = (
                lpart is None or len(lpart.log.records) != len(part.log.records) or not h.fetched[b]
            )
            moves.append((6 if behind else 1, "replicate", (b,)))
        moves.append((1, "crash", (b,)))
        moves.append((1, "pause", (b,)))
    for b in BROKERS:
        if c.slots[b].broker is None and state["session"][NAME[b]]:
            moves.append((2, "expire", (b,)))
    for index in c.deliverable():
        moves.append((5, "deliver", (index,)))
    return moves


def random_trace(
    seed: int, steps: int, tries: int = 400, skipped: dict[str, int] | None = None
) -> list[Step]:
    """A random run of the model, recorded as at least ``steps`` spec steps after Init (or
    fewer if no move is left within the bounds)."""
    rng = random.Random(seed)
    h = Harness()
    for _ in range(tries):
        if len(h.steps) > steps:
            break
        moves = _moves(h, rng)
        while moves:
            k = rng.choices(range(len(moves)), [w for w, _, _ in moves])[0]
            _, name, args = moves.pop(k)
            trial = copy.deepcopy(h)
            new = getattr(trial, name)(*args)
            if not all(_within_bounds(s.state) for s in new):
                continue
            reason = _known_difference(name, h.steps[-1].state, new)
            if reason is None:
                h = trial
                break
            if skipped is not None:
                skipped[reason] = skipped.get(reason, 0) + 1
        else:
            break
        # time passes between moves (1 ms), so followers' catch-up times differ
        before = h.abstract()
        h.cluster.tick(1)
        if h.abstract() != before:
            raise TraceMismatch("a millisecond passing changed the state")
    return h.steps


def _copy(trace: list[Step]) -> list[Step]:
    return [Step(s.action, s.args, copy.deepcopy(s.state)) for s in trace]


def corrupt_version_jump(trace: list[Step]) -> tuple[list[Step], int]:
    """The first partition-state write moves zk_version by 2 (and it stays 1 ahead):
    (trace, 1-based index of the bad record)."""
    out = _copy(trace)
    for k in range(1, len(out)):
        if out[k].state["zkVersion"] > out[k - 1].state["zkVersion"]:
            for s in out[k:]:
                s.state["zkVersion"] += 1
            return out, k + 1
    raise ValueError("the trace writes no partition state")


def corrupt_stale_isr_write(trace: list[Step]) -> tuple[list[Step], int] | None:
    """A leader's ISR write recorded as accepted on a stale expected version (the bug
    NoWriteWithStaleVersion catches): (trace, 1-based index) or None if the trace has none."""
    for k, s in enumerate(trace):
        if s.action in ("ShrinkIsr", "ExpandIsr"):
            out = _copy(trace)
            old = out[k].state["lastWrite"]
            stale = {"expected": old["expected"] - 1, "before": old["before"]}
            for x in out[k:]:
                if x.state["lastWrite"] != old:
                    break
                x.state["lastWrite"] = stale
            return out, k + 1
    return None


# -- TLA+ values ------------------------------------------------------------------------------------------------


def tla(value) -> str:
    """Python -> TLA+: broker names are model values, other strings are strings."""
    return tla_value(value, frozenset(NAME.values()))


def _lisr_tla(record: tuple) -> str:
    ce, leader, epoch, isr, pce, version = record
    return (
        f"[controllerEpoch |-> {ce}, partition |-> [leader |-> {tla(leader)}, leaderEpoch |-> {epoch}, "
        f"isr |-> {tla(isr)}, controllerEpoch |-> {pce}, zkVersion |-> {version}]]"
    )


def _value(name: str, value) -> str:
    if name == "lisr":
        return "{" + ", ".join(sorted(_lisr_tla(r) for r in value)) + "}"
    return tla(value)


def trace_module(traces: list[list[Step]]) -> str:
    rows = trace_rows(traces, VARIABLES, _value, tla)
    return trace_data_module(rows, [*VARIABLES, "action", *ARGS], ["b1", "b2", "b3"], VARIABLES)


_CONSTANTS = """CONSTANTS
    b1 = b1
    b2 = b2
    b3 = b3
    Brokers = {b1, b2, b3}
    MinInsyncReplicas = 2
    MaxRecords = 2
    MaxLeaderEpoch = 2
    MaxControllerEpoch = 2
    MaxVersion = 4
    MaxFaults = 1
    UncleanLeaderElection = FALSE
    BugStaleVersionWrite = FALSE
    BugElectWithoutIsrCheck = FALSE
    BugShrinkIsrBeforeWrite = FALSE
    BugSkipControllerEpochCheck = FALSE
"""


def check_traces(traces: list[list[Step]]) -> TraceCheck:
    """One TLC run: is every trace a behaviour of IsrVersionedWrites?"""
    return check_trace_data(
        "IsrVersionedWrites",
        trace_module(traces),
        _CONSTANTS + "INIT TraceInit\nNEXT TraceNext\nINVARIANT StartsInInit\n",
        traces,
    )


def validate_random_traces(count: int, steps: int, seed: int) -> RandomTraceSummary:
    """``count`` random runs of the model of at least ``steps`` spec steps each, checked by TLC
    in one run; ``skipped`` counts the moves not taken (the model/spec differences)."""
    skipped: dict[str, int] = {}
    summary = validate(
        lambda run: random_trace(run, steps, skipped=skipped), check_traces, count, steps, seed
    )
    summary.skipped = skipped
    return summary


# -- spec -> reference: TLC simulation replayed ------------------------------------------------------------


def _seq(value) -> tuple:
    """A parsed sequence (a dict keyed 1..n) as the tuple Harness.abstract gives."""
    return tuple(value[j] for j in sorted(value))


def _spec_view(v: dict) -> dict:
    return {
        "leader": v["leader"],
        "leaderEpoch": v["leaderEpoch"],
        "isr": frozenset(v["isr"]),
        "controllerEpoch": v["controllerEpoch"],
        "zkVersion": v["zkVersion"],
    }


def _spec_state(v: dict) -> dict:
    """A state TLC printed, parsed -> the spec state in the shape Harness.abstract gives."""
    part = v["partState"]
    state = {
        "controller": v["controller"],
        "controllerEpoch": v["controllerEpoch"],
        "session": v["session"],
        "partState": {
            "leader": part["leader"],
            "leaderEpoch": part["leaderEpoch"],
            "isr": frozenset(part["isr"]),
            "controllerEpoch": part["controllerEpoch"],
        },
        "zkVersion": v["zkVersion"],
        "brokerState": v["brokerState"],
        "ctrlEpochOf": v["ctrlEpochOf"],
        "seenCtrlEpoch": v["seenCtrlEpoch"],
        "view": {b: _spec_view(x) for b, x in v["view"].items()},
        "fetched": v["fetched"],
        "log": {b: _seq(x) for b, x in v["log"].items()},
        "hw": v["hw"],
        "lisr": frozenset(
            (
                r["controllerEpoch"],
                r["partition"]["leader"],
                r["partition"]["leaderEpoch"],
                frozenset(r["partition"]["isr"]),
                r["partition"]["controllerEpoch"],
                r["partition"]["zkVersion"],
            )
            for r in v["lisr"]
        ),
        "lastWrite": v["lastWrite"],
        "committed": frozenset(_seq(x) for x in v["committed"]),
        "faults": v["faults"],
    }
    return state


def simulate(count: int, depth: int, seed: int) -> list[list[tuple[dict, dict]]]:
    """``count`` behaviours of the constrained spec (at most ``depth`` steps each), from one TLC
    simulation run: lists of (act, spec state), Init first."""
    behaviours = simulate_behaviours(
        "IsrVersionedWrites", _CONSTANTS, count, depth, seed, VARIABLES, _spec_state
    )
    if len(behaviours) < count:
        raise TlcError(f"simulation seed {seed}: {len(behaviours)} behaviours, expected {count}")
    return behaviours[:count]


def _candidates(h: Harness, action: str, actor: str, other: str) -> list[tuple[str, tuple]]:
    """The model's moves whose first spec step may be ``action(actor, other)``."""
    c = h.cluster
    b = next(x for x in BROKERS if NAME[x] == actor) if actor in NAME.values() else None
    if action == "ElectController":
        return [("stand", (b,))]
    if action == "ElectLeader":
        return [("controller_job", (b,)), ("stand", (b,))]
    if action == "LeaderAndIsr":
        return [
            ("deliver_lossy", (i,))
            for i, m in enumerate(c.in_flight)
            if m.destination == b and c.slots[b].running
        ]
    if action in ("Produce", "CrashBroker", "PauseBroker", "ExpireSession"):
        return [
            (
                {
                    "Produce": "produce",
                    "CrashBroker": "crash",
                    "PauseBroker": "pause",
                    "ExpireSession": "expire",
                }[action],
                (b,),
            )
        ]
    if action == "ResumeBroker":
        return [("resume", (b,))]
    if action == "Replicate":
        return [("replicate", (b,))]
    if action in ("ShrinkIsr", "StepDown"):
        moves: list[tuple[str, tuple]] = []
        part = c.slots[b].broker.partitions.get(TP) if c.slots[b].broker is not None else None
        if part is not None and part.role == Role.LEADER:
            for f in part.isr:
                if f != b and (action == "StepDown" or NAME[f] == other):
                    moves.append(
                        ("shrink", (b, f, part.followers[f].last_caught_up_ms + LAG_MS + 1))
                    )
        if action == "StepDown":
            moves += [("replicate", (f,)) for f in BROKERS if f != b]
        return moves
    return []


def _deliver_lossy(h: Harness, index: int) -> list[Step]:
    """Deliver request ``index``, the older ones on its connection lost (the spec allows it)."""
    c = h.cluster
    message = c.in_flight[index]
    channel = (message.source, message.destination)
    keep = [
        m for j, m in enumerate(c.in_flight) if j >= index or (m.source, m.destination) != channel
    ]
    c.in_flight = keep
    return h.deliver(keep.index(message))


def _flush(h: Harness) -> Harness:
    """Run the controllers' pending jobs that change nothing the spec sees."""
    for b in BROKERS:
        slot = h.cluster.slots[b]
        if (
            slot.broker is not None
            and not slot.paused
            and slot.inbox
            and slot.broker.controller.active
        ):
            trial = copy.deepcopy(h)
            if not trial.controller_job(b):
                h = trial
    return h


class ReplayMismatch(TraceMismatch):
    """A spec step the model cannot take: ``step`` is its index in the behaviour (Init is 0)."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step


def replay(behaviour: list[tuple[dict, dict]]) -> int:
    """Replay a spec behaviour on the model; raise ReplayMismatch at the first step it cannot take.

    At each free step of the behaviour, every move of the model that may start with it
    (``_candidates``) is tried on a copy; one must record exactly the behaviour's next steps
    (action, parameters and all sixteen variables; the last move may be cut by the behaviour's
    end), and the behaviour must go on with a free step after them."""
    h = Harness()
    if h.steps[0].state != behaviour[0][1]:
        raise ReplayMismatch(
            0, f"initial states differ: {state_diff(VARIABLES, h.steps[0].state, behaviour[0][1])}"
        )
    k = 1
    while k < len(behaviour):
        act = behaviour[k][0]
        h = _flush(h)
        label = f"step {k} {act['action']}({act['actor']}{'' if act['other'] == NONE else ', ' + act['other']})"
        tried, furthest = [], k
        for name, args in _candidates(h, act["action"], act["actor"], act["other"]):
            trial = copy.deepcopy(h)
            steps = (
                _deliver_lossy(trial, *args)
                if name == "deliver_lossy"
                else getattr(trial, name)(*args)
            )
            n = min(len(steps), len(behaviour) - k)
            got = [((s.action, *s.args), s.state) for s in steps[:n]]
            expected = [
                ((a["action"], a["actor"], a["other"]), st) for a, st in behaviour[k : k + n]
            ]
            if (
                steps
                and got == expected
                and (k + n == len(behaviour) or behaviour[k + n][0]["action"] in _FREE)
            ):
                h, k = trial, k + n
                break
            for j, (g, e) in enumerate(zip(got, expected, strict=True)):
                if g != e:
                    what = (
                        state_diff(VARIABLES, g[1], e[1])
                        if g[0] == e[0]
                        else f"the model took {g[0]}, the spec {e[0]}"
                    )
                    tried.append(f"{name}{args}: at step {k + j}: {what}")
                    furthest = max(furthest, k + j)
                    break
            else:
                tried.append(
                    f"{name}{args}: {len(steps)} steps"
                    + (
                        ""
                        if n < len(steps) or k + n == len(behaviour)
                        else f", the spec goes on with {behaviour[k + n][0]}"
                    )
                )
                furthest = max(furthest, k + n)
        else:
            raise ReplayMismatch(
                furthest,
                f"{label}: no move of the model takes it ({'; '.join(tried) or 'no candidate'})",
            )
        before = h.abstract()
        h.cluster.tick(1)
        if h.abstract() != before:
            raise ReplayMismatch(k, "a millisecond passing changed the state")
    return k - 1


def corrupt_behaviour(behaviour: list[tuple[dict, dict]], index: int) -> list[tuple[dict, dict]]:
    """A copy of ``behaviour`` whose state ``index`` has its zk_version one higher."""
    out = [(dict(a), copy.deepcopy(s)) for a, s in behaviour]
    out[index][1]["zkVersion"] += 1
    return out


_FREE = (
    "ElectController",
    "ElectLeader",
    "LeaderAndIsr",
    "Produce",
    "Replicate",
    "ShrinkIsr",
    "StepDown",
    "CrashBroker",
    "PauseBroker",
    "ResumeBroker",
    "ExpireSession",
)


def replay_simulated_behaviours(count: int, depth: int, seed: int) -> ReplaySummary:
    """``count`` behaviours from one TLC simulation (``-seed seed``), each replayed on the model."""
    started = time.monotonic()
    return replay_all(
        simulate(count, depth, seed),
        lambda behaviour, _: replay(behaviour),
        seed,
        started,
        ReplayMismatch,
    )


__all__ = [
    "Harness",
    "ReplayMismatch",
    "Step",
    "TlcError",
    "TraceMismatch",
    "check_traces",
    "random_trace",
    "replay",
    "replay_simulated_behaviours",
    "simulate",
    "validate_random_traces",
]
