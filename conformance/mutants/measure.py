"""Run the conformance catalog against mutants of the project's broker.

For each mutant the project's single broker starts on 127.0.0.1 at a free port with the
mutant installed in its own process (``launch``), and scenarios run against it as against
any Kafka broker (the kafka target, each scenario at its latest version plan by default):
the mutant's probe (catalog.py) first, the rest of the selection only if the probe misses
it. Scenarios that need broker settings run on a broker started with them; fault steps
restart the broker (a kill: SIGKILL) on the same port and data. A mutant is caught by a
scenario that passes on the unmutated broker, fails on the mutant, and fails again when
run once more alone (a real broker's timing can fail a run by chance). The oracle is this
process's reference, which never runs a patch.

A mutant of an API the project's broker does not serve (``Mutant.on == "reference"``:
transactions) is measured the same way on a reference target in this process whose
coordinator carries the patch (on_reference.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.mutants import catalog, on_reference
from coordspec.conformance.suite import loader, suite
from coordspec.conformance.suite.kafka_target import FaultCommands, KafkaTarget
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.suite.scenario import Scenario
from coordspec.reference.group.config import BY_FIELD, GroupConfig

LAUNCH = "coordspec.conformance.mutants.launch"
CONFIRMATIONS = 3  # failing scenarios run again alone, at most, to confirm a catch


class Interrupted(Exception):
    """Ctrl-C: the run stopped; the verdicts so far stand."""


@dataclass
class Verdict:
    bug: int
    caught_by: str = ""  # the first scenario that caught it (its run's label)
    failed: list[str] = field(default_factory=list)  # scenarios that failed on it
    seconds: float = 0.0

    @property
    def caught(self) -> bool:
        return bool(self.caught_by)


class _Broker:
    """A broker process (mutated or not) that a fault hook can restart on the same port."""

    def __init__(self, data: Path, flags: list[str], bug: int | None) -> None:
        self.data, self.flags = data, flags
        self.launcher = ("-m", LAUNCH, str(bug)) if bug is not None else ()
        self.process = BrokerProcess(data, *flags, launcher=self.launcher).start()

    def restart(self, kill: bool) -> None:
        port = self.process.port
        if kill:
            self.process.kill()
        else:
            self.process.stop()
        self.process = BrokerProcess(
            self.data, *self.flags, "--port", str(port), launcher=self.launcher
        ).start()

    def stop(self) -> None:
        self.process.stop()


def _settings_flags(settings: tuple[tuple[str, int], ...]) -> list[str]:
    flags = []
    for name, value in settings:
        kafka = BY_FIELD[name]
        flags += ["--broker-config", f"{kafka.name}={value // kafka.unit_ms}"]
    return flags


def _by_settings(
    scenarios: Iterable[Scenario],
) -> dict[tuple[tuple[str, int], ...], list[Scenario]]:
    groups: dict[tuple[tuple[str, int], ...], list[Scenario]] = {}
    for scenario in scenarios:
        groups.setdefault(tuple(sorted(scenario.broker.items())), []).append(scenario)
    return groups


def run_catalog(
    bug: int | None,
    scenarios: list[Scenario],
    root: Path,
    *,
    versions: str = "latest",
    concurrency: int = 16,
) -> list[RunResult]:
    """Every run of ``scenarios`` against the broker with mutant ``bug`` (None: unmutated)."""
    results: list[RunResult] = []
    for n, (settings, chosen) in enumerate(_by_settings(scenarios).items()):
        data = root / f"{'base' if bug is None else bug}-{n}-{time.monotonic_ns()}"
        broker = _Broker(data, _settings_flags(settings), bug)
        try:
            faults = FaultCommands(
                kill_coordinator=_hook(broker, kill=True), restart=_hook(broker, kill=False)
            )
            config = dataclasses.replace(GroupConfig(), **dict(settings))
            target = KafkaTarget(broker.process.bootstrap, faults=faults, config=config).check()
            outcome = suite.run(
                target,
                scenarios=[s.path for s in chosen],
                version_selection=versions,
                concurrency=concurrency,
                out=io.StringIO(),
            )
        finally:
            broker.stop()
        if outcome.stopped == suite.INTERRUPTED:
            raise Interrupted
        results += outcome.results
    return results


def _hook(broker: _Broker, kill: bool) -> Callable:
    async def hook() -> None:
        await asyncio.to_thread(broker.restart, kill)

    return hook


def _failing(results: list[RunResult]) -> list[str]:
    return sorted({r.scenario for r in results if r.status in ("failed", "error")})


Runner = Callable[[int | None, list[Scenario]], list[RunResult]]


class _Baseline:
    """Which scenarios fail unmutated (on the broker, or the reference target), run as they
    are first needed."""

    def __init__(self, name: str, runner: Runner, out: TextIO) -> None:
        self.name, self.runner, self.out = name, runner, out
        self.failing: set[str] = set()
        self.checked: set[str] = set()

    def passing(self, scenarios: list[Scenario]) -> list[Scenario]:
        unchecked = [s for s in scenarios if s.name not in self.checked]
        if unchecked:
            print(
                f"unmutated {self.name}: {len(unchecked)} scenarios ...", file=self.out, flush=True
            )
            failing = _failing(self.runner(None, unchecked))
            if failing:
                print(
                    f"unmutated {self.name} fails {', '.join(failing)}: left out of the verdicts",
                    file=self.out,
                    flush=True,
                )
            self.failing.update(failing)
            self.checked.update(s.name for s in unchecked)
        return [s for s in scenarios if s.name not in self.failing]


def measure(
    bugs: list[int],
    patterns: Iterable[str] = (),
    *,
    versions: str = "latest",
    out: TextIO,
    verdicts: list[Verdict],
    root: Path | None = None,
) -> list[str]:
    """Append a verdict per mutant to ``verdicts`` (kept if interrupted): its probe first,
    then, if the probe misses it, the rest of the selection. Returns the scenarios that
    failed on the unmutated broker (left out of the verdicts). Raises suite.SuiteError for
    a pattern that selects nothing."""
    scenarios = suite.select(loader.load_all(()), patterns)
    if not scenarios:
        raise suite.SuiteError(f"no scenario matches --select {' '.join(patterns)}")
    with tempfile.TemporaryDirectory(prefix="coordspec-mutants-", dir=root) as tmp:
        work = Path(tmp)
        baselines = {
            "broker": _Baseline(
                "broker",
                lambda bug, chosen: run_catalog(bug, chosen, work, versions=versions),
                out,
            ),
            "reference": _Baseline(
                "reference target",
                lambda bug, chosen: on_reference.run_catalog(bug, chosen, versions=versions),
                out,
            ),
        }
        for on, baseline in baselines.items():
            probes = {catalog.BY_BUG[b].probe for b in bugs if catalog.BY_BUG[b].on == on}
            if probes:  # in one run, at once
                baseline.passing([s for s in scenarios if s.name in probes])
        for i, bug in enumerate(bugs, 1):
            started = time.monotonic()
            verdict = Verdict(bug)
            baseline = baselines[catalog.BY_BUG[bug].on]
            probe = [s for s in scenarios if s.name == catalog.BY_BUG[bug].probe]
            rest = [s for s in scenarios if s not in probe]
            for first, chosen in ((True, probe), (False, rest)):
                chosen = baseline.passing(chosen)
                if not chosen:
                    continue
                if not first:
                    more = f"{len(chosen)} scenarios" + (", its probe missed it" if probe else "")
                    print(f"#{bug}: {more} ...", file=out, flush=True)
                verdict.failed = _failing(baseline.runner(bug, chosen))
                verdict.caught_by = _confirmed(bug, verdict.failed, chosen, baseline.runner)
                if verdict.caught:
                    break
            verdict.seconds = time.monotonic() - started
            verdicts.append(verdict)
            print(f"[{i}/{len(bugs)}] {line(verdict)}", file=out, flush=True)
        return sorted(baselines["broker"].failing | baselines["reference"].failing)


def _confirmed(bug: int, failed: list[str], scenarios: list[Scenario], runner: Runner) -> str:
    """The label of the first failed scenario that fails again, run alone."""
    for name in failed[:CONFIRMATIONS]:
        alone = [s for s in scenarios if s.name == name]
        if failed_runs := [r for r in runner(bug, alone) if r.status in ("failed", "error")]:
            return failed_runs[0].label
    return ""


def line(verdict: Verdict) -> str:
    mutant = catalog.BY_BUG[verdict.bug]
    head = f"#{verdict.bug} {mutant.title}: "
    if verdict.caught:
        return f"{head}caught by {verdict.caught_by} ({verdict.seconds:.0f} s)"
    return f"{head}missed ({verdict.seconds:.0f} s)"


def summary(verdicts: list[Verdict]) -> str:
    caught = sum(v.caught for v in verdicts)
    share = 100 * caught / len(verdicts) if verdicts else 0
    return f"{caught} of {len(verdicts)} applicable caught ({share:.0f}%)"
