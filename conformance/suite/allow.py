"""``--allow FILE``: divergences a broker is known to have, tolerated but never hidden.

    # divergences of my-broker
    - rule: GM-10
      reason: no initial rebalance delay (group.initial.rebalance.delay.ms is not implemented)
    - scenario: commit-to-unknown-group-v9
      api: OffsetCommit
      versions: "9"
      reason: answers ILLEGAL_GENERATION like Kafka 3.x

An entry names a rule or a scenario (shell patterns allowed), optionally an API and its
versions, and must give a reason. A failed run that an entry matches is reported as
*allowed*, with the reason and the full failure, and does not fail the suite.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coordspec.conformance.suite import yaml_lines
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.suite.versions import VersionError, parse_range


class AllowError(ValueError):
    """The allow file is invalid; ``str()`` is one line: ``file:line: what``."""


class Allowance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str | None = None
    scenario: str | None = None
    api: str | None = None
    versions: str | int | None = None
    reason: str = Field(min_length=3)

    @model_validator(mode="after")
    def _names_something(self):
        if self.rule is None and self.scenario is None:
            raise ValueError("an entry names a rule or a scenario")
        if self.versions is not None:
            if self.api is None:
                raise ValueError("versions needs api")
            try:
                parse_range(self.api, self.versions)
            except VersionError as exc:
                raise ValueError(str(exc)) from None
        return self

    def matches(self, result: RunResult) -> bool:
        failure = result.failure
        if result.status != "failed" or failure is None:
            return False
        if self.rule is not None and not any(
            fnmatch.fnmatchcase(r, self.rule) for r in failure.rules
        ):
            return False
        if self.scenario is not None and not fnmatch.fnmatchcase(result.scenario, self.scenario):
            return False
        if self.api is not None and failure.api != self.api:
            return False
        return self.versions is None or failure.api_version in parse_range(self.api, self.versions)


def load(path: Path) -> list[Allowance]:
    try:
        data, lines = yaml_lines.read(path)
    except yaml_lines.YamlError as exc:
        raise AllowError(f"{path}:{exc.line}: {exc.message}") from None
    except OSError as exc:
        raise AllowError(f"{path}: cannot read: {exc.strerror}") from None
    if not isinstance(data, list):
        raise AllowError(
            f"{path}:1: an allow file is a list of entries with rule or scenario, and reason"
        )
    allowances = []
    for index, entry in enumerate(data):
        try:
            allowances.append(Allowance.model_validate(entry))
        except ValidationError as exc:
            error = exc.errors()[0]
            loc = error["loc"][:1]
            line = lines.get((index, *loc), lines.get((index,), 1))
            if error["type"] == "extra_forbidden":
                message = f"unknown field {loc[0]!r}"
            elif error["type"] == "missing":
                message = f"missing field {loc[0]!r}"
            else:
                message = (f"{loc[0]}: " if loc else "") + error["msg"].removeprefix(
                    "Value error, "
                )
            raise AllowError(f"{path}:{line}: {message}") from None
    return allowances


def apply(results: list[RunResult], allowances: list[Allowance]) -> None:
    """Mark the failed runs an entry matches as allowed, with its reason."""
    for result in results:
        entry = next((a for a in allowances if a.matches(result)), None)
        if entry is not None:
            result.status = "allowed"
            result.reason = f"allowed ({entry.reason}): {result.reason}"
