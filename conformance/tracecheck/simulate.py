"""``coordspec simulate``: seeded consumer groups on the reference, written as traces and
checked, with faults to inject and bugs to plant.

Each run is one group of a few consumers on the in-process reference (virtual time, the
invariant Monitor watching every step), driven by a seeded random schedule: clients join,
sync, heartbeat, commit and leave as a consumer does, while faults strike — a client
crashes (stops sending, so its session expires), the schedule pauses (past session timeouts),
the coordinator restarts (reloads the group from its log). A planted bug
(:mod:`planted`) rewrites what clients hear. Every run is written to a trace and checked
with :func:`~conformance.tracecheck.replay.check_key`; a violation, or an invariant the
reference itself breaks, is reported with the seed that replays the run.

With ``--spark`` the runs are spread over Spark executors, one trace file per partition.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.suite import codec
from conformance.suite.reference_target import ReferenceSession
from conformance.suite.trace import TraceWriter
from conformance.tracecheck import planted
from conformance.tracecheck.names import FAULTS
from conformance.tracecheck.records import Line
from conformance.tracecheck.replay import Settings, check_key
from reference.choices import SeededChoices
from reference.consumer_protocol import Assignment as Owned
from reference.consumer_protocol import Subscription, TopicPartitions, encode_assignment, encode_subscription
from reference.errors import ErrorCode, InvariantViolation
from reference.group import GroupConfig
from reference.group.requests import (
    API_KEYS,
    Assignment,
    CommitPartition,
    CommitTopic,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    MemberIdentity,
    OffsetCommit,
    Protocol,
    SyncGroup,
)

TOPIC, PARTITIONS = "foo", 6
SOURCE = "simulate"
_SUBSCRIPTION = encode_subscription(Subscription((TOPIC,)))


@dataclass
class Options:
    clients: int = 3
    steps: int = 60
    faults: tuple[str, ...] = FAULTS
    bug: str | None = None


@dataclass
class _Client:
    name: str
    member_id: str = ""
    generation: int = -1
    phase: str = "join"  # join, sync, stable
    leader: bool = False
    members: tuple[str, ...] = ()
    crashed: bool = False
    waiting: bool = False
    offset: int = 0


@dataclass
class RunResult:
    index: int
    seed: int
    events: int
    violations: list[dict] = field(default_factory=list)
    invariant: str = ""  # an invariant the reference itself broke, with its detail


class _Run:
    def __init__(self, seed: int, options: Options, trace: TraceWriter) -> None:
        self.rng = random.Random(seed)
        self.options, self.trace = options, trace
        self.group = self.run_id = f"sim-{seed}"
        self.session = ReferenceSession(GroupConfig(), SeededChoices(seed, arbitrary=True))
        self.clients = [_Client(f"c{i + 1}") for i in range(options.clients)]
        self.rewrite = planted.BUGS[options.bug][0] if options.bug else None
        self.sent: dict[str, object] = {}
        self.ids = 0

    def record(self, t_ms: int, **fields) -> None:
        self.trace.write(self.run_id, None, self.group, t_ms, **fields)

    async def play(self) -> None:
        for _ in range(self.options.steps):
            await self.step()
            await self.collect()

    async def step(self) -> None:
        roll, faults = self.rng.random(), self.options.faults
        idle = [c for c in self.clients if not c.crashed and not c.waiting]
        if roll < 0.03 and "crash" in faults and idle:
            self.rng.choice(idle).crashed = True
        elif roll < 0.05 and "restart" in faults:
            await self.session.restart()
            self.record(self.session.now_ms(), kind="fault", fault="restart")
            for client in self.clients:
                client.waiting = False
        elif roll < 0.25 or not idle:
            longest = 14_000 if "pause" in faults and self.rng.random() < 0.15 else 3_000
            ms = self.rng.randrange(100, longest)
            await self.session.sleep(ms)
            self.record(self.session.now_ms(), kind="time", advance_ms=ms)
        else:
            await self.send(self.rng.choice(idle))

    def request_for(self, c: _Client):
        self.ids += 1
        now, common = self.session.now_ms(), {"group_id": self.group}
        if c.phase == "join":
            return JoinGroup(self.ids, 9, now, **common, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                             member_id=c.member_id, protocols=(Protocol("range", _SUBSCRIPTION),), client_id=c.name)
        member = {**common, "generation_id": c.generation, "member_id": c.member_id}
        if c.phase == "sync":
            return SyncGroup(self.ids, 5, now, **member, protocol_type="consumer", protocol_name="range",
                             assignments=self.assign(c.members) if c.leader else ())
        roll = self.rng.random()
        if roll < 0.05:
            return LeaveGroup(self.ids, 5, now, group_id=self.group, members=(MemberIdentity(c.member_id),))
        if roll < 0.5:
            c.offset += self.rng.randrange(1, 50)
            partitions = tuple(CommitPartition(p, c.offset) for p in range(PARTITIONS))
            if roll < 0.1 and c.generation > 1:  # a commit delayed past a rebalance carries the generation before
                member["generation_id"] = c.generation - 1
            return OffsetCommit(self.ids, 9, now, **member, topics=(CommitTopic(TOPIC, partitions),))
        return Heartbeat(self.ids, 4, now, **member)

    @staticmethod
    def assign(members: tuple[str, ...]) -> tuple[Assignment, ...]:
        return tuple(Assignment(m, encode_assignment(Owned((TopicPartitions(TOPIC, tuple(range(i, PARTITIONS, len(members)))),))))
                     for i, m in enumerate(members))

    async def send(self, c: _Client) -> None:
        request = self.request_for(c)
        self.sent[c.name] = request
        c.waiting = True
        self.record(self.session.now_ms(), kind="request", client=c.name, **self.message(request))
        await self.session.send(c.name, request)

    async def collect(self) -> None:
        for c in self.clients:
            if not c.waiting:
                continue
            got = await self.session.receive(c.name, 0)
            if got is None:
                continue
            request = self.sent[c.name]
            response = self.rewrite(request, got[0]) if self.rewrite else got[0]
            self.record(got[1], kind="response", client=c.name, **self.message(request, response))
            c.waiting = False
            if not c.crashed:
                self.learn(c, request, response)

    @staticmethod
    def message(request, response=None) -> dict:
        return {"api": request.api, "api_key": API_KEYS[request.api], "api_version": request.api_version,
                "correlation_id": int(request.request_id),
                "fields": codec.request_fields(request) if response is None else codec.encode(response)}

    @staticmethod
    def learn(c: _Client, request, response) -> None:
        """What a consumer does with an answer."""
        error = getattr(response, "error_code", None)
        if error is None:  # OffsetCommit: the first partition's error stands for the group's
            error = response.topics[0].partitions[0].error_code if response.topics else ErrorCode.NONE
        if isinstance(request, LeaveGroup) or error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.member_id, c.phase = "", "join"
        elif isinstance(request, JoinGroup):
            if error == ErrorCode.MEMBER_ID_REQUIRED:
                c.member_id = response.member_id
            elif error == ErrorCode.NONE:
                c.member_id, c.generation, c.phase = response.member_id, response.generation_id, "sync"
                c.leader = response.leader == response.member_id
                c.members = tuple(m.member_id for m in response.members)
        elif isinstance(request, SyncGroup):
            c.phase = "stable" if error == ErrorCode.NONE else "join"
        elif error in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
            c.phase = "join"


def simulate_one(index: int, seed: int, options: Options, path: str, first_line: int, out: io.TextIOBase) -> RunResult:
    """Play one run, append its trace to ``out`` (lines numbered from ``first_line`` in
    ``path``), and check it."""
    buffer = io.StringIO()
    run = _Run(seed, options, TraceWriter(buffer, SOURCE))
    result = RunResult(index, seed, 0)
    try:
        asyncio.run(run.play())
    except InvariantViolation as exc:
        result.invariant = f"{exc.invariant}: {exc.detail}"
    text = buffer.getvalue().splitlines(keepends=True)
    out.writelines(text)
    result.events = len(text)
    lines = [Line(path, first_line + i, t) for i, t in enumerate(text)]
    report = check_key(run.group, run.run_id, lines, Settings())
    result.violations = [dataclasses.asdict(v) for v in report.violations]
    return result


def simulate_partition(indices, seed: int, options: Options, directory: str, partition: int) -> list[RunResult]:
    """Runs ``indices`` (run i has seed ``seed + i``), written to one file of ``directory``."""
    path = Path(directory) / f"sim-{partition:05d}.jsonl"
    results, line = [], 1
    with path.open("w", encoding="utf-8") as out:
        for index in indices:
            result = simulate_one(index, seed + index, options, str(path), line, out)
            line += result.events
            results.append(result)
    return results


def simulate(runs: int, seed: int, options: Options, directory: Path, spark=None) -> tuple[list[RunResult], float]:
    """All runs, on Spark executors when ``spark`` is a session; and the wall time."""
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if spark is None:
        results = simulate_partition(range(runs), seed, options, str(directory), 0)
    else:
        slices = max(1, min(runs, 4 * spark.sparkContext.defaultParallelism))
        target = str(directory.resolve())
        results = (spark.sparkContext.parallelize(range(runs), slices)
                   .mapPartitionsWithIndex(lambda p, it: simulate_partition(list(it), seed, options, target, p))
                   .collect())
    return sorted(results, key=lambda r: r.index), time.perf_counter() - started


def report(results: list[RunResult], options: Options, wall_s: float, directory: Path) -> str:
    lines = []
    flags = f" --bug {options.bug}" if options.bug else ""
    flags += f" --faults {','.join(options.faults) or 'none'}" if options.faults != FAULTS else ""
    for r in results:
        found = [f"invariant {r.invariant}"] if r.invariant else []
        found += [f"{v['rule']}{' (' + v['invariant'] + ')' if v['invariant'] else ''} at {v['file']}:{v['line']}: {v['message']}"
                  for v in r.violations]
        for what in found:
            lines.append(f"run {r.index} (seed {r.seed}): {what}\n  replay: coordspec simulate --runs 1 --seed {r.seed}{flags}")
    bad = sum(1 for r in results if r.violations or r.invariant)
    events = sum(r.events for r in results)
    lines.append(f"{len(results)} runs, {events} events, {bad} with a violation, in {wall_s:.2f} s; traces in {directory}")
    return "\n".join(lines)
