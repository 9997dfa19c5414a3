"""``coordspec simulate``: seeded consumer groups on the reference, written as traces and
checked, with faults to inject and bugs to plant.

Each run is one group of a few consumers on the in-process reference (virtual time, the
invariant Monitor watching every step), driven by a seeded random schedule: clients join,
sync, heartbeat, commit and leave as a consumer does, while faults strike — a client
crashes (stops sending, so its session expires), the schedule pauses (past session timeouts),
the coordinator restarts (reloads the group from its log). A planted bug
(:mod:`planted`) rewrites what clients hear. Every run is written to a trace and checked
with :func:`~coordspec.conformance.tracecheck.replay.check_key`; a violation, or an invariant the
reference itself breaks, is reported with the seed that replays the run.

With ``--cluster`` each run is a whole cluster instead (:mod:`clusters`): brokers fail,
coordinators move, and the partitions' events are written and checked too. With ``--spark``
the runs are spread over Spark executors, one trace file per partition.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import random
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from coordspec.conformance.simulate import clusters, planted
from coordspec.conformance.simulate.consumers import (
    SOURCE,
    Client,
    learn,
    message,
    request_for,
    run_name,
)
from coordspec.conformance.simulate.names import FAULTS
from coordspec.conformance.suite.reference_target import ReferenceSession
from coordspec.conformance.trace.format import TraceWriter
from coordspec.conformance.trace.records import Line, quick_key
from coordspec.conformance.tracecheck.replay import Settings, check_key
from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import InvariantViolation
from coordspec.reference.group import GroupConfig


@dataclass
class Options:
    clients: int = 3
    steps: int = 60
    faults: tuple[str, ...] = FAULTS
    bug: str | None = None
    cluster: bool = False  # whole clusters (conformance/simulate/clusters.py), not one coordinator
    token: str = (
        ""  # this invocation's, in every run name: run names stay unique across invocations
    )


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
        self.group, self.run_id = f"sim-{seed}", run_name(seed, options)
        self.session = ReferenceSession(GroupConfig(), SeededChoices(seed, arbitrary=True))
        self.clients = [Client(f"c{i + 1}") for i in range(options.clients)]
        self.rewrite = planted.BUGS[options.bug][0] if options.bug in planted.BUGS else None
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

    def request_for(self, c: Client):
        self.ids += 1
        return request_for(c, self.group, self.ids, self.session.now_ms(), self.rng)

    async def send(self, c: Client) -> None:
        request = self.request_for(c)
        self.sent[c.name] = request
        c.waiting = True
        self.record(self.session.now_ms(), kind="request", client=c.name, **message(request))
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
            self.record(got[1], kind="response", client=c.name, **message(request, response))
            c.waiting = False
            if not c.crashed:
                learn(c, request, response)


def simulate_one(
    index: int, seed: int, options: Options, path: str, first_line: int, out: io.TextIOBase
) -> RunResult:
    """Play one run, append its trace to ``out`` (lines numbered from ``first_line`` in
    ``path``), and check each of its keys (groups, and partitions of a cluster)."""
    buffer = io.StringIO()
    result = RunResult(index, seed, 0)
    if options.cluster:
        result.invariant = clusters.play(seed, options, buffer)
    else:
        try:
            asyncio.run(_Run(seed, options, TraceWriter(buffer, SOURCE)).play())
        except InvariantViolation as exc:
            result.invariant = f"{exc.invariant}: {exc.detail}"
    text = buffer.getvalue().splitlines(keepends=True)
    out.writelines(text)
    result.events = len(text)
    keys: dict[tuple[str, str], list[Line]] = {}
    for i, t in enumerate(text):
        line = Line(path, first_line + i, t)
        key, run, _ = quick_key(line)
        keys.setdefault((key, run), []).append(line)
    for (key, run), lines in keys.items():
        result.violations += [
            dataclasses.asdict(v) for v in check_key(key, run, lines, Settings()).violations
        ]
    return result


def simulate_partition(
    indices, seed: int, options: Options, directory: str, partition: int
) -> list[RunResult]:
    """Runs ``indices`` (run i has seed ``seed + i``), written to one file of ``directory``."""
    path = Path(directory) / f"sim-{partition:05d}.jsonl"
    results, line = [], 1
    with path.open("w", encoding="utf-8") as out:
        for index in indices:
            result = simulate_one(index, seed + index, options, str(path), line, out)
            line += result.events
            results.append(result)
    return results


def simulate(
    runs: int, seed: int, options: Options, directory: Path, spark=None
) -> tuple[list[RunResult], float]:
    """All runs, on Spark executors when ``spark`` is a session; and the wall time."""
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    options = options if options.token else dataclasses.replace(options, token=secrets.token_hex(3))
    if spark is None:
        results = simulate_partition(range(runs), seed, options, str(directory), 0)
    else:
        slices = max(1, min(runs, 4 * spark.sparkContext.defaultParallelism))
        target = str(directory.resolve())
        results = (
            spark.sparkContext.parallelize(range(runs), slices)
            .mapPartitionsWithIndex(
                lambda p, it: simulate_partition(list(it), seed, options, target, p)
            )
            .collect()
        )
    return sorted(results, key=lambda r: r.index), time.perf_counter() - started


def report(results: list[RunResult], options: Options, wall_s: float, directory: Path) -> str:
    lines = []
    default = Options()
    flags = " --cluster" if options.cluster else ""
    flags += f" --bug {options.bug}" if options.bug else ""
    flags += f" --faults {','.join(options.faults) or 'none'}" if options.faults != FAULTS else ""
    flags += f" --clients {options.clients}" if options.clients != default.clients else ""
    flags += f" --steps {options.steps}" if options.steps != default.steps else ""
    for r in results:
        found = [f"invariant {r.invariant}"] if r.invariant else []
        found += [
            f"{v['rule']}{' (' + v['invariant'] + ')' if v['invariant'] else ''} in "
            f"{'partition ' + v['partition'] if v.get('partition') else 'group ' + v['group_id']} at {v['file']}:{v['line']}: {v['message']}"
            for v in r.violations
        ]
        for what in found:
            lines.append(
                f"run {r.index} (seed {r.seed}): {what}\n  replay: coordspec simulate --runs 1 --seed {r.seed}{flags}"
            )
    bad = sum(1 for r in results if r.violations or r.invariant)
    events = sum(r.events for r in results)
    lines.append(
        f"{len(results)} runs, {events} events, {bad} with a violation, in {wall_s:.2f} s; traces in {directory}"
    )
    return "\n".join(lines)
