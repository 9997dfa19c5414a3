"""What every report of a suite run says, worked out once per writing: the counts, the
verdicts per rule and per (API, version), the distinct divergences numbered as the console
numbers them, which divergences each rule and each (API, version) has, what ``--allow``
accepted, the errors and what was not run; and the text of one failure."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property

from coordspec.conformance.suite.divergences import (
    Divergence,
    Tolerance,
    rerun_command,
    tolerated,
)
from coordspec.conformance.suite.flaky import Flaky, flaky
from coordspec.conformance.suite.results import Failure, RunResult
from coordspec.conformance.suite.verdicts import RuleVerdict, api_verdicts, counts, rule_verdicts
from coordspec.conformance.tracecheck.rules import titles

MARK = {"passed": "✓", "failed": "✗", "allowed": "≈", "error": "!", "not_run": "–"}
WORDS = {
    "passed": "passed",
    "failed": "failed",
    "allowed": "allowed",
    "error": "error",
    "not_run": "not run",
}


def verdict_text(verdict: str) -> str:
    """``✗ failed``, ``– not run``."""
    return f"{MARK[verdict]} {WORDS[verdict]}"


def failure_text(result: RunResult) -> str:
    """The details of a failed or errored run, as plain text."""
    f = result.failure
    if f is None:
        return result.reason
    lines = [
        f"{result.path}:{f.line}: step {f.step} ({f.kind}): {f.message}",
        f"rules: {', '.join(f.rules)}",
    ]
    if f.api is not None:
        lines.append(f"request: {f.api} v{f.api_version} {json.dumps(f.request, sort_keys=True)}")
    if f.raw_response is not None:
        lines.append("broker response, as it came (the frame after its size):")
        lines.extend("  " + line for line in f.raw_response.splitlines())
    if f.response is not None:
        lines.append(f"broker response: {json.dumps(f.response, sort_keys=True)}")
    if f.late_response is not None:
        lines.append(
            f"broker response, {f.answered_after_ms} ms after the request: "
            f"{json.dumps(f.late_response, sort_keys=True)}"
        )
    if f.allowed:
        lines.append("the reference allows:")
        lines.extend(f"  {a}" for a in f.allowed)
    if f.closest is not None and f.response is not None:
        lines.append("diff, nearest allowed response -> broker response (open values filled in):")
        closest = _fill_open(f.closest, f.response)
        mine = json.dumps(closest, indent=1, sort_keys=True).splitlines()
        theirs = json.dumps(f.response, indent=1, sort_keys=True).splitlines()
        lines.extend(
            "  " + line
            for line in difflib.unified_diff(mine, theirs, "reference", "broker", lineterm="", n=2)
        )
    return "\n".join(lines)


def _fill_open(allowed, broker):
    """``allowed`` with the values the reference leaves open (member ids it has not seen
    yet) taken from ``broker`` where they stand in the same place: they are no difference."""
    if isinstance(allowed, dict) and isinstance(broker, dict):
        return {k: _fill_open(v, broker.get(k)) for k, v in allowed.items()}
    if isinstance(allowed, list) and isinstance(broker, list) and len(allowed) == len(broker):
        return [_fill_open(a, b) for a, b in zip(allowed, broker, strict=True)]
    if (
        isinstance(allowed, str)
        and allowed.startswith("<new member id")
        and isinstance(broker, str)
    ):
        return broker
    return allowed


def divergence_id(d: Divergence) -> str:
    """Stable across runs and brokers: the same signature always gets the same id, so a bot
    can follow one divergence from run to run."""
    return "d-" + hashlib.blake2b(repr(d.signature).encode(), digest_size=5).hexdigest()


def title_of(rule: str) -> str:
    return titles().get(rule, "")


@dataclass
class Grouped:
    """Runs that share a reason (errors, runs not run)."""

    reason: str
    runs: list[RunResult] = field(default_factory=list)


@dataclass
class Facts:
    results: list[RunResult]
    target: str
    wall_s: float
    found: list[Divergence]
    rerun: str  # the command line that selects the target

    @cached_property
    def tally(self) -> dict[str, int]:
        return counts(self.results)

    @cached_property
    def summary_line(self) -> str:
        tally, wall = self.tally, self.wall_s
        busy = sum(r.duration_s for r in self.results)
        return (
            f"{len(self.results)} runs: {tally['passed']} passed, {tally['failed']} failed, "
            f"{tally['allowed']} allowed, {tally['error']} errors, {tally['not_run']} not run; "
            f"wall {wall:.2f} s, scenario time {busy:.2f} s, "
            f"concurrency ratio {busy / wall if wall else 0:.1f}"
        )

    @cached_property
    def flaky(self) -> list[Flaky]:
        """Empty unless ``--loop`` ran a (scenario, plan) more than once."""
        return flaky(self.results)

    @cached_property
    def rules(self) -> list[RuleVerdict]:
        return rule_verdicts(self.results)

    @cached_property
    def grid(self) -> dict[str, dict[int, str]]:
        return api_verdicts(self.results)

    @cached_property
    def number(self) -> dict[int, int]:
        """id(run) -> the number of its divergence (1 is the most severe)."""
        return {id(r): n for n, d in enumerate(self.found, start=1) for r in d.runs}

    def divergence_of(self, result: RunResult) -> tuple[int, Divergence, str] | None:
        """(number, divergence, its title) of a failed or allowed run's divergence."""
        n = self.number.get(id(result))
        return (n, self.found[n - 1], self.titles[n - 1]) if n is not None else None

    @cached_property
    def by_rule(self) -> dict[str, list[int]]:
        """Rule -> the divergences whose runs it is blamed for, as the rule verdicts blame."""
        found: dict[str, dict[int, None]] = {}
        for n, d in enumerate(self.found, start=1):
            for r in d.runs:
                for rule in r.failure.rules:
                    found.setdefault(rule, {})[n] = None
        return {rule: list(numbers) for rule, numbers in found.items()}

    @cached_property
    def by_cell(self) -> dict[tuple[str, int], list[int]]:
        """(API, version) -> the divergences seen there."""
        found: dict[tuple[str, int], dict[int, None]] = {}
        for n, d in enumerate(self.found, start=1):
            for r in d.runs:
                f = r.failure
                if f.api is not None and f.api_version is not None:
                    found.setdefault((f.api, f.api_version), {})[n] = None
        return {cell: list(numbers) for cell, numbers in sorted(found.items())}

    @cached_property
    def tolerated(self) -> list[Tolerance]:
        return tolerated(self.results)

    @cached_property
    def errors(self) -> list[Grouped]:
        return _grouped(r for r in self.results if r.status == "error")

    @cached_property
    def not_run(self) -> list[Grouped]:
        return _grouped(r for r in self.results if r.status == "not_run")

    def text(self, result: RunResult) -> str:
        """``failure_text``, worked out once per failure however often reports are written
        during a run (a failure never changes)."""
        if result.failure is None:
            return result.reason
        kept = _TEXTS.get(id(result.failure))
        if kept is None or kept[0] is not result.failure:
            if len(_TEXTS) > 50_000:
                _TEXTS.clear()
            kept = _TEXTS[id(result.failure)] = (result.failure, failure_text(result))
        return kept[1]

    @cached_property
    def titles(self) -> list[str]:
        """Each divergence's title, by position (a title looks at every run of it)."""
        return [d.title for d in self.found]

    def rerun_of(self, result: RunResult) -> str:
        return rerun_command(result, self.rerun)


# id(failure) -> (the failure, its text); the failure is kept so that its id is not reused.
_TEXTS: dict[int, tuple[Failure, str]] = {}


def _grouped(results) -> list[Grouped]:
    """By reason, the most frequent first."""
    found: dict[str, Grouped] = {}
    for r in results:
        found.setdefault(r.reason, Grouped(r.reason)).runs.append(r)
    return sorted(found.values(), key=lambda g: (-len(g.runs), g.reason))
