"""Spec check of the failover model (reference/failover on the replication Cluster) against
tla/CoordinatorFailover.tla, at the spec's CI bounds (tla/MCCoordinatorFailover.cfg).

``validate_random_traces`` (reference -> spec): a seeded driver plays a ``FailoverCluster``;
each reference step is decomposed into spec steps (:func:`decompose`), and TLC checks that
every recorded trace is a behaviour of the spec (tla/TraceCoordinatorFailover.tla).
``replay_simulated_behaviours`` (spec -> reference): TLC's random behaviours
(tla/SimCoordinatorFailover.tla, constrained to the reference's choices) are replayed on the
reference, one reference step per free spec step. The mapping, the decomposition, the
modelling differences and what these checks found are in tla/README.md.
"""

from __future__ import annotations

import random
import time

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
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.cluster import FailoverCluster
from coordspec.reference.failover.partition import PartitionState
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.records import GroupMetadataValue, OffsetCommitValue
from coordspec.reference.group.requests import (
    Assignment,
    CommitPartition,
    CommitTopic,
    JoinGroup,
    OffsetCommit,
    Protocol,
    SyncGroup,
)
from coordspec.reference.group.requests import Tick as GroupTick
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import NO_LEADER

__all__ = ["Harness", "Step", "TraceMismatch", "check_traces", "validate_random_traces"]

BROKERS = ("b1", "b2", "b3")
IDS = {"b1": 1, "b2": 2, "b3": 3}
NAMES = {v: k for k, v in IDS.items()}
CONTROLLER = 4
PARTITIONS = ("p1",)
NONE = "none"
GROUP = "g"
TOPIC = "foo"
MAX_EPOCH, MAX_GENERATION, MAX_COMMITS = 3, 1, 2
# Step.args: a broker or "none", then ExpandIsr's follower or OffsetCommit's partition, or "none"
ARGS = ("a1", "a2")
VARIABLES = (
    "leader",
    "leaderEpoch",
    "isr",
    "view",
    "log",
    "hw",
    "status",
    "cache",
    "pending",
    "ackedGen",
    "acked",
    "commits",
    "answeredLoaded",
)
NO_VIEW = {"leader": NONE, "epoch": 0, "isr": frozenset()}
EMPTY_GROUP = {"gen": 0, "offsets": {"p1": 0}}
EXPIRE_WEIGHT = 0.4
GROUP_CONFIG = GroupConfig(initial_rebalance_delay_ms=0)


class _Cluster(FailoverCluster):
    """A FailoverCluster whose constructor stops before the offsets topic's controller work:
    the driver takes those steps itself."""

    building = True

    def settle(self) -> None:
        if not self.building:
            super().settle()


def _spec_record(batch, epoch: int) -> dict | None:
    """A log batch as a spec record; None for GM-2's empty-group record."""
    (record,) = batch  # the driver's writes are one record each
    value = record.value
    if isinstance(value, GroupMetadataValue):
        if value.generation == 0:
            return None
        return {
            "kind": "group",
            "epoch": epoch + 1,
            "gen": value.generation,
            "partition": NONE,
            "offset": 0,
        }
    if isinstance(value, OffsetCommitValue):
        return {
            "kind": "offset",
            "epoch": epoch + 1,
            "gen": 0,
            "partition": "p1",
            "offset": value.offset,
        }
    raise TraceMismatch(f"a record the spec does not model: {record!r}")


class Harness:
    """The reference cluster, one client, and the spec's view of them."""

    def __init__(self, seed: int = 0) -> None:
        self.fc = _Cluster(
            [CONTROLLER, 1, 2, 3],
            offsets_partitions=1,
            replication_factor=3,
            group_config=GROUP_CONFIG,
            seed=seed,
        )
        self.fc.building = False
        assert self.fc.cluster.controller_id() == CONTROLLER
        self.tp = self.fc.tp(0)
        self.request_ids = 0
        self.seen_replies: set = set()
        self.requests: dict[int, tuple] = {}  # request id -> (api, context)
        self.acked_gen = 0
        self.acked = 0
        self.commits = 0
        self.member_id: str | None = None  # the client's member id of its answered SyncGroup
        self.awaiting_sync = False
        self.steps: list[Step] = [Step("Init", (NONE, NONE), self.abstract())]

    # -- the abstraction ---------------------------------------------------------------

    def replica(self, b: str):
        broker = self.fc.cluster.broker(IDS[b])
        return broker.partitions.get(self.tp) if broker is not None else None

    def _log(self, b: str) -> tuple[list[dict], list[int]]:
        """The spec log of b, and for each Python offset the number of spec records before it."""
        replica = self.replica(b)
        if replica is None:
            return [], [0]
        out, before = [], []
        for record in replica.log.records:
            before.append(len(out))
            spec = _spec_record(record.value, record.leader_epoch)
            if spec is not None:
                out.append(spec)
        before.append(len(out))
        return out, before

    def abstract(self) -> dict:
        published = self.fc.cluster.published().get(self.tp)
        if published is None:
            leader, epoch, isr = NONE, 0, frozenset(BROKERS)
        else:
            state = published[0]
            leader = NAMES[state.leader] if state.leader != NO_LEADER else NONE
            epoch, isr = state.leader_epoch + 1, frozenset(NAMES[r] for r in state.isr)
        view, log, hw, status, cache = {}, {}, {}, {}, {}
        pending = set()
        for b in BROKERS:
            replica = self.replica(b)
            if replica is None or replica.leader_epoch < 0:
                view[b] = dict(NO_VIEW)
            else:
                leads = replica.role == Role.LEADER
                view[b] = {
                    "leader": NAMES.get(replica.leader, NONE),
                    "epoch": replica.leader_epoch + 1,
                    "isr": frozenset(NAMES[r] for r in replica.isr) if leads else frozenset(),
                }
            log[b], before = self._log(b)
            hw[b] = before[replica.log.high_watermark] if replica is not None else 0
            host = self.fc.hosts[IDS[b]]
            hosted = host.hosted.get(0)
            if hosted is None:
                status[b], cache[b] = "NotCoordinator", EMPTY_GROUP
                continue
            if hosted.state == PartitionState.LOADING:
                status[b], cache[b] = "Loading", EMPTY_GROUP
            else:
                status[b] = "Active"
                group = hosted.coordinator.groups.get(GROUP)
                offset = 0
                if group is not None and (TOPIC, 0) in group.offsets:
                    offset = group.offsets[(TOPIC, 0)].offset
                for python_offset in sorted(hosted.appends):
                    for record in hosted.appends[python_offset][1]:
                        if isinstance(record.value, OffsetCommitValue):
                            offset = record.value.offset
                cache[b] = {
                    "gen": group.generation_id if group is not None else 0,
                    "offsets": {"p1": offset},
                }
            for python_offset, (_, records) in hosted.appends.items():
                if _spec_record(records, 0) is not None:
                    pending.add((b, before[python_offset] + 1))
        return {
            "leader": leader,
            "leaderEpoch": epoch,
            "isr": isr,
            "view": view,
            "log": log,
            "hw": hw,
            "status": status,
            "cache": cache,
            "pending": frozenset(pending),
            "ackedGen": self.acked_gen,
            "acked": {"p1": self.acked},
            "commits": self.commits,
            "answeredLoaded": True,
        }

    # -- replies ---------------------------------------------------------------------------

    def _read_replies(self) -> None:
        for key, reply in self.fc.replies.items():
            if key in self.seen_replies:
                continue
            self.seen_replies.add(key)
            api, context = self.requests.pop(key[1])
            response = reply.response
            if api == "SyncGroup":
                self.awaiting_sync = False
                if response.error_code == ErrorCode.NONE:
                    self.acked_gen = max(self.acked_gen, context["generation"])
                    self.member_id = context["member_id"]
            elif api == "OffsetCommit":
                errors = {p.error_code for t in response.topics for p in t.partitions}
                if errors == {ErrorCode.NONE}:
                    self.acked = max(self.acked, context["offset"])

    def _send(self, b: str, cls, version: int, context: dict | None = None, **fields):
        self.request_ids += 1
        self.requests[self.request_ids] = (cls.__name__, context or {})
        self.fc.send(
            IDS[b], cls(self.request_ids, version, self.fc.now_ms, group_id=GROUP, **fields)
        )
        return self.fc.replies.get((IDS[b], self.request_ids))

    # -- recording ----------------------------------------------------------------------------

    def _record(
        self, run, label: tuple[str, str, str] | None = None, follower_first: list[str] = ()
    ) -> list[Step]:
        before = self.steps[-1].state
        run()
        self._read_replies()
        after = self.abstract()
        steps = decompose(before, after, follower_first[0] if follower_first else None)
        if label is not None:
            if steps:
                raise TraceMismatch(
                    f"{label[0]}({label[1]}): expected no change, got {[s.action for s in steps]}"
                )
            steps = [Step(label[0], label[1:], after)]
        self.steps.extend(steps)
        return steps

    # -- the driver's steps ------------------------------------------------------------------

    def expire(self, b: str) -> list[Step]:
        def run():
            self.fc.expire_session(IDS[b])
            slots = self.fc.cluster.slots
            while slots[CONTROLLER].inbox:
                self.fc.deliver_watches(CONTROLLER)

        return self._record(run)

    def deliver(self, index: int) -> list[Step]:
        cluster = self.fc.cluster

        def run():
            message = cluster.in_flight[index]
            channel = (message.source, message.destination)
            self.fc.deliver(index)
            dest = NAMES.get(message.destination)
            published = cluster.published().get(self.tp)
            while dest is not None and published is not None:
                replica = self.replica(dest)
                if replica is not None and replica.leader_epoch >= published[0].leader_epoch:
                    break
                nxt = [
                    i
                    for i in cluster.deliverable()
                    if (cluster.in_flight[i].source, cluster.in_flight[i].destination) == channel
                ]
                if not nxt:
                    break
                self.fc.deliver(nxt[0])

        return self._record(run)

    def deliver_to(self, b: str) -> list[Step]:
        """Deliver the requests in flight to b until one changes the spec's state."""
        cluster = self.fc.cluster
        while True:
            ready = [i for i in cluster.deliverable() if cluster.in_flight[i].destination == IDS[b]]
            if not ready:
                return []
            steps = self.deliver(ready[0])
            if steps:
                return steps

    def load(self, b: str) -> list[Step]:
        return self._record(lambda: self.fc.load(IDS[b], 0))

    def fetch(self, f: str) -> list[Step]:
        """One fetch of f; a truncation and the fetch after it are one step."""
        merged = []

        def run():
            replica = self.replica(f)
            length = len(replica.log.records)
            self.fc.replicate(IDS[f], 0)
            if len(replica.log.records) < length:
                leader = NAMES.get(replica.leader)
                # the spec's Replicate truncates alone only to the leader's whole log, taking
                # its high watermark
                state = self.abstract()
                if (
                    leader is None
                    or state["log"][f] != state["log"][leader]
                    or state["hw"][f] != min(state["hw"][leader], len(state["log"][f]))
                ):
                    self.fc.replicate(IDS[f], 0)
                    merged.append(f)

        return self._record(run, follower_first=merged)

    def replicate(self, f: str) -> list[Step]:
        """Fetch until a fetch changes nothing (at most 4 fetches)."""
        steps: list[Step] = []
        for _ in range(4):
            more = self.fetch(f)
            if not more:
                break
            steps += more
        return steps

    def rebalance(self, b: str) -> list[Step]:
        def run():
            join = self._send(
                b,
                JoinGroup,
                3,
                member_id="",
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                protocol_type="consumer",
                protocols=(Protocol("range", b""),),
            )
            if join is None:
                self.fc._handle(IDS[b], GroupTick(self.fc.now_ms))
                join = self.fc.replies.get((IDS[b], self.request_ids))
            if join is None or join.response.error_code != ErrorCode.NONE:
                raise TraceMismatch(
                    f"rebalance at {b}: JoinGroup answered {join and join.response.error_code!r}"
                )
            response = join.response
            self.awaiting_sync = True
            context = {"generation": response.generation_id, "member_id": response.member_id}
            self._send(
                b,
                SyncGroup,
                3,
                context,
                generation_id=response.generation_id,
                member_id=response.member_id,
                assignments=(Assignment(response.member_id, b""),),
            )

        return self._record(run)

    def commit(self, b: str) -> list[Step]:
        offset = self.commits + 1
        hosted = self.fc.hosts[IDS[b]].hosted[0]
        length = hosted.next_offset
        self._send(
            b,
            OffsetCommit,
            8,
            {"offset": offset},
            generation_id=self.acked_gen,
            member_id=self.member_id,
            topics=(CommitTopic(TOPIC, (CommitPartition(0, offset),)),),
        )
        if hosted.next_offset > length:
            self.commits += 1
            return self._record(lambda: None)
        return self._record(lambda: None, ("OffsetCommitFenced", b, "p1"))

    # -- what the driver may do now ----------------------------------------------------------

    def moves(self) -> list[tuple[int, object]]:
        state = self.steps[-1].state
        cluster = self.fc.cluster
        out: list[tuple[int, object]] = []
        # No election while a LeaderAndIsr naming its destination leader is in flight (the spec's
        # brokers learn only the current epoch: see tla/README.md).
        leader_in_flight = any(
            p.leader == m.destination
            for m in cluster.in_flight
            for p in getattr(m.request, "partitions", ())
            if p.topic == self.tp.topic and p.partition == self.tp.partition
        )
        if state["leaderEpoch"] < MAX_EPOCH and state["leader"] != NONE and not leader_in_flight:
            for b in BROKERS:
                if (
                    b in state["isr"]
                    and len(state["isr"]) > 1
                    and not self.would_advance_on_shrink(b)
                ):
                    out.append((EXPIRE_WEIGHT, lambda b=b: self.expire(b)))
        for i in cluster.deliverable():
            if not self.would_advance_on_apply(i):
                out.append((3, lambda i=i: self.deliver(i)))
        for b in BROKERS:
            host = self.fc.hosts[IDS[b]]
            hosted = host.hosted.get(0)
            if (
                hosted is not None
                and hosted.state == PartitionState.LOADING
                and (IDS[b], 0) in self.fc.pending_loads
            ):
                out.append((3, lambda b=b: self.load(b)))
            replica = self.replica(b)
            if (
                replica is not None
                and replica.role == Role.FOLLOWER
                and not self.would_step_down(b)
                and not self.isr_behind(replica.leader, b)
                and not self.hw_ahead(b)
            ):
                out.append((3, lambda b=b: self.replicate(b)))
            if hosted is None or hosted.state != PartitionState.SERVING:
                continue
            group = hosted.coordinator.groups.get(GROUP)
            if (
                self.acked_gen == 0
                and not self.awaiting_sync
                and (group is None or group.generation_id == 0)
            ):
                out.append((3, lambda b=b: self.rebalance(b)))
            if (
                self.acked_gen >= 1
                and self.commits < MAX_COMMITS
                and (
                    group is None
                    or (str(group.state) == "Stable" and self.member_id in group.members)
                )
            ):
                out.append((3, lambda b=b: self.commit(b)))
        return out

    def _leading(self, broker_id: int):
        broker = self.fc.cluster.broker(broker_id)
        replica = broker.partitions.get(self.tp) if broker is not None else None
        return replica if replica is not None and replica.role == Role.LEADER else None

    def would_advance_on_shrink(self, x: str) -> bool:
        """Whether the leader, re-elected when x leaves the ISR, would advance its high
        watermark on applying the new epoch from what followers that have not applied it
        fetched before (finding 2 in tla/README.md)."""
        published = self.fc.cluster.published()[self.tp][0]
        lead = self._leading(published.leader)
        if lead is None or NAMES.get(published.leader) == x:
            return False
        ends = [lead.log.log_end_offset] + [
            lead.followers[r].log_end_offset
            for r in lead.isr
            if r != lead.broker_id and NAMES.get(r) != x
        ]
        return min(ends) > lead.log.high_watermark

    def would_advance_on_apply(self, index: int) -> bool:
        """Whether delivering request ``index`` re-elects a leader that would advance its high
        watermark from what ISR members that have not applied the new epoch fetched before
        (finding 2 in tla/README.md)."""
        message = self.fc.cluster.in_flight[index]
        lead = self._leading(message.destination)
        if lead is None:
            return False
        for decision in getattr(message.request, "partitions", ()):
            if (
                (decision.topic, decision.partition) != tuple(self.tp)
                or decision.leader != lead.broker_id
                or decision.leader_epoch <= lead.leader_epoch
            ):
                continue
            members = [r for r in decision.isr if r != lead.broker_id]
            ends = [lead.log.log_end_offset] + [
                lead.followers[r].log_end_offset if r in lead.followers else -1 for r in members
            ]
            replicas = [self.fc.cluster.broker(r).partitions.get(self.tp) for r in members]
            behind = any(x is None or x.leader_epoch != decision.leader_epoch for x in replicas)
            if behind and min(ends) > lead.log.high_watermark:
                return True
        return False

    def hw_ahead(self, f: str) -> bool:
        """Whether f's high watermark is above its leader's: the spec's Replicate lowers it to
        the leader's (as Kafka 2.6's follower does), the reference's follower keeps it
        (finding 3 in tla/README.md)."""
        replica = self.replica(f)
        leader = self.fc.cluster.broker(replica.leader)
        lead = leader.partitions.get(self.tp) if leader is not None else None
        return lead is not None and replica.log.high_watermark > lead.log.high_watermark

    def isr_behind(self, leader_id: int, f: str) -> bool:
        """Whether a member of the ISR of f's leader (f aside) does not follow it at its epoch
        (not applied it yet, or applied a newer one): the reference's leader counts what
        that member fetched before (finding 2)."""
        lead = self._leading(leader_id)
        if lead is None:
            return False
        for r in lead.isr:
            if r in (lead.broker_id, IDS[f]):
                continue
            member = self.fc.cluster.broker(r).partitions.get(self.tp)
            if member is None or (member.leader, member.leader_epoch) != (
                lead.broker_id,
                lead.leader_epoch,
            ):
                return True
        return False

    def would_step_down(self, f: str) -> bool:
        """Whether f's fetch would make its leader, re-elected at a newer epoch it has not
        applied yet, try to add f to the ISR and step down when the write fails (ISR-17):
        a step the spec does not have (finding 1 in tla/README.md)."""
        replica = self.replica(f)
        leader = self.fc.cluster.broker(replica.leader)
        lead = leader.partitions.get(self.tp) if leader is not None else None
        published = self.fc.cluster.published()[self.tp][0]
        return (
            lead is not None
            and lead.role == Role.LEADER
            and published.leader == replica.leader
            and lead.leader_epoch < published.leader_epoch
            and replica.broker_id not in lead.isr
        )

    def start(self) -> list[Step]:
        """The controller's InitLeaders for the new offsets topic (an ElectLeader)."""
        return self._record(lambda: self.fc.deliver_watches(CONTROLLER))


def decompose(before: dict, after: dict, follower_first: str | None = None) -> list[Step]:
    """The spec steps that lead from ``before`` to ``after``, in Kafka's order (tla/README.md).
    ``follower_first``: a follower that truncated and fetched again in this step; its
    Replicate (truncation and records, with the leader's high watermark as it was) comes
    before the leader's side of the second fetch."""
    cur = _copy(before)
    steps: list[Step] = []

    def emit(action: str, a1: str = NONE, a2: str = NONE) -> None:
        steps.append(Step(action, (a1, a2), _copy(cur)))

    if follower_first is not None:
        leader = cur["view"][follower_first]["leader"]
        cur["log"][follower_first] = after["log"][follower_first]
        cur["hw"][follower_first] = min(cur["hw"][leader], len(after["log"][follower_first]))
        emit("Replicate", follower_first)

    if after["leaderEpoch"] != cur["leaderEpoch"]:
        for name in ("leader", "leaderEpoch", "isr"):
            cur[name] = after[name]
        emit("ElectLeader", after["leader"])
    for b in BROKERS:
        new_view, old_view = after["view"][b], cur["view"][b]
        stepped_down = (
            old_view["leader"] == b == new_view["leader"]
            and old_view["isr"]
            and not new_view["isr"]
        )
        if (new_view["epoch"], new_view["leader"]) != (
            old_view["epoch"],
            old_view["leader"],
        ) or stepped_down:
            # a newer epoch applied, or (the reference's ISR-17 StepDown) a leader that lost an
            # ISR write stopped leading without learning of another leader
            cur["view"][b] = dict(new_view)
            if new_view["leader"] == b and not stepped_down:
                if cur["status"][b] != "Active":
                    cur["status"][b], cur["cache"][b] = "Loading", _copy(EMPTY_GROUP)
                emit("BecomeCoordinator", b)
            else:
                cur["status"][b], cur["cache"][b] = "NotCoordinator", _copy(EMPTY_GROUP)
                cur["pending"] = frozenset(w for w in cur["pending"] if w[0] != b)
                emit("ResignCoordinator", b)
    for b in BROKERS:
        if cur["view"][b]["leader"] != b:
            continue
        old, new = cur["log"][b], after["log"][b]
        if len(new) > len(old) and new[: len(old)] == old:
            for r in new[len(old) :]:
                cur["log"][b] = [*cur["log"][b], r]
                cur["pending"] = cur["pending"] | {(b, len(cur["log"][b]))}
                if r["kind"] == "group":
                    cur["cache"][b] = {"gen": r["gen"], "offsets": dict(cur["cache"][b]["offsets"])}
                    emit("SyncGroup", b)
                else:
                    cur["cache"][b] = {
                        "gen": cur["cache"][b]["gen"],
                        "offsets": {"p1": r["offset"]},
                    }
                    cur["commits"] += 1
                    emit("OffsetCommit", b, "p1")
    if after["isr"] != cur["isr"] and after["leaderEpoch"] == cur["leaderEpoch"]:
        leader = cur["leader"]
        for f in sorted(after["isr"] - cur["isr"]):
            cur["isr"] = cur["isr"] | {f}
            if leader != NONE and cur["view"][leader]["leader"] == leader:
                cur["view"][leader] = {
                    **cur["view"][leader],
                    "isr": cur["view"][leader]["isr"] | {f},
                }
            emit("ExpandIsr", leader, f)
    for b in BROKERS:
        if cur["view"][b]["leader"] == b and after["hw"][b] != cur["hw"][b]:
            cur["hw"][b] = after["hw"][b]
            emit("AdvanceHighWatermark", b)
    for b in BROKERS:
        gone = sorted(i for (x, i) in cur["pending"] - after["pending"] if x == b)
        for i in gone:
            cur["pending"] = cur["pending"] - {(b, i)}
            r = cur["log"][b][i - 1]
            if r["kind"] == "group":
                cur["ackedGen"] = max(cur["ackedGen"], r["gen"])
            else:
                cur["acked"] = {"p1": max(cur["acked"]["p1"], r["offset"])}
            emit("AckCommit", b)
    for b in BROKERS:
        if cur["view"][b]["leader"] != b and (
            after["log"][b] != cur["log"][b] or after["hw"][b] != cur["hw"][b]
        ):
            cur["log"][b], cur["hw"][b] = after["log"][b], after["hw"][b]
            emit("Replicate", b)
    for b in BROKERS:
        if cur["status"][b] == "Loading" and after["status"][b] == "Active":
            cur["status"][b], cur["cache"][b] = "Active", _copy(after["cache"][b])
            emit("LoadGroup", b)
    if cur != after:
        names = [n for n in VARIABLES if cur[n] != after[n]]
        raise TraceMismatch(
            f"a change no spec step explains in {names}: "
            + "; ".join(f"{n}: spec {cur[n]!r}, reference {after[n]!r}" for n in names)
        )
    return steps


def _copy(value):
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# -- reference -> spec: the random driver ---------------------------------------------------------


def random_trace(seed: int, steps: int, max_moves: int = 400) -> list[Step]:
    """A random run of the reference: until it has ``steps`` spec steps, or nothing is left to do."""
    rng = random.Random(seed)
    h = Harness(seed)
    h.start()
    for _ in range(max_moves):
        if len(h.steps) > steps:
            break
        moves = h.moves()
        if not moves:
            break
        rng.choices([m for _, m in moves], [w for w, _ in moves])[0]()
    return h.steps


def validate_random_traces(
    count: int, steps: int, seed: int, max_draws: int | None = None
) -> RandomTraceSummary:
    """``count`` random reference runs of at least ``steps`` spec steps, checked by TLC in one run.
    Runs that end shorter (the driver ran out of moves within the bounds) are drawn again."""
    return validate(
        lambda run: random_trace(run, steps), check_traces, count, steps, seed, max_draws
    )


# -- TLA+ values and the TLC run ---------------------------------------------------------------------------


_MODEL_VALUES = frozenset(BROKERS + PARTITIONS)


def tla(value) -> str:
    """Python -> TLA+: brokers and p1 are model values, other strings are strings; a pending
    write (broker, index) is a record."""
    return tla_value(value, _MODEL_VALUES, _pending_write)


def _pending_write(value) -> str | None:
    if isinstance(value, tuple):
        return f"[broker |-> {tla(value[0])}, index |-> {tla(value[1])}]"
    return None


_SHARED = (
    "view",
    "log",
    "hw",
    "status",
    "cache",
    "pending",
)  # few distinct values: each defined once


def trace_module(traces: list[list[Step]]) -> str:
    rows = trace_rows(traces, VARIABLES, lambda name, value: tla(value), tla)
    return trace_data_module(rows, [*VARIABLES, "action", *ARGS], [*BROKERS, *PARTITIONS], _SHARED)


CONSTANTS = """CONSTANTS
    b1 = b1
    b2 = b2
    b3 = b3
    p1 = p1
    Brokers = {b1, b2, b3}
    TopicPartitions = {p1}
    MaxEpoch = 3
    MaxGeneration = 1
    MaxCommits = 2
    BugServeBeforeLoad = FALSE
    BugOffsetCommitAcksOne = FALSE
    BugSyncGroupAcksOne = FALSE
    BugNoEpochBump = FALSE
    BugLoadToHighWatermark = FALSE
    BugUncleanElection = FALSE
    BugExpandIsrAtHighWatermark = FALSE
"""
INVARIANTS = "StartsInInit TypeOK LoadBeforeServe SingleActiveCoordinator NoCommittedOffsetLost NoStaleGenerationAfterFailover"


def check_traces(traces: list[list[Step]]) -> TraceCheck:
    """One TLC run: is every trace a behaviour of CoordinatorFailover?"""
    return check_trace_data(
        "CoordinatorFailover",
        trace_module(traces),
        CONSTANTS + f"INIT TraceInit\nNEXT TraceNext\nINVARIANTS {INVARIANTS}\n",
        traces,
        position=("tr", "ix"),
    )


def corrupt_ack_at_append(trace: list[Step]) -> tuple[list[Step], int]:
    """The first accepted OffsetCommit is acknowledged at its append (acks=1, the spec's
    BugOffsetCommitAcksOne) instead of when the high watermark passes it: (trace, 1-based index
    of the first record changed)."""
    out = [Step(s.action, s.args, _copy(s.state)) for s in trace]
    for k, s in enumerate(out):
        if s.action == "OffsetCommit":
            offset = s.state["log"][s.args[0]][-1]["offset"]
            for x in out[k:]:
                if x.state["acked"]["p1"] >= offset:
                    break
                x.state["acked"] = {"p1": offset}
            return out, k + 1
    raise ValueError("no OffsetCommit in the trace")


# -- spec -> reference: TLC simulation replayed ------------------------------------------------------------


def _spec_state(values: dict) -> dict:
    """A state TLC printed, parsed -> the spec state in the shape Harness.abstract gives."""
    state = {name: values[name] for name in VARIABLES}
    state["pending"] = frozenset((w["broker"], w["index"]) for w in values["pending"])
    state["log"] = {b: [values["log"][b][j] for j in sorted(values["log"][b])] for b in BROKERS}
    return state


def simulate(count: int, depth: int, seed: int) -> list[list[tuple[dict, dict]]]:
    """``count`` behaviours of the spec (at most ``depth`` steps each, fewer when the wrapper has
    nothing left to do), from one TLC simulation run: lists of (act, spec state), Init first."""
    return simulate_behaviours(
        "CoordinatorFailover", CONSTANTS, count, depth, seed, VARIABLES, _spec_state
    )[:count]


def replay(behaviour: list[tuple[dict, dict]], seed: int = 0) -> int:
    """Replay a spec behaviour on the reference; raise TraceMismatch on the first disagreement."""
    h = Harness(seed)
    if h.steps[0].state != behaviour[0][1]:
        raise TraceMismatch(
            f"initial states differ: {state_diff(VARIABLES, h.steps[0].state, behaviour[0][1])}"
        )
    k = 1
    while k < len(behaviour):
        act, target = behaviour[k]
        action, a1 = act["action"], act["a1"]
        if action == "ElectLeader":
            steps = h.start() if behaviour[k - 1][1]["leader"] == NONE else h.expire(act["a2"])
        elif action in ("BecomeCoordinator", "ResignCoordinator"):
            steps = h.deliver_to(a1)
        elif action == "LoadGroup":
            steps = h.load(a1)
        elif action == "SyncGroup":
            steps = h.rebalance(a1)
        elif action == "OffsetCommit":
            steps = h.commit(a1)
        elif action == "Fetch":
            if target != behaviour[k - 1][1]:
                raise TraceMismatch(f"step {k} Fetch({a1}) changes the spec's variables")
            k += 1  # the ghost step: the fetch's spec steps follow it
            steps = h.fetch(a1)
        else:
            raise TraceMismatch(f"step {k}: {action}({a1}) is not a step the reference starts")
        for s in steps:
            if k >= len(behaviour):
                break  # the behaviour was cut at its depth inside this reference step
            want_act, want = behaviour[k]
            name = "OffsetCommit" if s.action == "OffsetCommitFenced" else s.action
            if (name, s.args[0]) != (want_act["action"], want_act["a1"]):
                raise TraceMismatch(
                    f"step {k} {want_act['action']}({want_act['a1']}): the reference took {s.action}({s.args[0]})"
                )
            if s.state != want:
                raise TraceMismatch(
                    f"step {k} {want_act['action']}({want_act['a1']}): {state_diff(VARIABLES, s.state, want)}"
                )
            k += 1
        if k < len(behaviour) and behaviour[k][0]["action"] not in _STARTERS:
            want_act = behaviour[k][0]
            raise TraceMismatch(
                f"step {k} {want_act['action']}({want_act['a1']}): the reference's step ended before it"
            )
    return k - 1


_STARTERS = (
    "ElectLeader",
    "BecomeCoordinator",
    "ResignCoordinator",
    "LoadGroup",
    "SyncGroup",
    "OffsetCommit",
    "Fetch",
)


def replay_simulated_behaviours(count: int, depth: int, seed: int) -> ReplaySummary:
    """``count`` behaviours from one TLC simulation (``-seed seed``), each replayed on the reference."""
    started = time.monotonic()
    return replay_all(
        simulate(count, depth, seed),
        lambda behaviour, number: replay(behaviour, seed + number),
        seed,
        started,
        TraceMismatch,
    )
