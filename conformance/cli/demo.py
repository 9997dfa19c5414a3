"""``coordspec demo``: one consumer group's life, replayed through the reference.

Three consumers join (MEMBER_ID_REQUIRED first), the leader assigns six partitions, all
commit; one consumer goes silent, its session expires, the other two rebalance; the
silent one comes back as a zombie and is fenced; finally a second coordinator loads the
written records and serves the same group. Every step is checked against the
invariants.
"""

from __future__ import annotations

from collections.abc import Callable

from coordspec.reference.assignors.leader import lead
from coordspec.reference.choices import SeededChoices
from coordspec.reference.consumer_protocol import (
    Subscription,
    decode_assignment,
    encode_subscription,
)
from coordspec.reference.group import (
    Assignment,
    CommitPartition,
    CommitTopic,
    GroupConfig,
    GroupCoordinator,
    Heartbeat,
    JoinGroup,
    LoadGroups,
    OffsetCommit,
    OffsetFetch,
    Protocol,
    SyncGroup,
    Tick,
)
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.invariants import INVARIANTS, Monitor
from coordspec.reference.group.responses import JoinGroupResponse

GROUP = "demo-group"
TOPIC = "orders"
PARTITIONS = 6
SESSION_MS = 10_000
REBALANCE_MS = 30_000


class Session:
    def __init__(self, seed: int, say: Callable[[str], None]) -> None:
        self.monitor = Monitor()
        self.coordinator = GroupCoordinator(
            GroupConfig(), SeededChoices(seed), observer=self.monitor
        )
        self.say = say
        self.now_ms = 0
        self.next_request = 0
        self.log: list = []
        self.replies = 0

    def send(self, who: str, make) -> list[Reply]:
        self.next_request += 1
        request = make(self.next_request, self.now_ms)
        self.say(f"t={self.now_ms:>6}  {who:<3} -> {describe_request(request)}")
        return self._apply(request)

    def wait(self, until_ms: int) -> list[Reply]:
        self.now_ms = until_ms
        self.say(f"t={self.now_ms:>6}  ... time passes")
        return self._apply(Tick(until_ms))

    def _apply(self, event) -> list[Reply]:
        replies = []
        for effect in self.coordinator.handle(event):
            if isinstance(effect, AppendRecords):
                self.log.extend(effect.records)
                self.say(
                    f"{'':>9}  log <- {len(effect.records)} record(s): {', '.join(type(r.key).__name__ for r in effect.records)}"
                )
            else:
                replies.append(effect)
                self.replies += 1
                self.say(
                    f"{'':>9}  <- {effect.api} #{effect.request_id}: {describe_response(effect.response)}"
                )
        return replies


ID_FIELDS = ("member_id", "leader")


def describe_request(request) -> str:
    fields = {
        "member_id": getattr(request, "member_id", None),
        "generation_id": getattr(request, "generation_id", None),
    }
    shown = ", ".join(f"{k}={show(k, v)}" for k, v in fields.items() if v not in (None, "", -1))
    return f"{request.api} v{request.api_version} #{request.request_id}" + (
        f" ({shown})" if shown else ""
    )


def describe_response(response) -> str:
    parts = []
    for name in response.__slots__:
        value = getattr(response, name)
        if value in (None, "", b"", (), -1, False):
            continue
        if name == "members" and isinstance(response, JoinGroupResponse):
            value = f"[{len(value)} members]"
        elif name == "assignment":
            value = format_assignment(value)
        elif name == "topics":
            value = "; ".join(
                f"{t.name}: " + " ".join(format_partition(p) for p in t.partitions) for t in value
            )
        parts.append(f"{name}={show(name, value)}")
    return ", ".join(parts) or "NONE"


def format_partition(partition) -> str:
    if hasattr(partition, "committed_offset"):
        return f"{partition.partition_index}@{partition.committed_offset}"
    return f"{partition.partition_index}:{partition.error_code.name}"


def format_assignment(data: bytes) -> str:
    decoded = decode_assignment(data)
    return " ".join(f"{tp.topic}{list(tp.partitions)}" for tp in decoded.partitions)


def show(name: str, value) -> str:
    """Member ids carry a UUID; the first characters are enough to tell them apart."""
    if name in ID_FIELDS and isinstance(value, str) and len(value) > 14:
        return value[:10] + "…"
    return getattr(value, "name", None) or str(value)


def run_demo(seed: int = 1, quiet: bool = False) -> int:
    s = Session(seed, (lambda line: None) if quiet else print)
    subscription = encode_subscription(Subscription((TOPIC,)))
    protocols = (Protocol("range", subscription),)

    def join(member_id: str = "", client: str = "c"):
        return lambda rid, now: JoinGroup(
            rid,
            9,
            now,
            group_id=GROUP,
            member_id=member_id,
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            protocols=protocols,
            client_id=client,
        )

    def sync(member_id: str, generation: int, assignments=()):
        return lambda rid, now: SyncGroup(
            rid,
            5,
            now,
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        )

    def commit(member_id: str, generation: int, offsets: dict[int, int]):
        topic = CommitTopic(TOPIC, tuple(CommitPartition(p, o) for p, o in offsets.items()))
        return lambda rid, now: OffsetCommit(
            rid,
            9,
            now,
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            topics=(topic,),
        )

    s.say("# Three consumers join; v4+ clients first learn their member id.")
    ids = {}
    for name in ("c1", "c2", "c3"):
        (reply,) = s.send(name, join(client=name))
        ids[name] = reply.response.member_id
    for name in ("c1", "c2", "c3"):
        s.send(name, join(ids[name], client=name))
    s.say(
        "# The initial rebalance delay (3 s) is extended while members keep arriving; then generation 1 forms."
    )
    joined = {}
    while not joined:
        joined = {r.request_id: r.response for r in s.wait(s.coordinator.next_deadline_ms())}
    leader = next(r.leader for r in joined.values())
    generation = next(r.generation_id for r in joined.values())
    leader_name = next(n for n, m in ids.items() if m == leader)
    s.say(f"# {leader_name} leads and assigns {PARTITIONS} partitions with the range assignor.")
    plan = lead("range", {TOPIC: PARTITIONS}, next(r.members for r in joined.values() if r.members))
    s.send(leader_name, sync(leader, generation, tuple(Assignment(m, a) for m, a in plan.items())))
    for name, member_id in ids.items():
        if name != leader_name:
            s.send(name, sync(member_id, generation))
    s.now_ms += 1_000
    for i, name in enumerate(ids):
        s.send(
            name,
            commit(
                ids[name],
                generation,
                {p: 100 * (i + 1) + p for p in decode_partitions(plan[ids[name]])},
            ),
        )
    s.say("# c3 goes silent; c1 and c2 keep heartbeating.")
    expiry = s.coordinator.timers.deadline(("ExpireSession", GROUP, ids["c3"]))
    while s.now_ms + 3_000 < expiry:
        s.now_ms += 3_000
        for name in ("c1", "c2"):
            s.send(
                name,
                lambda rid, now, n=name: Heartbeat(
                    rid, 4, now, group_id=GROUP, generation_id=generation, member_id=ids[n]
                ),
            )
    s.say(f"# c3's session expires at t={expiry}: the group rebalances.")
    s.wait(expiry)
    s.now_ms += 1_000
    for name in ("c1", "c2"):
        s.send(
            name,
            lambda rid, now, n=name: Heartbeat(
                rid, 4, now, group_id=GROUP, generation_id=generation, member_id=ids[n]
            ),
        )
    rejoined = {}
    for name in ("c1", "c2"):
        rejoined.update(
            {r.request_id: r.response for r in s.send(name, join(ids[name], client=name))}
        )
    new_generation = next(iter(rejoined.values())).generation_id
    new_leader = next(iter(rejoined.values())).leader
    plan = lead(
        "range", {TOPIC: PARTITIONS}, next(r.members for r in rejoined.values() if r.members)
    )
    s.send(
        "c1" if ids["c1"] == new_leader else "c2",
        sync(new_leader, new_generation, tuple(Assignment(m, a) for m, a in plan.items())),
    )
    other = "c2" if ids["c1"] == new_leader else "c1"
    s.send(other, sync(ids[other], new_generation))
    s.say("# c3 wakes up as a zombie of generation 1 and tries to commit: fenced.")
    (zombie,) = s.send("c3", commit(ids["c3"], generation, {5: 999}))
    s.send("c1", lambda rid, now: OffsetFetch(rid, 9, now, group_id=GROUP, topics=None))
    s.say("# A new coordinator loads the written records and serves the group.")
    successor = GroupCoordinator(
        GroupConfig(), SeededChoices(seed + 1), now_ms=s.now_ms, observer=Monitor()
    )
    successor.handle(LoadGroups(tuple(s.log), s.now_ms))
    loaded = successor.group(GROUP)
    s.say(
        f"{'':>9}  loaded {GROUP}: {loaded.state}, generation {loaded.generation_id}, {len(loaded.members)} members, {len(loaded.offsets)} offsets"
    )

    fenced = zombie.response.topics[0].partitions[0].error_code.name
    print(
        f"coordspec demo: {s.monitor.steps} events, {s.replies} replies, {len(s.log)} records; "
        f"zombie commit answered {fenced}; reloaded group at generation {loaded.generation_id}; "
        f"invariants held: {', '.join(INVARIANTS)}"
    )
    return 0


def decode_partitions(assignment: bytes) -> list[int]:
    return [p for tp in decode_assignment(assignment).partitions for p in tp.partitions]
