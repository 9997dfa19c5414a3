"""``--allow FILE``: divergences a broker is known to have, tolerated but never hidden.

    # divergences of my-broker
    - api: JoinGroup
      versions: 7+
      field: protocol_type            # a field path; [] for any list position: topics[].name
      values: [consumer]              # optional: only these values of the broker's
      reason: sets it on MEMBER_ID_REQUIRED answers, which clients ignore
    - api: SyncGroup
      timing: late
      reason: completes rebalances on a coarse timer
    - rule: GM-10
      reason: no initial rebalance delay (group.initial.rebalance.delay.ms is not implemented)
    - scenario: commit-to-unknown-group-v9
      api: OffsetCommit
      versions: "9"
      reason: answers ILLEGAL_GENERATION like Kafka 3.x

An entry at field level (``field``, with ``api``) or for lateness (``timing: late``, with
``api``) is a divergence the oracle accepts as it happens: the run goes on, so the steps after
it are still checked, and the run is reported as *allowed* if nothing else fails. An entry
naming a rule or a scenario (shell patterns allowed) tolerates a run's failure after the
fact: the run stops there, and is reported as *allowed*, with the reason and the full
failure. Every entry gives a reason; entries that matched nothing are reported.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coordspec.conformance.suite import yaml_lines
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.suite.unify import Mismatch
from coordspec.conformance.suite.versions import VersionError, parse_range


class AllowError(ValueError):
    """The allow file is invalid; ``str()`` is one line: ``file:line: what``."""


class Allowance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str | None = None
    scenario: str | None = None
    api: str | None = None
    versions: str | int | None = None
    field: str | None = None
    values: list[object] | None = None
    timing: Literal["late"] | None = None
    reason: str = Field(min_length=3)

    @model_validator(mode="after")
    def _names_something(self):
        if self.field is not None and self.timing is not None:
            raise ValueError("an entry is for a field or for timing, not both")
        if (self.field is not None or self.timing is not None) and self.api is None:
            raise ValueError(f"{'field' if self.field else 'timing'} needs api")
        if self.values is not None and self.field is None:
            raise ValueError("values needs field")
        if self.rule is None and self.scenario is None and not self.during_run:
            raise ValueError("an entry names a rule, a scenario, or an api with field or timing")
        if self.versions is not None:
            if self.api is None:
                raise ValueError("versions needs api")
            try:
                parse_range(self.api, self.versions)
            except VersionError as exc:
                raise ValueError(str(exc)) from None
        return self

    @property
    def during_run(self) -> bool:
        """Accepted by the oracle as the run goes (field or timing), not after it failed."""
        return self.field is not None or self.timing is not None

    def _scope(self, scenario: str, api: str, version: int) -> bool:
        return (
            (self.scenario is None or fnmatch.fnmatchcase(scenario, self.scenario))
            and self.api == api
            and (self.versions is None or version in parse_range(api, self.versions))
        )

    def tolerates(self, scenario: str, api: str, version: int, mismatch: Mismatch | None) -> bool:
        """A difference in a field (``mismatch``), or a late answer (None)."""
        if not self.during_run or not self._scope(scenario, api, version):
            return False
        if mismatch is None:
            return self.timing == "late"
        return (
            self.field is not None
            and fnmatch.fnmatchcase(mismatch.field, self.field)
            and (self.values is None or mismatch.value in self.values)
        )

    def matches(self, result: RunResult) -> bool:
        failure = result.failure
        if self.during_run or result.status != "failed" or failure is None:
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


@dataclass
class AllowFile:
    """The entries of an allow file, where each is, and how often each matched."""

    path: Path
    entries: list[Allowance]
    lines: list[int]
    used: Counter[int] = field(default_factory=Counter)  # entry index -> divergences matched

    def for_scenario(self, scenario: str) -> ScenarioTolerance:
        return ScenarioTolerance(self, scenario)

    def unused(self) -> list[str]:
        """``file:line: reason`` of each entry that matched nothing."""
        return [
            f"{self.path}:{self.lines[i]}: {entry.reason}"
            for i, entry in enumerate(self.entries)
            if not self.used[i]
        ]


@dataclass
class ScenarioTolerance:
    """The oracle's :class:`~coordspec.conformance.suite.oracle.Tolerance` in one scenario's
    runs: the file's field and timing entries."""

    allowances: AllowFile
    scenario: str

    def entry(self, api: str, version: int, mismatch: Mismatch | None) -> Allowance | None:
        for i, entry in enumerate(self.allowances.entries):
            if entry.tolerates(self.scenario, api, version, mismatch):
                self.allowances.used[i] += 1
                return entry
        return None

    def field(self, api: str, version: int, mismatch: Mismatch) -> bool:
        return any(
            e.tolerates(self.scenario, api, version, mismatch) for e in self.allowances.entries
        )

    def timing(self, api: str, version: int) -> bool:
        return any(e.tolerates(self.scenario, api, version, None) for e in self.allowances.entries)


def load(path: Path) -> AllowFile:
    try:
        data, lines = yaml_lines.read(path)
    except yaml_lines.YamlError as exc:
        raise AllowError(f"{path}:{exc.line}: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise AllowError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise AllowError(f"{path}: cannot read: {exc.strerror}") from None
    if not isinstance(data, list):
        raise AllowError(
            f"{path}:1: an allow file is a list of entries with rule or scenario, and reason"
        )
    allowances, where = [], []
    for index, entry in enumerate(data):
        try:
            allowances.append(Allowance.model_validate(entry))
            where.append(lines.get((index,), 1))
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
    return AllowFile(path, allowances, where)


def apply(results: list[RunResult], allowances: AllowFile | None) -> None:
    """Mark the failed runs a rule or scenario entry matches as allowed, with its reason; and
    a run that passed past divergences the oracle tolerated as allowed too."""
    for result in results:
        if result.status == "passed" and result.tolerated:
            result.status = "allowed"
            result.reason = f"allowed: {result.tolerated[0].message}" + (
                f" and {len(result.tolerated) - 1} more" if len(result.tolerated) > 1 else ""
            )
            continue
        entries = allowances.entries if allowances else []
        index = next((i for i, a in enumerate(entries) if a.matches(result)), None)
        if index is not None and allowances is not None:
            allowances.used[index] += 1
            result.status = "allowed"
            result.reason = f"allowed ({entries[index].reason}): {result.reason}"
