"""Replays KIP-848 consumer-group heartbeats through the reference, beside the classic protocol.

    .venv/bin/python benchmarks/consumer_heartbeats.py [--groups 2000] [--members 5] [--rounds 20]

Two event streams are recorded once by seeded simulations of the same groups (``--groups``
groups of ``--members`` consumers, ``--rounds`` rounds, a member leaving and coming back every
fifth round):
- consumer groups: each member joins with ConsumerGroupHeartbeat v1 (its own member id), then
  heartbeats every round with its epoch, sending the partitions it owns whenever its
  assignment changed, as a reconciling consumer does; the coordinator assigns with ``uniform``;
- classic groups: reference_throughput.py's stream (join, sync, heartbeat and commit).
Each stream is then replayed through fresh coordinators with the same seed, best of 3, side by
side in this run. Goal (issue 19): consumer-group heartbeats at >= 100,000 events/s on one core.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference_throughput as classic

from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import GroupCoordinator, Tick
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.records import TopicPartitions
from coordspec.reference.group.requests import ConsumerGroupHeartbeat

GOAL_EVENTS_PER_S = 100_000
TOPIC = "t"


class Consumer:
    """What a KIP-848 consumer knows: its id, its epoch, the partitions it owns."""

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.epoch = 0
        self.owned: tuple[TopicPartitions, ...] | None = ()  # sent on join and on a change
        self.joined = False


class Recorder:
    def __init__(self, seed: int, partitions: int) -> None:
        self.topics = {TOPIC: partitions}
        self.coordinator = GroupCoordinator(classic.CONFIG, SeededChoices(seed), topics=self.topics)
        self.events: list = []
        self.now_ms = 0
        self.request_id = 0

    def heartbeat(self, group: str, consumer: Consumer, *, leave: bool = False) -> None:
        self.request_id += 1
        joining = not consumer.joined
        event = ConsumerGroupHeartbeat(
            self.request_id,
            1,
            self.now_ms,
            group_id=group,
            member_id=consumer.member_id,
            member_epoch=-1 if leave else consumer.epoch,
            rebalance_timeout_ms=60_000 if joining else -1,
            subscribed_topic_names=(TOPIC,) if joining else None,
            server_assignor="uniform" if joining else None,
            topic_partitions=consumer.owned,
        )
        consumer.owned = None  # unchanged until the coordinator says otherwise
        for response in self._apply(event):
            if leave:
                consumer.joined, consumer.epoch, consumer.owned = False, 0, ()
                return
            assert response.error_code == ErrorCode.NONE, response
            consumer.joined = True
            consumer.epoch = response.member_epoch
            if response.assignment is not None:
                consumer.owned = response.assignment  # revoked and accepted at once

    def tick(self, ms: int) -> None:
        self.now_ms += ms
        self._apply(Tick(self.now_ms))

    def _apply(self, event) -> list:
        self.events.append(event)
        return [e.response for e in self.coordinator.handle(event) if isinstance(e, Reply)]


def build_stream(groups: int, members: int, rounds: int, seed: int) -> list:
    r = Recorder(seed, partitions=2 * members)
    state = {
        f"group-{g}": [Consumer(f"g{g}-member-{i}") for i in range(members)] for g in range(groups)
    }
    for round_number in range(rounds):
        r.tick(1_000)
        for group, consumers in state.items():
            for consumer in consumers:
                r.heartbeat(group, consumer)
            if round_number % 5 == 4:
                r.heartbeat(group, consumers[-1], leave=True)
                r.heartbeat(group, consumers[-1])
    return r.events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    consumer = build_stream(args.groups, args.members, args.rounds, args.seed)
    classic_events = classic.build_stream(args.groups, args.members, args.rounds, args.seed)
    print(
        f"recorded {len(consumer):,} consumer-group and {len(classic_events):,} classic events "
        f"for {args.groups:,} groups x {args.members} members in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    topics = {TOPIC: 2 * args.members}
    consumer_s = classic_s = float("inf")
    for _ in range(3):  # alternating, so both see the same load
        consumer_s = min(consumer_s, classic.replay(consumer, args.seed, False, topics))
        classic_s = min(classic_s, classic.replay(classic_events, args.seed, False))
    consumer_rate, classic_rate = len(consumer) / consumer_s, len(classic_events) / classic_s
    print(f"consumer groups (KIP-848): {consumer_rate:>12,.0f} events/s  ({consumer_s:.2f} s)")
    print(f"classic groups:            {classic_rate:>12,.0f} events/s  ({classic_s:.2f} s)")
    print(f"consumer / classic:        {consumer_rate / classic_rate:>12.2f}x")
    print(
        f"goal {GOAL_EVENTS_PER_S:,} events/s:     {consumer_rate / GOAL_EVENTS_PER_S:>12.2f}x of goal -> "
        f"{'met' if consumer_rate >= GOAL_EVENTS_PER_S else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
