"""Compare a broker's response with one the reference allows, up to member id values.

The oracle's reference names the member ids it hands out with placeholders (``TOKEN`` and
a number). A placeholder matches any id the broker chose, provided the matching stays
one-to-one: once a placeholder is bound, it stands for that id only. Lists whose order
Kafka leaves open (JoinGroup's member list, DescribeGroups' members and groups, offsets by
topic and partition) are compared as multisets. The client host DescribeGroups reports is
the broker's view of the connection and is not compared.
"""

from __future__ import annotations

import dataclasses
import enum

TOKEN = "\x00member#"
_UNORDERED = {"members", "groups", "topics", "partitions", "results"}
_NOT_COMPARED = {"client_host"}


class Binding:
    """Placeholder <-> broker member id, one to one."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.placeholders: dict[str, str] = {}

    def copy(self) -> Binding:
        other = Binding()
        other.ids, other.placeholders = dict(self.ids), dict(self.placeholders)
        return other

    def adopt(self, other: Binding) -> None:
        self.ids, self.placeholders = other.ids, other.placeholders

    def translate(self, value):
        """A request in the broker's ids, rewritten into the placeholders of this binding."""
        if dataclasses.is_dataclass(value):
            return dataclasses.replace(
                value,
                **{
                    f.name: self.translate(getattr(value, f.name))
                    for f in dataclasses.fields(value)
                    if f.init
                },
            )
        if isinstance(value, tuple):
            return tuple(self.translate(v) for v in value)
        if isinstance(value, str):
            return self.placeholders.get(value, value)
        return value

    def show(self, value):
        """A reference value for a report: bound placeholders as the broker's ids."""
        if isinstance(value, dict):
            return {k: self.show(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.show(v) for v in value]
        if isinstance(value, str) and value.startswith(TOKEN):
            return self.ids.get(value, f"<new member id {value.removeprefix(TOKEN)}>")
        return value


def unify(expected, actual, binding: Binding, path: str = "") -> str | None:
    """None if ``actual`` is ``expected`` under ``binding`` (extended as needed); otherwise
    where and how they differ."""
    if dataclasses.is_dataclass(expected):
        if type(expected) is not type(actual):
            return f"{path or 'response'}: expected a {type(expected).__name__}, got {type(actual).__name__}"
        for f in dataclasses.fields(expected):
            if f.name in _NOT_COMPARED:
                continue
            where = f"{path}.{f.name}" if path else f.name
            mine, theirs = getattr(expected, f.name), getattr(actual, f.name)
            if f.name in _UNORDERED and isinstance(mine, tuple) and isinstance(theirs, tuple):
                problem = _unify_unordered(mine, theirs, binding, where)
            else:
                problem = unify(mine, theirs, binding, where)
            if problem:
                return problem
        return None
    if isinstance(expected, tuple):
        if not isinstance(actual, tuple) or len(expected) != len(actual):
            return f"{path}: expected {len(expected)} entries, got {len(actual) if isinstance(actual, tuple) else actual!r}"
        for i, (mine, theirs) in enumerate(zip(expected, actual, strict=True)):
            if problem := unify(mine, theirs, binding, f"{path}[{i}]"):
                return problem
        return None
    if isinstance(expected, str) and expected.startswith(TOKEN):
        if expected in binding.ids:
            if binding.ids[expected] != actual:
                return f"{path}: expected {binding.ids[expected]!r}, got {actual!r}"
            return None
        if not isinstance(actual, str) or not actual:
            return f"{path}: expected a new member id, got {actual!r}"
        if actual in binding.placeholders:
            return f"{path}: expected a new member id, got {actual!r}, which was already given out"
        binding.ids[expected] = actual
        binding.placeholders[actual] = expected
        return None
    if expected != actual or (type(expected) is not type(actual) and not isinstance(expected, int)):
        return f"{path}: expected {_show(expected)}, got {_show(actual)}"
    return None


def _show(value) -> str:
    """Error codes by name and number, the rest as Python writes them."""
    if isinstance(value, enum.IntEnum):
        return f"{value.name} ({int(value)})"
    return repr(value)


def _unify_unordered(expected: tuple, actual: tuple, binding: Binding, path: str) -> str | None:
    if len(expected) != len(actual):
        return f"{path}: expected {len(expected)} entries, got {len(actual)}"
    if not expected:
        return None
    first, rest = expected[0], expected[1:]
    problems = []
    for i, candidate in enumerate(actual):
        trial = binding.copy()
        problem = unify(first, candidate, trial, f"{path}[{i}]")
        if problem is None:
            problem = _unify_unordered(rest, actual[:i] + actual[i + 1 :], trial, path)
            if problem is None:
                binding.adopt(trial)
                return None
        problems.append(problem)
    return problems[0]
