"""Verdicts of a suite run: per spec rule and per (API, version)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from coordspec.conformance.suite.results import RunResult


@dataclass
class RuleVerdict:
    rule: str
    verdict: str = "not_run"
    passed: int = 0
    failed: int = 0
    allowed: int = 0
    errors: int = 0
    not_run: int = 0
    failing: list[str] = field(default_factory=list)  # run labels


def rule_verdicts(results: list[RunResult]) -> list[RuleVerdict]:
    """A rule fails if a failure in any run is attributed to it (the failing step's rule, or
    the scenario's rules); it passes if some run that checks it passed and none failed."""
    verdicts: dict[str, RuleVerdict] = {}
    for result in results:
        blamed = set(result.failure.rules) if result.failure else set()
        for rule in sorted(set(result.rules) | blamed):
            v = verdicts.setdefault(rule, RuleVerdict(rule))
            if result.status == "failed" and rule in blamed:
                v.failed += 1
                v.failing.append(result.label)
            elif result.status == "allowed" and rule in blamed:
                v.allowed += 1
            elif result.status == "passed":
                v.passed += 1
            elif result.status == "error":
                v.errors += 1
            else:
                v.not_run += 1
    for v in verdicts.values():
        v.verdict = (
            "failed"
            if v.failed
            else "error"
            if v.errors
            else "allowed"
            if v.allowed
            else "passed"
            if v.passed
            else "not_run"
        )
    return sorted(
        verdicts.values(), key=lambda v: (v.rule.split("-")[0], int(v.rule.split("-")[1]))
    )


def api_verdicts(results: list[RunResult]) -> dict[str, dict[int, str]]:
    """Per API, per version: failed if a failure happened at a request of that version
    (allowed if --allow tolerates every such failure), passed if requests of that version
    were answered and checked, absent if never sent."""
    table: dict[str, dict[int, str]] = defaultdict(dict)
    for result in results:
        for api, version in result.exercised:
            table[api].setdefault(version, "passed")
    for result in results:
        failure = result.failure
        if result.status in ("failed", "allowed") and failure and failure.api is not None:
            current = table[failure.api].get(failure.api_version)
            table[failure.api][failure.api_version] = (
                "failed" if "failed" in (current, result.status) else "allowed"
            )
    return {api: dict(sorted(versions.items())) for api, versions in sorted(table.items())}


def counts(results: list[RunResult]) -> dict[str, int]:
    tally = {"passed": 0, "failed": 0, "allowed": 0, "error": 0, "not_run": 0}
    for result in results:
        tally[result.status] += 1
    return tally
