"""Run a catalog of scenarios against a target, and write the reports.

    from coordspec.conformance.suite import run
    outcome = run("reference", junit=Path("out/conformance.xml"), report=Path("out/conformance"))
    outcome.exit_code   # 0 when every run that ran passed

Every scenario runs once per version plan (see :mod:`versions`), ``loop`` times over, each
run on a group id of its own, concurrently (``concurrency`` runs at a time), so the timing
scenarios do not add up against a real broker, the longest first. A fault on a real broker
hits every group on it, so there (``faults_are_shared``) the scenarios that inject one run
alone, one at a time, after the others. ``allow`` names a file of tolerated
divergences (:mod:`allow`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import hashlib
import io
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from coordspec.conformance.suite import allow as allow_file
from coordspec.conformance.suite import divergences, loader, outputs, reports, targets, versions
from coordspec.conformance.suite.broker_settings import resolve as resolve_settings
from coordspec.conformance.suite.flaky import Flaky, flaky
from coordspec.conformance.suite.oracle import TIMING_TOLERANCE_MS
from coordspec.conformance.suite.progress import Progress
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.suite.runner import (
    LISTEN_AFTER_FAILURE_MS,
    missing_capability,
    result_of,
    run_one,
)
from coordspec.conformance.suite.scenario import Scenario
from coordspec.conformance.suite.severity import SEVERITIES
from coordspec.conformance.suite.target import Target
from coordspec.conformance.trace.format import TraceWriter
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.properties import Given, SettingsError


class SuiteError(ValueError):
    """Something on the command line or in a scenario file is wrong; one line for the user
    (a line each for output paths)."""


class BrokerLost(Exception):
    """Runs in a row could not reach the broker: the run stops; the message says why."""


INTERRUPTED = "interrupted"
# Runs in a row that could not open a connection before the run stops: a broker restarted
# by a fault hook is back before the hook returns, so this many means it is gone.
LOST_AFTER = 8


@dataclass
class Outcome:
    target: str
    results: list[RunResult]
    wall_s: float
    written: list[Path]
    divergences: list[divergences.Divergence]
    # The severities that fail the run (--fail-on); harness errors always do.
    fail_on: frozenset[str] = frozenset(SEVERITIES)
    stopped: str = ""  # why the run stopped before its end: INTERRUPTED, or the broker is gone
    flaky: list[Flaky] = field(default_factory=list)  # --loop: passed in some loops only

    @property
    def exit_code(self) -> int:
        """130 after a Ctrl-C; 1 if a run errored, or a divergence of a failing severity is
        not allowed."""
        if self.stopped == INTERRUPTED:
            return 130  # as a shell reports a command ended by SIGINT
        if any(r.status == "error" for r in self.results):
            return 1
        grouped = {id(r) for d in self.divergences for r in d.runs}
        if any(r.status == "failed" and id(r) not in grouped for r in self.results):
            return 1
        return int(any(d.severity in self.fail_on and not d.allowed for d in self.divergences))


def select(scenarios: list[Scenario], patterns: Iterable[str]) -> list[Scenario]:
    """Scenarios with a rule, tag or name matching a pattern (shell-style: GM-5*, static),
    and none matching a pattern written with a leading ``!`` (``!slow``)."""
    patterns = list(patterns)
    wanted = [p for p in patterns if not p.startswith("!")]
    unwanted = [p[1:] for p in patterns if p.startswith("!")]

    def hits(scenario: Scenario, among: list[str]) -> bool:
        return any(
            fnmatch.fnmatchcase(word, p)
            for p in among
            for word in (*scenario.rules, *scenario.tags, scenario.name)
        )

    return [s for s in scenarios if (not wanted or hits(s, wanted)) and not hits(s, unwanted)]


def planned(
    scenario: Scenario, target: Target, mode: str, limits: dict[str, range]
) -> list[dict[str, int]] | str:
    """The version plans to run, or why there is none: a step the target cannot take at
    all is the better reason (a broker serving no TxnOffsetCommit also has no version of it)."""
    missing = missing_capability(scenario, target)
    if missing is not None:
        return missing
    ranges = versions.narrow(scenario.versions, target.versions)
    if ranges is not None:
        ranges = versions.narrow(ranges, limits)
    if ranges is None:
        wanted = ", ".join(versions.label(api, r) for api, r in scenario.versions.items())
        return f"no version in common with the target and --versions (scenario: {wanted})"
    return versions.select(versions.plans(ranges), mode)


def run(
    target: str | Target = "reference",
    *,
    scenarios: Iterable[Path] = (),
    tags: Iterable[str] = (),
    version_selection: str = "all",
    junit: Path | None = None,
    report: Path | None = None,
    trace: Path | None = None,
    bootstrap: str | None = None,
    seed: int = 0,
    concurrency: int = 32,
    allow: Path | None = None,
    loop: int = 1,
    out: TextIO | None = None,
    timing_tolerance_ms: int = TIMING_TOLERANCE_MS,
    rerun: str | None = None,
    listen_after_failure_ms: int = LISTEN_AFTER_FAILURE_MS,
    fail_on: Iterable[str] = SEVERITIES,
    broker_settings: Mapping[str, object] | None = None,
) -> Outcome:
    """Run the selected scenarios; raises SuiteError for a bad option or scenario file.
    ``timing_tolerance_ms``: GM-36's (see the oracle). ``rerun``: the command line that
    selects this target, which each divergence's rerun command narrows to one run.
    ``listen_after_failure_ms``: how long after sending a request the broker left
    unanswered a failed run still waits for the answer (see the runner). ``fail_on``: the
    severities (spec/divergences.md) whose divergences make the exit code 1.
    ``broker_settings``: the broker's settings by Kafka's names (as ``--broker-setting``),
    over the target's; the oracle models the broker with them."""
    out = out or sys.stdout
    unwritable = outputs.problems(junit, report, trace)
    if unwritable:
        raise SuiteError("\n".join(unwritable))
    try:
        declared = resolve_settings(
            Given("broker_settings", name, str(value))
            for name, value in (broker_settings or {}).items()
        )
        config = dataclasses.replace(GroupConfig(), **declared) if declared else None
        if isinstance(target, str):
            chosen = targets.make(target, bootstrap, seed, config=config)
        else:
            chosen = target
            if declared:
                chosen.config = dataclasses.replace(chosen.config, **declared)
        catalog = select(loader.load_all(scenarios), tags)
        mode, limits = versions.parse_selection(version_selection)
        allowances = allow_file.load(allow) if allow else None
    except (
        loader.ScenarioError,
        versions.VersionError,
        targets.UnknownTarget,
        allow_file.AllowError,
        SettingsError,
    ) as exc:
        raise SuiteError(str(exc)) from None
    if loop < 1:
        raise SuiteError(f"--loop must be at least 1, got {loop}")
    failing = frozenset(fail_on)
    if unknown := sorted(failing - set(SEVERITIES)):
        raise SuiteError(
            f"--fail-on {', '.join(unknown)}: not a severity (severities: {', '.join(SEVERITIES)})"
        )
    if listen_after_failure_ms < 0:
        raise SuiteError(
            f"--listen-after-failure-ms must be at least 0, got {listen_after_failure_ms}"
        )
    if not catalog:
        raise SuiteError(f"no scenario matches --tags {' '.join(tags)}")
    # A token of its own per invocation: real brokers keep groups (and offsets) from earlier
    # invocations, and a trace's (group, run) must not recur in another invocation's trace,
    # or the checkers would replay the two as one.
    token = hashlib.blake2b(os.urandom(8), digest_size=4).hexdigest()
    if chosen.clock == "virtual":
        token = f"s{seed}-{token}"
    jobs, results = [], []
    for scenario in catalog:
        plans = planned(scenario, chosen, mode, limits)
        if isinstance(plans, str):
            results.append(result_of(scenario, {}, "", status="not_run", reason=plans))
            continue
        jobs.extend(
            (
                scenario,
                plan,
                f"coordspec-{token}-{scenario.name}-{i}" + (f"-{n}" if loop > 1 else ""),
            )
            for n in range(loop)
            for i, plan in enumerate(plans)
        )
    try:
        if trace:
            trace.parent.mkdir(parents=True, exist_ok=True)
        trace_stream = trace.open("w", encoding="utf-8") if trace else None
    except OSError as exc:
        raise SuiteError(
            f"--trace {trace}: cannot write there ({exc.strerror}: {exc.filename})"
        ) from None
    rerun = rerun or f"coordspec conform --target {chosen.name}"
    writer = outputs.ReportWriter(chosen.name, junit, report, rerun)
    runs = _Runs(results, jobs, Progress(len(jobs), out), writer, trace_stream)
    stopped = ""
    try:
        trace_writer = TraceWriter(trace_stream, f"conformance:{chosen.name}")
        asyncio.run(
            runs.ticking(
                _run_all(
                    jobs,
                    chosen,
                    trace_writer,
                    concurrency,
                    allowances,
                    runs,
                    timing_tolerance_ms,
                    listen_after_failure_ms,
                )
            )
        )
    except KeyboardInterrupt:
        stopped = INTERRUPTED
    except BrokerLost as exc:
        stopped = str(exc)
    finally:
        if trace_stream:
            trace_stream.close()
    wall = runs.elapsed()
    results = runs.results(INTERRUPTED if stopped == INTERRUPTED else f"the run stopped: {stopped}")
    writer.wait()
    written = [trace] if trace else []
    found = divergences.group(results)
    try:
        written += writer.write(results, wall, found)
    except OSError as exc:
        raise SuiteError(
            f"cannot write the report there ({exc.strerror}: {exc.filename})"
        ) from None
    unstable = flaky(results) if loop > 1 else []
    runs.progress.finish()
    if stopped:  # one line: the reports have the details
        head = f"after {runs.progress.count} of {len(jobs)} runs"
        head = f"interrupted {head}" if stopped == INTERRUPTED else f"stopped {head}: {stopped}"
        where = f"; partial reports written: {', '.join(map(str, written))}" if written else ""
        print(head + where, file=out)
        return Outcome(chosen.name, results, wall, written, found, failing, stopped, unstable)
    print(reports.console_summary(results, wall, found, rerun), file=out)
    if unstable:
        print(f"{len(unstable)} flaky (passed in some loops, failed in others):", file=out)
        print("\n".join(f"  {f}" for f in unstable), file=out)
    for stale in allowances.unused() if allowances else ():
        print(f"warning: allow entry matched nothing: {stale}", file=out)
    for path in written:
        print(f"wrote {path}", file=out)
    return Outcome(chosen.name, results, wall, written, found, failing, stopped, unstable)


def run_jobs(
    jobs: list[tuple[Scenario, dict[str, int], str]], target: Target, concurrency: int = 32
) -> dict[str, RunResult]:
    """Each (scenario, plan, group id) run once, concurrently as :func:`run` makes them, with
    no trace and no report: the results by group id (the pytest plugin's way in)."""
    results = asyncio.run(
        _run_all(
            jobs,
            target,
            TraceWriter(None, ""),
            concurrency,
            None,
            Progress(len(jobs), io.StringIO()),
            TIMING_TOLERANCE_MS,
            LISTEN_AFTER_FAILURE_MS,
        )
    )
    return {result.group_id: result for result in results}


async def _run_all(
    jobs,
    target: Target,
    writer: TraceWriter,
    concurrency: int,
    allowances: allow_file.AllowFile | None,
    progress: Progress | _Runs,  # told of each run as it ends
    timing_tolerance_ms: int,
    listen_after_failure_ms: int,
) -> list[RunResult]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(scenario, plan, group_id):
        result = await run_one(
            scenario,
            plan,
            target,
            group_id,
            group_id,
            writer,
            timing_tolerance_ms,
            allowances.for_scenario(scenario.name) if allowances else None,
            listen_after_failure_ms,
        )
        allow_file.apply([result], allowances)
        progress.done(result)
        return result

    async def shared(job):
        async with gate:
            return await one(*job)

    faulty = target.faults_are_shared and target.supports_faults
    alone = [job for job in jobs if faulty and job[0].uses_faults]
    together = [job for job in jobs if not (faulty and job[0].uses_faults)]
    # The longest runs start first, so that none starts late and holds the run up.
    started = {
        i: asyncio.ensure_future(shared(together[i]))
        for i in sorted(range(len(together)), key=lambda i: -_waits_ms(together[i][0]))
    }
    # gather: a run that stops them all (the broker lost) does so at once, not in its turn.
    results = list(await asyncio.gather(*(started[i] for i in range(len(together)))))
    for job in alone:
        results.append(await one(*job))
    return results


def _waits_ms(scenario: Scenario) -> int:
    """How long a run of ``scenario`` waits at least, on a real broker: its sleeps and awaits."""
    return sum(getattr(step, "ms", 0) + getattr(step, "within_ms", 0) for step in scenario.steps)


class _Runs:
    """The runs as they end: progress, the reports written as the run goes, and the check
    that the broker is still there. ``results`` puts them in the order of ``jobs``."""

    def __init__(
        self,
        not_planned: list[RunResult],
        jobs: list,
        progress: Progress,
        writer: outputs.ReportWriter,
        trace: TextIO | None,
    ) -> None:
        self.not_planned, self.jobs, self.progress = not_planned, jobs, progress
        self.writer, self.trace = writer, trace
        self.ended: dict[str, RunResult] = {}  # by group id, one per job
        self.started = self.ticked = time.perf_counter()
        # Since the last run that passed: runs that could not connect, and runs the
        # connection cut short (those become errors if the broker turns out to be gone).
        self.unreachable = 0
        self.streak: list[RunResult] = []
        self.last_cut = -math.inf  # when the last of them ended
        self.lost = False

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def done(self, result: RunResult) -> None:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # The run is stopping (Ctrl-C, the broker gone) and this one went on past the
            # cancel (asyncio.wait_for can swallow it): it was cut short, not run to its end.
            return
        cut = result.status == "error" or (
            result.failure is not None and result.failure.kind in ("target", "connection")
        )
        if self.lost and cut:
            # The run is stopping, and this one was still in flight (gather does not cancel
            # its peers): what the connection cut short is the harness's loss, as below.
            result.status = "error"
        self.ended[result.group_id] = result
        self.progress.done(result)
        self.tick()
        if result.status == "not_run" or self.lost:
            return  # it never reached the broker; or the run is stopping
        now = time.perf_counter()
        if result.status in ("passed", "allowed"):
            # The broker is there, if this run began after the last cut one ended (a run
            # that passed while the broker died says nothing of its death).
            if now - result.duration_s > self.last_cut:
                self.unreachable, self.streak = 0, []
        elif cut:
            self.unreachable += "cannot reach" in result.reason
            self.streak.append(result)
            self.last_cut = now
        if self.unreachable >= LOST_AFTER:
            self.lost = True
            for short in self.streak:  # cut short by the harness, not a conformance failure
                short.status = "error"
            raise BrokerLost(
                f"the broker is unreachable ({self.unreachable} runs could not connect: "
                f"{result.reason})"
            )

    def results(self, reason: str) -> list[RunResult]:
        """Every run, those that have not ended as not run, with ``reason``."""
        return self.not_planned + [
            self.ended.get(group_id)
            or result_of(scenario, plan, group_id, status="not_run", reason=reason)
            for scenario, plan, group_id in self.jobs
        ]

    def tick(self) -> None:
        """At most once a second: the progress line, the trace flushed, the reports."""
        now = time.perf_counter()
        if now - self.ticked < 1:
            return
        self.ticked = now
        self.progress.tick()
        if self.trace:
            self.trace.flush()
        self.writer.tick(
            lambda: self.results("not run yet: the run was still going"), self.elapsed()
        )

    async def ticking(self, work):
        """``work``, ticking while no run ends (runs that never wait, as the reference's,
        tick as they end: the loop would not wake a timer between them)."""

        async def ticker() -> None:
            while True:
                await asyncio.sleep(1)
                self.tick()

        ticking = asyncio.create_task(ticker())
        try:
            return await work
        finally:
            ticking.cancel()
