"""The controller's failover on a real ZooKeeper ensemble: batched multis against one
conditional write at a time, measured side by side in one run.

    .venv/bin/python benchmarks/failover_10k.py [--partitions 10000] [--nodes 3] [--repeat 3] [--warmups 1]

A 3-node ZooKeeper ensemble (Debian's package) starts on 127.0.0.1, its JVMs with the
full JIT, and ``--warmups`` untimed rounds warm them up, a failover per mode as in the
timed rounds: a batched failover makes a handful of requests, so the servers' JIT compiles
their per-request path only in a one-at-a-time failover's 10,000 (after batched warm-ups
alone, the first timed batched run, the only one no one-at-a-time run preceded, was the
slowest of the three in three benchmarks out of four). For each mode and run a fresh
chroot is seeded with one topic of ``--partitions`` partitions, replication factor 3 on
brokers 1, 2 and 3, leaders spread evenly (so broker 3 leads a third of them), and the
three brokers register. The reference controller (reference/replication/controller.py)
runs as broker 1 on its own ZooKeeper session through ``KazooExecutor``. Python's garbage
is collected (so a run does not pay for the previous one's), then broker 3's session
closes, and the clock runs from that moment (its registration is gone) until the
controller reports its ChangeLeaders round done: every partition state rewritten, since
broker 3 leaves the ISR of all of them and a new leader is elected for a third.

The modes differ only in ``ReplicationConfig.batch_writes``: multis of at most the default
byte budget (half of ZooKeeper's 1 MB request limit), or one partition-state write at a
time, each waiting for the previous result (the seed estimated 10K x 4 ms = 40 s for the
latter). In both, the calls of one round go out back to back on the controller's session
(``KazooExecutor.pipeline``), one round trip per round.

Goal (issue 4): batched <= 0.3 s, and >= 30x faster than one at a time.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordspec.broker.zookeeper.executor import KazooExecutor
from coordspec.broker.zookeeper.process import ZooKeeperUnavailable, zookeeper
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import LeadersChanged, ZkCall
from coordspec.reference.replication.events import ControllerStartup, ZkResult, ZkWatch
from coordspec.reference.replication.znodes import (
    BROKER_IDS,
    PERSISTENT_PATHS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    broker_path,
    partition_path,
    partitions_path,
    state_path,
    topic_path,
)
from coordspec.reference.zookeeper import (
    CloseSession,
    Code,
    Create,
    GetData,
    Multi,
    OpenSession,
    Request,
    WatchFired,
)

TOPIC = "t"
ADMIN, CONTROLLER = 1, 2
BROKERS = {1: 101, 2: 102, 3: 103}  # broker id -> its ZooKeeper session
DEAD = 3
SEED_OPS_PER_MULTI = 1_000
SESSION_TIMEOUT_MS = 30_000


def now_ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


def seed(zk: KazooExecutor, partitions: int) -> dict[int, tuple[int, ...]]:
    """The topic, its partition states, and the brokers' registrations."""
    assignment = {p: tuple((p + i) % 3 + 1 for i in range(3)) for p in range(partitions)}
    creates = [Create(path) for path in PERSISTENT_PATHS]
    creates += [
        Create(topic_path(TOPIC), TopicAssignment.of(assignment).encode()),
        Create(partitions_path(TOPIC)),
    ]
    for p, replicas in assignment.items():
        tp = TopicPartition(TOPIC, p)
        creates += [
            Create(partition_path(tp)),
            Create(state_path(tp), PartitionState(replicas[0], 0, replicas, 0).encode()),
        ]
    multis = [
        Multi(tuple(creates[i : i + SEED_OPS_PER_MULTI]))
        for i in range(0, len(creates), SEED_OPS_PER_MULTI)
    ]
    for result in zk.pipeline(ADMIN, multis):
        if result.code != Code.OK:
            raise SystemExit(f"failover_10k: seeding failed with {result.code.name}")
    for broker, session in BROKERS.items():
        zk.handle(OpenSession(0, session, SESSION_TIMEOUT_MS))
        zk.handle(
            Request(
                0,
                session,
                Create(
                    broker_path(broker),
                    b'{"version":4,"host":"127.0.0.1","port":9092}',
                    ephemeral=True,
                ),
            )
        )
    return assignment


def run(controller: Controller, zk: KazooExecutor, event, start: float) -> list:
    """Feed ``event`` and then every result, one round of calls at a time; the non-call effects."""
    out: list = []
    pending = [controller.handle(event)]
    while pending:
        effects = pending.pop(0)
        calls = [e for e in effects if isinstance(e, ZkCall)]
        out += [e for e in effects if not isinstance(e, ZkCall)]
        if calls:
            results = zk.pipeline(CONTROLLER, [call.op for call in calls])
            pending += [
                controller.handle(ZkResult(now_ms(start), call.call_id, result))
                for call, result in zip(calls, results, strict=True)
            ]
    return out


def failover(
    connect_string: str, chroot: str, partitions: int, batch_writes: bool
) -> tuple[float, LeadersChanged]:
    """Seconds from broker 3's disappearance to the controller's last state write."""
    with KazooExecutor(connect_string) as root:
        root.handle(OpenSession(0, ADMIN, SESSION_TIMEOUT_MS))
        root.handle(Request(0, ADMIN, Create(chroot)))
    with KazooExecutor(connect_string, chroot=chroot, timeout_s=120) as zk:
        zk.handle(OpenSession(0, ADMIN, SESSION_TIMEOUT_MS))
        assignment = seed(zk, partitions)
        zk.handle(OpenSession(0, CONTROLLER, SESSION_TIMEOUT_MS))
        start = time.monotonic()
        controller = Controller(1, ReplicationConfig(batch_writes=batch_writes))
        run(controller, zk, ControllerStartup(now_ms(start)), start)
        if not (controller.active and controller.idle):
            raise SystemExit("failover_10k: the controller did not settle after its election")

        gc.collect()
        began = time.perf_counter()
        fired = [
            e
            for e in zk.handle(CloseSession(now_ms(start), BROKERS[DEAD]))
            if isinstance(e, WatchFired) and e.session_id == CONTROLLER and e.path == BROKER_IDS
        ]
        if not fired:
            raise SystemExit("failover_10k: the controller's watch on /brokers/ids did not fire")
        out = run(controller, zk, ZkWatch(now_ms(start), fired[0].path, fired[0].type), start)
        elapsed = time.perf_counter() - began

        done = [e for e in out if isinstance(e, LeadersChanged)]
        if len(done) != 1 or done[0].written != partitions:
            raise SystemExit(
                f"failover_10k: expected one round writing {partitions} states, got {done}"
            )
        check_states(zk, assignment)
        return elapsed, done[0]


def check_states(zk: KazooExecutor, assignment: dict[int, tuple[int, ...]]) -> None:
    """Every partition lost broker 3 from its ISR, and the ones it led have a new leader."""
    reads = zk.pipeline(ADMIN, [GetData(state_path(TopicPartition(TOPIC, p))) for p in assignment])
    for p, read in zip(assignment, reads, strict=True):
        state = PartitionState.decode(state_path(TopicPartition(TOPIC, p)), read.data)
        if (
            DEAD in state.isr
            or state.leader == DEAD
            or state.leader not in state.isr
            or read.stat.version != 1
        ):
            raise SystemExit(
                f"failover_10k: partition {p} ended as {state} (version {read.stat.version})"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=3, help="ZooKeeper ensemble size (default 3)")
    parser.add_argument(
        "--warmups",
        type=int,
        default=1,
        help="untimed rounds (a failover per mode) before the timed ones (default 1)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="failovers per mode; the median is reported (default 3)",
    )
    args = parser.parse_args()
    if args.partitions < 3 or args.nodes < 1 or args.repeat < 1 or args.warmups < 0:
        parser.error(
            "--partitions must be at least 3, --nodes and --repeat at least 1, --warmups at least 0"
        )

    timings: dict[bool, list[float]] = {True: [], False: []}
    rounds: dict[bool, LeadersChanged] = {}
    try:
        with zookeeper(args.nodes, full_jit=True) as ensemble:
            print(
                f"ZooKeeper: {args.nodes} node(s) at {ensemble.connect_string}; {args.partitions:,} partitions, RF 3, "
                f"broker {DEAD} leads {sum(1 for p in range(args.partitions) if p % 3 + 1 == DEAD):,}",
                flush=True,
            )
            # Untimed rounds first: the servers' JIT compiles the write path.
            for attempt in range(-args.warmups, args.repeat):
                warmup = attempt < 0
                label = f"warm-up {attempt + args.warmups + 1}" if warmup else f"run {attempt + 1}"
                for batch_writes in (
                    True,
                    False,
                ):  # alternate, so drift in the machine's load hits both
                    mode = "batched" if batch_writes else "one-at-a-time"
                    elapsed, done = failover(
                        ensemble.connect_string,
                        f"/failover-{label.replace(' ', '-')}-{mode}",
                        args.partitions,
                        batch_writes,
                    )
                    if warmup:
                        print(f"  {label} {mode:>13}: {elapsed:8.3f} s  (not counted)", flush=True)
                        continue
                    timings[batch_writes].append(elapsed)
                    rounds[batch_writes] = done
                    print(
                        f"  {label} {mode:>13}: {elapsed:8.3f} s  ({done.written:,} states in {done.multis:,} requests)",
                        flush=True,
                    )
    except ZooKeeperUnavailable as e:
        print(f"failover_10k: {e}", file=sys.stderr)
        return 2

    batched, single = statistics.median(timings[True]), statistics.median(timings[False])
    ratio = single / batched
    print()
    print("| mode | requests | median failover | runs |")
    print("|---|---|---|---|")
    for batch_writes, median in ((True, batched), (False, single)):
        runs = ", ".join(f"{t:.3f}" for t in timings[batch_writes])
        print(
            f"| {'batched' if batch_writes else 'one at a time'} | {rounds[batch_writes].multis:,} | {median:.3f} s | {runs} |"
        )
    print()
    print(f"ratio (one at a time / batched): {ratio:.1f}x")
    print(
        f"goal: batched <= 0.3 s: {'met' if batched <= 0.3 else 'NOT met'}; >= 30x: {'met' if ratio >= 30 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
