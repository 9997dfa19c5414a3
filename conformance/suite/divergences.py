"""Distinct divergences: failing runs grouped by their first divergence's signature.

A broker with one defect fails every run that reaches it, at every version that has it:
hundreds of failures, one fix. A signature is what stays the same across those runs: the
API, what kind of divergence it is, the field, and what was expected and got, with the
values that differ from run to run (group ids, member ids, times) left out. Runs with the
same signature are one :class:`Divergence`, with its versions, how many runs it fails and
how many scenarios it stops before their end, the rules it breaks, a severity class
(:mod:`severity`), one full example and the command that reruns it.

Kinds: ``error code`` and ``field`` (both answered, differently), ``answered early`` (the
broker answered what the reference answers only at a later timer), ``answered`` (the broker
answered where the reference waits and would not answer so), ``answered late`` (after the
reference's deadline plus the tolerance), ``never answered`` (not within the listening
bound), ``expectation`` (the scenario's own check), ``undecodable``, ``connection`` and
``target`` (the connection or the harness failed).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from coordspec.conformance.suite.results import RunResult, ToleratedStep
from coordspec.conformance.suite.severity import ORDER, classify
from coordspec.conformance.tracecheck import rules as spec_rules
from coordspec.reference.errors import ErrorCode

# Fields whose values are member ids the broker chose: never the same in two runs.
_ID_FIELDS = {"member_id", "leader", "leader_id"}


@dataclass(frozen=True)
class Signature:
    api: str | None
    kind: str
    field: str  # "" when no field differs (a silence, a broken connection)
    expected: str
    got: str

    def __str__(self) -> str:
        what = self.field if self.field else self.kind
        if self.expected:
            return f"{what}: expected {self.expected}, got {self.got}"
        return f"{what}: {self.got}"


@dataclass
class Divergence:
    signature: Signature
    severity: str
    why: str  # what the severity means here
    runs: list[RunResult] = field(default_factory=list)

    @property
    def versions(self) -> list[int]:
        return sorted(
            {r.failure.api_version for r in self.runs if r.failure.api_version is not None}
        )

    @property
    def band(self) -> str:
        """``v0-3, v7-9``."""
        return ", ".join(
            f"v{lo}" if lo == hi else f"v{lo}-{hi}" for lo, hi in _spans(self.versions)
        )

    @property
    def stopped(self) -> int:
        """Runs it stopped before their last step."""
        return sum(1 for r in self.runs if r.failure.step < r.steps_total)

    @property
    def scenarios(self) -> list[str]:
        return sorted({r.scenario for r in self.runs})

    @property
    def allowed(self) -> bool:
        """Every run of it is tolerated by an ``--allow`` rule or scenario entry."""
        return all(r.status == "allowed" for r in self.runs)

    @property
    def example(self) -> RunResult:
        return self.runs[0]

    @property
    def rules(self) -> list[str]:
        """The rule the trace checker attributes it to, then the example's rules at that step."""
        f = self.example.failure
        found: dict[str, None] = {}
        if f.api is not None and f.response is not None and f.request is not None:
            request = _Fields(f.request)
            found[spec_rules.classify(f.api, request, f.closest, f.response)[0]] = None
        found.update(dict.fromkeys(f.rules))
        return list(found)

    @property
    def title(self) -> str:
        api = f"{self.signature.api} {self.band}: " if self.signature.api else ""
        return f"{api}{self.signature}"


@dataclass
class Tolerance:
    """Divergences ``--allow`` entries accepted as runs went on, grouped as divergences are."""

    api: str
    field: str  # "" for a late answer
    expected: str
    got: str
    reason: str
    steps: list[tuple[RunResult, ToleratedStep]] = field(default_factory=list)

    @property
    def versions(self) -> list[int]:
        return sorted({t.api_version for _, t in self.steps})

    @property
    def band(self) -> str:
        return ", ".join(
            f"v{lo}" if lo == hi else f"v{lo}-{hi}" for lo, hi in _spans(self.versions)
        )

    @property
    def runs(self) -> int:
        return len({id(r) for r, _ in self.steps})

    @property
    def title(self) -> str:
        what = f"{self.field}: expected {self.expected}, got {self.got}" if self.field else "late"
        return f"{self.api} {self.band}: {what}"


def signature(result: RunResult) -> Signature | None:
    """The signature of a failed (or allowed) run's first divergence; None for a run without
    one, and for an error of the harness or of the scenario itself."""
    f = result.failure
    if f is None or result.status not in ("failed", "allowed"):
        return None

    def norm(text: str) -> str:
        return _normalize(text, result)

    if f.kind in ("undecodable", "connection", "target"):
        return Signature(f.api, f.kind, "", "", _no_numbers(norm(f.message)))
    if f.kind == "timing":
        return Signature(f.api, "answered late", "", f"an answer at {f.cause}", "a later one")
    if f.kind == "expectation" and f.listened_ms is None:
        return Signature(f.api, "expectation", "", "", norm(f.message))
    if f.how == "differs":
        leaf = f.field.rsplit(".", 1)[-1]
        expected, got = norm(f.expected), norm(f.got)
        if leaf in _ID_FIELDS:
            expected, got = "<a member id>", "<another>" if got.startswith("'") else got
        kind = "error code" if leaf == "error_code" else "field"
        return Signature(f.api, kind, f.field, expected, got)
    if f.how == "early":
        expected = f"an answer only at {f.cause}"
        return Signature(f.api, "answered early", "", expected, f"{_error_of(f.response)} sooner")
    if f.how == "unexpected":
        return Signature(f.api, "answered", "", "no answer yet", _error_of(f.response))
    # Silent: the reference (or the scenario: an expectation) answered, the broker had not.
    allowed = (
        json.loads(f.allowed[0].split("   [")[0]) if f.allowed and f.allowed[0][:1] == "{" else None
    )
    expected = "an answer " + (f"at {f.cause}" if f.cause else "at once")
    if f.kind == "expectation":
        expected = "an answer, as the scenario expects"
    elif allowed is not None:
        expected += f" ({_error_of(allowed)})"
    if f.answered_after_ms is not None:
        return Signature(f.api, "answered late", "", expected, "a later one")
    return Signature(f.api, "never answered", "", expected, "no answer")


def group(results: list[RunResult]) -> list[Divergence]:
    """The distinct divergences of ``results``, most severe first, then by runs affected."""
    found: dict[Signature, Divergence] = {}
    for result in sorted(results, key=lambda r: (r.scenario, sorted(r.plan.items()))):
        sig = signature(result)
        if sig is None:
            continue
        if sig not in found:
            response = result.failure.response
            error = response.get("error_code") if isinstance(response, dict) else None
            severity, why = classify(sig.kind, sig.api, sig.field, sig.expected, sig.got, error)
            found[sig] = Divergence(sig, severity, why)
        found[sig].runs.append(result)
    return sorted(
        found.values(),
        key=lambda d: (ORDER[d.severity], -len(d.runs), d.title),
    )


def tolerated(results: list[RunResult]) -> list[Tolerance]:
    """The divergences ``--allow`` accepted during runs, most often first."""
    found: dict[tuple, Tolerance] = {}
    for result in results:
        for step in result.tolerated:
            expected, got = _normalize(step.expected, result), _normalize(step.got, result)
            key = (step.api, step.field, expected, got, step.reason)
            found.setdefault(key, Tolerance(*key)).steps.append((result, step))
    return sorted(found.values(), key=lambda t: (-len(t.steps), t.title))


def rerun_command(result: RunResult, base: str) -> str:
    """``base`` (the command line that selects the target) narrowed to exactly this run."""
    words = [base, "--tags", shlex.quote(result.scenario)]
    if result.plan:
        words += ["--versions", ",".join(f"{api}={v}" for api, v in sorted(result.plan.items()))]
    return " ".join(words)


def _spans(numbers: list[int]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((n, n))
    return spans


def _normalize(text: str, result: RunResult) -> str:
    """Without what differs from run to run: the group id, member ids the reference left
    open, times."""
    if result.group_id:
        text = text.replace(result.group_id, "<group>")
    text = re.sub(r"<new member id \d+>", "<new member id>", text)
    return re.sub(r"t=[\d,]+ ms", "t=…", text)


def _no_numbers(text: str) -> str:
    """A harness message without its counts and positions (byte offsets, sizes, ports)."""
    return re.sub(r"\d[\d,]*", "N", text)


def _error_of(response: dict | None) -> str:
    code = spec_rules.first_error(response) if response is not None else None
    if code is None:
        return "an answer"
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else "an unknown code"
    return f"{name} ({code})"


class _Fields:
    """A request's fields (as the failure keeps them) read as attributes, as the rules do."""

    def __init__(self, fields: dict) -> None:
        self.__dict__.update(fields)
