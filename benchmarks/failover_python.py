"""The Python side of ``failover_10k.py``'s failover, without ZooKeeper: deterministic, for
counting instructions while the machine is busy.

    .venv/bin/python benchmarks/failover_python.py [--partitions 10000] [--one-at-a-time] [--repeat 5]
    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=functools_reduce .venv/bin/python benchmarks/failover_python.py --repeat 1

The same topic, brokers and controller as ``failover_10k.py`` (its ``seed`` and ``run``),
on the in-process ZooKeeper model (reference/zookeeper). Broker 3's session closes and the
controller's failover runs from the same state: first on the model, recording every
answer; then, measured, ``--repeat`` times through ``KazooExecutor.pipeline`` with kazoo's
connection replaced by the recorded answers: each multi is encoded as the executor sends
it, and its answer is handed over from the bytes ZooKeeper would send (jute's layout) by
the code kazoo's connection thread runs. What is left out is the socket, kazoo's threads
and ZooKeeper.

The measured window runs inside ``functools.reduce``, which nothing else in it calls, so
callgrind's ``--toggle-collect=functools_reduce`` counts exactly it. Python's garbage is
collected before it, as ``failover_10k.py`` does, and the collector runs within it as it
would. The script checks that the measured failover sent the same operations and emitted
the same effects as the recorded one, and prints a digest of the multis' bytes: a change
that keeps every znode's bytes and every version check keeps the digest.
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import pickle
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from failover_10k import BROKERS, CONTROLLER, DEAD, SESSION_TIMEOUT_MS, run, seed
from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import Transaction
from kazoo.protocol.states import ZnodeStat

from coordspec.broker.zookeeper.executor import KazooExecutor, _Session
from coordspec.reference.replication.config import ReplicationConfig
from coordspec.reference.replication.controller import Controller
from coordspec.reference.replication.effects import LeadersChanged
from coordspec.reference.replication.events import ControllerStartup, ZkWatch
from coordspec.reference.replication.znodes import BROKER_IDS
from coordspec.reference.zookeeper import (
    CheckResult,
    CloseSession,
    Code,
    CreateResult,
    DeleteResult,
    ExistsResult,
    GetChildrenResult,
    GetDataResult,
    Multi,
    OpenSession,
    Reply,
    Request,
    SetDataResult,
    Stat,
    WatchFired,
    ZooKeeperServer,
)

CHROOT = "/failover"
# jute's MultiResponse, written here as ZooKeeper writes it, apart from multi_wire's reader
# (as tests/broker/test_zookeeper_multi_wire.py does): a reader's mistake shows in the replay.
_HEADER = struct.Struct("!iBi")  # type, done, err
_STAT = struct.Struct("!qqqqiiiqiiq")
_INT = struct.Struct("!i")
_CREATE, _DELETE, _SET_DATA, _CHECK = 1, 2, 5, 13
_END = _HEADER.pack(-1, True, -1)


class ModelZk:
    """The model server behind ``failover_10k``'s ``seed`` and ``run``: ``handle`` and
    ``pipeline`` as ``KazooExecutor`` has them, recording each pipelined round."""

    def __init__(self) -> None:
        self.server = ZooKeeperServer(system_nodes=False)  # time stays 0: no session expires
        self.held: list = []  # watch events of pipelined requests, for the next handle
        self.rounds: list[tuple[list, list]] = []

    def handle(self, event) -> list:
        effects, self.held = [*self.held, *self.server.handle(event)], []
        return effects

    def pipeline(self, session_id: int, ops) -> list:
        results = []
        for op in ops:
            for effect in self.server.handle(Request(self.server.now_ms, session_id, op)):
                if isinstance(effect, Reply):
                    results.append(effect.result)
                else:
                    self.held.append(effect)
        self.rounds.append((list(ops), results))
        return results


class Answer:
    """What ``KazooExecutor`` waits on: kazoo's value for one request, made when asked
    for (a multi's from its answer's bytes, as kazoo's connection thread does)."""

    def __init__(self, client: KazooClient, request, value) -> None:
        self.client, self.request, self.value = client, request, value

    def get(self, timeout=None):
        if isinstance(self.value, Exception):
            raise self.value
        if self.request is None:
            return self.value
        response = self.request.deserialize(self.value, 0)
        return Transaction.unchroot(self.client, response)


class ReplayExecutor(KazooExecutor):
    """``KazooExecutor`` whose connection answers each request with the recorded answer."""

    def __init__(self, answers: list[tuple[list, list]]) -> None:
        super().__init__("127.0.0.1:1", chroot=CHROOT)
        client = KazooClient("127.0.0.1:1" + CHROOT)  # never started: for its unchroot
        self._sessions[CONTROLLER] = _Session(CONTROLLER, client)
        self._owners.update({s: s for s in BROKERS.values()})
        self.expected = answers
        self.answers: list = []
        self.sent: list = []  # (ops, multi bodies) per round, checked after the window
        self._pending_value = None

    def pipeline(self, session_id: int, ops) -> list:
        self.answers = list(self.expected[len(self.sent)][1])
        self.sent.append((ops, []))
        return super().pipeline(session_id, ops)

    def _send(self, session: _Session, op):
        value = self.answers.pop(0)
        if isinstance(op, Multi):
            self._pending_value = value
            return super()._send(session, op)
        return Answer(session.client, None, value)

    def _call_async(self, client: KazooClient, request):
        self.sent[-1][1].append(request.body)
        return Answer(client, request, self._pending_value)


_stamp = iter(range(1, 1 << 62))


def znode_stat(stat: Stat) -> ZnodeStat:
    """A real stat for the model's: zxids and times differ per node, as ZooKeeper's do."""
    zxid = next(_stamp)
    return ZnodeStat(
        zxid,
        zxid,
        1_700_000_000_000 + zxid,
        1_700_000_000_000 + zxid,
        stat.version,
        stat.cversion,
        0,
        stat.ephemeral_owner,
        stat.data_length,
        stat.num_children,
        zxid,
    )


def kazoo_value(result):
    """What kazoo's connection hands over for ``result``: a multi's answer as its bytes."""
    if result.code not in (Code.OK, Code.NONODE) or (
        result.code == Code.NONODE and not isinstance(result, ExistsResult)
    ):
        return EXCEPTIONS[int(result.code)]()
    if isinstance(result, ExistsResult):
        return None if result.stat is None else znode_stat(result.stat)
    if isinstance(result, GetDataResult):
        return (result.data, znode_stat(result.stat))
    if isinstance(result, GetChildrenResult):
        return (list(result.children), znode_stat(result.stat))
    parts = []
    for r in result.results:  # a successful multi: jute's MultiResponse
        if isinstance(r, SetDataResult):
            parts += [_HEADER.pack(_SET_DATA, False, 0), _STAT.pack(*znode_stat(r.stat))]
        elif isinstance(r, CreateResult):
            path = (CHROOT + r.path).encode()
            parts += [_HEADER.pack(_CREATE, False, 0), _INT.pack(len(path)), path]
        elif isinstance(r, CheckResult):
            parts.append(_HEADER.pack(_CHECK, False, 0))
        elif isinstance(r, DeleteResult):
            parts.append(_HEADER.pack(_DELETE, False, 0))
        else:
            raise SystemExit(f"failover_python: no wire answer for {r!r}")
    parts.append(_END)
    return b"".join(parts)


def prepare(partitions: int, batch_writes: bool) -> tuple[Controller, ModelZk, ZkWatch]:
    """The seeded model, the elected controller, and the watch event broker 3's exit fires."""
    zk = ModelZk()
    zk.handle(OpenSession(0, 1, SESSION_TIMEOUT_MS))
    seed(zk, partitions)
    zk.handle(OpenSession(0, CONTROLLER, SESSION_TIMEOUT_MS))
    controller = Controller(1, ReplicationConfig(batch_writes=batch_writes))
    start = time.monotonic()
    run(controller, zk, ControllerStartup(0), start)
    if not (controller.active and controller.idle):
        raise SystemExit("failover_python: the controller did not settle after its election")
    fired = [
        e
        for e in zk.handle(CloseSession(0, BROKERS[DEAD]))
        if isinstance(e, WatchFired) and e.session_id == CONTROLLER and e.path == BROKER_IDS
    ]
    if not fired:
        raise SystemExit("failover_python: the controller's watch on /brokers/ids did not fire")
    zk.rounds = []
    return controller, zk, ZkWatch(0, fired[0].path, fired[0].type)


def digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def record(partitions: int, batch_writes: bool) -> tuple[bytes, ZkWatch, list, str, int]:
    """The elected controller (pickled), the watch event, the failover's rounds as kazoo
    would answer them, a digest of its effects and cached states, and its multis."""
    controller, zk, watch = prepare(partitions, batch_writes)
    pristine = pickle.dumps(controller)
    effects = run(controller, zk, watch, time.monotonic())
    done = [e for e in effects if isinstance(e, LeadersChanged)]
    if len(done) != 1 or done[0].written != partitions:
        raise SystemExit(f"failover_python: expected one round of {partitions}, got {done}")
    answers = [(digest(ops), [kazoo_value(r) for r in results]) for ops, results in zk.rounds]
    return (
        pristine,
        watch,
        answers,
        digest((effects, sorted(controller.states.items()))),
        done[0].multis,
    )


def failover(controller: Controller, zk: ReplayExecutor, watch: ZkWatch) -> list:
    """The measured window: ``run`` as failover_10k.py times it, inside ``functools.reduce``."""
    effects: list = []
    start = time.monotonic()
    functools.reduce(
        lambda _, step: step(), [lambda: effects.extend(run(controller, zk, watch, start))], None
    )
    return effects


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--one-at-a-time", action="store_true", help="batch_writes=False")
    parser.add_argument("--repeat", type=int, default=5, help="measured failovers (default 5)")
    args = parser.parse_args()

    # Only what failover_10k.py's process holds stays alive: the controller and its caches.
    pristine, watch, answers, expected, multis = record(args.partitions, not args.one_at_a_time)
    gc.collect()
    timings = []
    for _ in range(args.repeat):
        controller = pickle.loads(pristine)
        zk = ReplayExecutor(answers)
        gc.collect()
        began = time.perf_counter()
        effects = failover(controller, zk, watch)
        timings.append(time.perf_counter() - began)
        if digest((effects, sorted(controller.states.items()))) != expected:
            raise SystemExit("failover_python: the measured failover differs from the recorded one")
        if [digest(ops) for ops, _ in zk.sent] != [ops for ops, _ in answers]:
            raise SystemExit("failover_python: the measured failover sent other operations")
        bodies = hashlib.sha256(b"".join(b for _, sent in zk.sent for b in sent)).hexdigest()[:16]
    print(
        f"{args.partitions:,} partitions, {multis:,} multis; multis' bytes sha256 {bodies}; "
        f"window {min(timings) * 1000:.1f} ms best, "
        f"{sorted(timings)[len(timings) // 2] * 1000:.1f} ms median of {len(timings)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
