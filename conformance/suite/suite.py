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
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from coordspec.conformance.suite import allow as allow_file
from coordspec.conformance.suite import divergences, loader, reports, targets, versions
from coordspec.conformance.suite.broker_settings import resolve as resolve_settings
from coordspec.conformance.suite.oracle import TIMING_TOLERANCE_MS
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.suite.runner import LISTEN_AFTER_FAILURE_MS, run_one
from coordspec.conformance.suite.scenario import Scenario
from coordspec.conformance.suite.severity import SEVERITIES
from coordspec.conformance.suite.target import Target
from coordspec.conformance.trace.format import TraceWriter
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.properties import Given, SettingsError


class SuiteError(ValueError):
    """Something on the command line or in a scenario file is wrong; one line for the user."""


@dataclass
class Outcome:
    target: str
    results: list[RunResult]
    wall_s: float
    written: list[Path]
    divergences: list[divergences.Divergence]
    # The severities that fail the run (--fail-on); harness errors always do.
    fail_on: frozenset[str] = frozenset(SEVERITIES)

    @property
    def exit_code(self) -> int:
        """1 if a run errored, or a divergence of a failing severity is not allowed."""
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
            results.append(
                RunResult(
                    scenario.name,
                    str(scenario.path),
                    scenario.checks,
                    scenario.rules,
                    {},
                    "",
                    status="not_run",
                    reason=plans,
                )
            )
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
    started = time.perf_counter()
    try:
        writer = TraceWriter(trace_stream, f"conformance:{chosen.name}")
        results.extend(
            asyncio.run(
                _run_all(
                    jobs,
                    chosen,
                    writer,
                    concurrency,
                    allowances,
                    _Progress(len(jobs), out),
                    timing_tolerance_ms,
                    listen_after_failure_ms,
                )
            )
        )
    finally:
        if trace_stream:
            trace_stream.close()
    wall = time.perf_counter() - started
    written = [trace] if trace else []
    found = divergences.group(results)
    rerun = rerun or f"coordspec conform --target {chosen.name}"
    try:
        if junit:
            reports.write_junit(results, chosen.name, wall, junit, found)
            written.append(junit)
        if report:
            written.extend(reports.write_report(results, chosen.name, wall, report, found, rerun))
    except OSError as exc:
        raise SuiteError(
            f"cannot write the report there ({exc.strerror}: {exc.filename})"
        ) from None
    print(reports.console_summary(results, wall, found, rerun), file=out)
    for stale in allowances.unused() if allowances else ():
        print(f"warning: allow entry matched nothing: {stale}", file=out)
    for path in written:
        print(f"wrote {path}", file=out)
    return Outcome(chosen.name, results, wall, written, found, failing)


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
            _Progress(len(jobs), io.StringIO()),
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
    progress: _Progress,
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
    results = [await started[i] for i in range(len(together))]
    for job in alone:
        results.append(await one(*job))
    return results


def _waits_ms(scenario: Scenario) -> int:
    """How long a run of ``scenario`` waits at least, on a real broker: its sleeps and awaits."""
    return sum(getattr(step, "ms", 0) + getattr(step, "within_ms", 0) for step in scenario.steps)


class _Progress:
    """A progress bar on a terminal; on anything else, one line per failing run."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.out, self.count = total, out, 0
        self.bar = out.isatty()

    def done(self, result: RunResult) -> None:
        self.count += 1
        if result.status in ("failed", "error"):
            self.clear()
            print(f"{result.status.upper()} {result.label}: {result.reason}", file=self.out)
        if self.bar:
            filled = 30 * self.count // max(1, self.total)
            print(
                f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.count}/{self.total}",
                end="",
                file=self.out,
                flush=True,
            )
            if self.count == self.total:
                self.clear()

    def clear(self) -> None:
        if self.bar:
            print("\r" + " " * 50 + "\r", end="", file=self.out)
