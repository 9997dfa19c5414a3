"""What a run produced: one result per scenario per version plan, and their failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal[
    "passed", "failed", "allowed", "not_run", "error"
]  # allowed: a failure --allow tolerates


@dataclass(frozen=True)
class Failure:
    # timing: the oracle allows the answer, but it came later than the reference's deadline
    # undecodable: an answer that does not decode; connection: the broker closed or reset one;
    # hook: a fault hook failed (the run's status is then error, the harness's)
    kind: Literal[
        "oracle", "timing", "expectation", "scenario", "target", "undecodable", "connection", "hook"
    ]
    step: int  # 1-based
    line: int
    message: str
    rules: tuple[str, ...]
    api: str | None = None
    api_version: int | None = None
    request: dict | None = None
    response: dict | None = None
    allowed: tuple[str, ...] = ()  # oracle failures: what the reference allowed
    closest: dict | None = None  # oracle failures: the allowed response nearest to the broker's
    # Oracle failures, what differs (conformance/suite/oracle.py Disagreement): how the answers
    # differ, the field (lists' positions as []), what was expected and got, and the timer
    # that made the reference answer (timing and silence).
    how: str = ""
    field: str = ""
    expected: str = ""
    got: str = ""
    cause: str = ""
    # undecodable: a hex dump of the response frame (after its size), marked where decoding stopped
    raw_response: str | None = None
    decode_offset: int | None = None
    # A request the broker left unanswered: the runner listened on for ``listened_ms`` after
    # sending it; the answer's arrival after the send (None: none came) and the answer.
    answered_after_ms: int | None = None
    listened_ms: int | None = None
    late_response: dict | None = None


@dataclass(frozen=True)
class ToleratedStep:
    """A divergence an ``--allow`` entry at field level or for timing accepted: the run went on."""

    step: int  # 1-based
    line: int
    api: str
    api_version: int
    field: str  # "" for a late answer
    expected: str
    got: str
    message: str
    reason: str  # the allow entry's


@dataclass
class RunResult:
    scenario: str
    path: str
    checks: str
    rules: tuple[str, ...]
    plan: dict[str, int]
    group_id: str
    status: Status = "passed"
    reason: str = ""  # why not run, or the error
    failure: Failure | None = None
    steps_run: int = 0
    steps_total: int = 0
    duration_s: float = 0.0
    tolerated: list[ToleratedStep] = field(default_factory=list)
    exercised: set[tuple[str, int]] = field(
        default_factory=set
    )  # (API, version) pairs answered and checked

    @property
    def label(self) -> str:
        return f"{self.scenario} [{plan_label(self.plan)}]"


def plan_label(plan: dict[str, int]) -> str:
    return " ".join(f"{api}v{v}" for api, v in sorted(plan.items())) or "no requests"
