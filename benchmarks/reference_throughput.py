"""Replays a long generated event stream through the reference group coordinator.

    .venv/bin/python benchmarks/reference_throughput.py [--groups 2000] [--members 5] [--rounds 20]

The stream is recorded once by a seeded simulation (every group joins with the v4+
two-step join, syncs, then heartbeats and commits round after round, with a member
leaving and rejoining every few rounds). It is then replayed through fresh coordinators
with the same seed, which gives the same member ids, so only the replay is timed: once
bare and once under the invariant Monitor, side by side. Goal: >= 100,000 events/s.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordspec.reference.choices import SeededChoices
from coordspec.reference.group import (
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
    Protocol,
    SyncGroup,
    Tick,
)
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.invariants import Monitor

GOAL_EVENTS_PER_S = 100_000
CONFIG = GroupConfig(initial_rebalance_delay_ms=0)
PROTOCOLS = (Protocol("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"),)


class Recorder:
    """Drives a coordinator like well-behaved consumers and records every event it sends."""

    def __init__(self, seed: int) -> None:
        self.coordinator = GroupCoordinator(CONFIG, SeededChoices(seed))
        self.events: list = []
        self.now_ms = 0
        self.request_id = 0
        self.replies: dict[int, object] = {}

    def send(self, make):
        self.request_id += 1
        event = make(self.request_id, self.now_ms)
        self._apply(event)
        return self.request_id

    def tick(self, ms: int) -> None:
        self.now_ms += ms
        self._apply(Tick(self.now_ms))

    def _apply(self, event) -> None:
        self.events.append(event)
        for effect in self.coordinator.handle(event):
            if isinstance(effect, Reply):
                self.replies[effect.request_id] = effect.response


def join_all(r: Recorder, group: str, members: list[str], names: list[str]) -> None:
    """Everyone (re)joins; ``members`` learns the ids the coordinator answered with."""
    ids = []
    for i, name in enumerate(names):
        member_id = members[i] if i < len(members) else ""
        rid = r.send(
            lambda rid, now, m=member_id, n=name: JoinGroup(
                rid,
                9,
                now,
                group_id=group,
                member_id=m,
                session_timeout_ms=30_000,
                rebalance_timeout_ms=60_000,
                protocols=PROTOCOLS,
                client_id=n,
            )
        )
        ids.append(rid)
    members[:] = [
        r.replies[rid].member_id if rid in r.replies else members[i] for i, rid in enumerate(ids)
    ]


def build_stream(groups: int, members: int, rounds: int, seed: int) -> list:
    r = Recorder(seed)
    names = [f"consumer-{i}" for i in range(members)]
    state = {}
    for g in range(groups):
        group = f"group-{g}"
        ids: list[str] = []
        join_all(r, group, ids, names)  # MEMBER_ID_REQUIRED
        state[group] = ids
    for group, ids in state.items():
        join_all(r, group, ids, names)  # parked until the (zero) initial delay fires
    r.tick(1)
    generations = {}
    for group, ids in state.items():
        generations[group] = sync_all(r, group, ids)
    for round_number in range(rounds):
        r.tick(1_000)
        for group, ids in state.items():
            generation = generations[group]
            for i, member in enumerate(ids):
                topic = CommitTopic("t", (CommitPartition(i, round_number * 100 + i),))
                r.send(
                    lambda rid, now, g=group, gen=generation, m=member: Heartbeat(
                        rid, 4, now, group_id=g, generation_id=gen, member_id=m
                    )
                )
                r.send(
                    lambda rid, now, g=group, gen=generation, m=member, t=topic: OffsetCommit(
                        rid, 9, now, group_id=g, generation_id=gen, member_id=m, topics=(t,)
                    )
                )
            if round_number % 5 == 4:
                generations[group] = rebalance(r, group, ids, names)
    return r.events


def sync_all(r: Recorder, group: str, ids: list[str]) -> int:
    joins = [resp for resp in r.replies.values() if getattr(resp, "members", None)]
    leader_join = joins[-1]
    generation = leader_join.generation_id
    leader = leader_join.leader
    plan = tuple(Assignment(m, b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff") for m in ids)
    r.send(
        lambda rid, now: SyncGroup(
            rid,
            5,
            now,
            group_id=group,
            generation_id=generation,
            member_id=leader,
            protocol_type="consumer",
            protocol_name="range",
            assignments=plan,
        )
    )
    for m in ids:
        if m != leader:
            r.send(
                lambda rid, now, m=m: SyncGroup(
                    rid,
                    5,
                    now,
                    group_id=group,
                    generation_id=generation,
                    member_id=m,
                    protocol_type="consumer",
                    protocol_name="range",
                )
            )
    return generation


def rebalance(r: Recorder, group: str, ids: list[str], names: list[str]) -> int:
    """The last member leaves and comes back: two join phases, two syncs."""
    r.send(
        lambda rid, now: LeaveGroup(rid, 5, now, group_id=group, members=(MemberIdentity(ids[-1]),))
    )
    ids.pop()
    r.replies.clear()
    join_all(r, group, ids, names[: len(ids)])
    sync_all(r, group, ids)
    r.replies.clear()
    fresh: list[str] = []
    join_all(r, group, fresh, names[len(ids) : len(ids) + 1])
    ids.extend(fresh)
    r.replies.clear()
    join_all(r, group, ids, names[: len(ids)])
    return sync_all(r, group, ids)


def replay(events: list, seed: int, monitored: bool, topics: dict[str, int] | None = None) -> float:
    coordinator = GroupCoordinator(
        CONFIG, SeededChoices(seed), observer=Monitor() if monitored else None, topics=topics
    )
    handle = coordinator.handle
    gc.collect()
    start = time.perf_counter()
    for event in events:
        handle(event)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    events = build_stream(args.groups, args.members, args.rounds, args.seed)
    print(
        f"recorded {len(events):,} events for {args.groups:,} groups x {args.members} members "
        f"in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    bare = min(replay(events, args.seed, monitored=False) for _ in range(3))
    checked = replay(events, args.seed, monitored=True)
    rate = len(events) / bare
    print(f"reference, bare:          {rate:>12,.0f} events/s  ({bare:.2f} s, best of 3)")
    print(f"reference, with Monitor:  {len(events) / checked:>12,.0f} events/s  ({checked:.2f} s)")
    print(f"Monitor overhead:         {checked / bare:>12.2f}x")
    print(
        f"goal {GOAL_EVENTS_PER_S:,} events/s:    {rate / GOAL_EVENTS_PER_S:>12.2f}x of goal -> "
        f"{'met' if rate >= GOAL_EVENTS_PER_S else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
