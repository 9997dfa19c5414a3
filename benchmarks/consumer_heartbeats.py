"""Replays KIP-848 consumer-group heartbeats through the reference, beside the classic protocol.

    .venv/bin/python benchmarks/consumer_heartbeats.py [--groups 2000] [--members 5] [--rounds 20]
    .venv/bin/python benchmarks/consumer_heartbeats.py --against 33f2f3b   # and that commit's

Two event streams are recorded once by seeded simulations of the same groups (``--groups``
groups of ``--members`` consumers, ``--rounds`` rounds, a member leaving and coming back every
fifth round):
- consumer groups: each member joins with ConsumerGroupHeartbeat v1 (its own member id), then
  heartbeats every round with its epoch, sending the partitions it owns whenever its
  assignment changed, as a reconciling consumer does; the coordinator assigns with ``uniform``;
- classic groups: reference_throughput.py's stream (join, sync, heartbeat and commit).
Each stream is then replayed through fresh coordinators with the same seed, best of 3, side by
side in this run, and the consumer-group stream also under the invariant ``Monitor``.
``--against COMMIT`` compares this tree with that commit: two child processes record the
consumer-group stream, one with this tree's reference, one with the commit's (``git archive``
of its reference/), and replay it in turn with the others; the two recordings must see the
same effects, or the run says so.
Goal (issue 19): consumer-group heartbeats at >= 100,000 events/s on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
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
ROOT = Path(__file__).resolve().parent.parent


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
        self.effects = hashlib.sha256()  # of every effect, to compare two references' runs
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
        effects = self.coordinator.handle(event)
        self.effects.update(repr(effects).encode())
        return [e.response for e in effects if isinstance(e, Reply)]


def build_stream(groups: int, members: int, rounds: int, seed: int) -> tuple[list, str]:
    """The events, and a digest of the effects they had."""
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
    return r.events, r.effects.hexdigest()


def serve(args: argparse.Namespace) -> int:
    """The child of ``--against``: records with the reference it imports, then replays on
    each line read."""
    events, digest = build_stream(args.groups, args.members, args.rounds, args.seed)
    print(len(events), digest, flush=True)
    for _ in sys.stdin:
        print(classic.replay(events, args.seed, False, {TOPIC: 2 * args.members}), flush=True)
    return 0


class Replayer:
    """A child process that records the consumer-group stream and replays it on request: with
    commit ``rev``'s reference, or (None) with this tree's. Both sides of ``--against`` run so,
    each holding only its own stream."""

    def __init__(self, rev: str | None, args: argparse.Namespace) -> None:
        env = dict(os.environ)
        self.folder = None
        if rev is not None:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", rev, "reference"],
                capture_output=True,
                check=False,
            )
            if archive.returncode != 0:
                sys.exit(f"--against {rev}: {archive.stderr.decode().strip()}")
            self.folder = tempfile.TemporaryDirectory(prefix="coordspec-against-")
            package = Path(self.folder.name) / "coordspec"
            package.mkdir()
            (package / "__init__.py").write_text("")  # found before the installed coordspec
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                tar.extractall(package, filter="data")
            env["PYTHONPATH"] = self.folder.name
        options = [f"--{k}={getattr(args, k)}" for k in ("groups", "members", "rounds", "seed")]
        self.child = subprocess.Popen(
            [sys.executable, __file__, "--serve", *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.child.stdin is not None and self.child.stdout is not None
        self.stdin, self.stdout = self.child.stdin, self.child.stdout

    def recorded(self) -> tuple[int, str]:
        count, digest = self.stdout.readline().split()
        return int(count), digest

    def replay(self) -> float:
        self.stdin.write("replay\n")
        self.stdin.flush()
        return float(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.child.wait()
        if self.folder is not None:
            self.folder.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--against", metavar="COMMIT", help="also replay with this commit's reference"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args)

    started = time.perf_counter()
    sides = [] if args.against is None else [Replayer(None, args), Replayer(args.against, args)]
    consumer, digest = build_stream(args.groups, args.members, args.rounds, args.seed)
    classic_events = classic.build_stream(args.groups, args.members, args.rounds, args.seed)
    recorded = [side.recorded() for side in sides]
    print(
        f"recorded {len(consumer):,} consumer-group and {len(classic_events):,} classic events "
        f"for {args.groups:,} groups x {args.members} members in "
        f"{time.perf_counter() - started:.1f} s; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if any(r != (len(consumer), digest) for r in recorded):
        print(f"{args.against} recorded {recorded[1][0]:,} events with other effects", flush=True)
    topics = {TOPIC: 2 * args.members}
    consumer_s = classic_s = monitored_s = float("inf")
    sides_s = [float("inf")] * len(sides)
    for _ in range(3):  # in turn, so that all see the same load
        consumer_s = min(consumer_s, classic.replay(consumer, args.seed, False, topics))
        classic_s = min(classic_s, classic.replay(classic_events, args.seed, False))
        monitored_s = min(monitored_s, classic.replay(consumer, args.seed, True, topics))
        sides_s = [min(best, side.replay()) for best, side in zip(sides_s, sides, strict=True)]
    consumer_rate, classic_rate = len(consumer) / consumer_s, len(classic_events) / classic_s
    print(f"consumer groups (KIP-848): {consumer_rate:>12,.0f} events/s  ({consumer_s:.2f} s)")
    print(
        f"  with the Monitor:        {len(consumer) / monitored_s:>12,.0f} events/s  "
        f"({monitored_s:.2f} s)"
    )
    for side in sides:
        side.close()
    if sides:
        now, then = (len(consumer) / s for s in sides_s)
        print(f"  in a child, this tree:  {now:>12,.0f} events/s  ({sides_s[0]:.2f} s)")
        name = f"  in a child, at {args.against}:"
        print(f"{name:<27}{then:>12,.0f} events/s  ({sides_s[1]:.2f} s)")
        print(f"  this tree / {args.against}:{now / then:>{13 - len(args.against)}.2f}x")
    print(f"classic groups:            {classic_rate:>12,.0f} events/s  ({classic_s:.2f} s)")
    print(f"consumer / classic:        {consumer_rate / classic_rate:>12.2f}x")
    print(f"load average after:        {os.getloadavg()[0]:>12.1f}")
    print(
        f"goal {GOAL_EVENTS_PER_S:,} events/s:     {consumer_rate / GOAL_EVENTS_PER_S:>12.2f}x of goal -> "
        f"{'met' if consumer_rate >= GOAL_EVENTS_PER_S else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
