"""Compare a broker's response with one the reference allows, up to member id values.

The oracle's reference names the member ids it hands out with placeholders (``TOKEN`` and
a number). A placeholder matches any id the broker chose, provided the matching stays
one-to-one: once a placeholder is bound, it stands for that id only. Lists whose order
Kafka leaves open (JoinGroup's member list, DescribeGroups' members and groups, offsets by
topic and partition) are compared as multisets. The client host DescribeGroups reports is
the broker's view of the connection and is not compared.

A difference is a :class:`Mismatch`: where (the field path) and what was expected and got. A
``tolerate`` predicate (``--allow`` entries at field level) may accept a difference: the
comparison then goes on, and the binding records it among ``tolerated``.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import re
import typing
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

TOKEN = "\x00member#"
# A consumer group's assignments are maps by topic in Kafka: their topics come in any order.
_UNORDERED = {
    "members",
    "groups",
    "topics",
    "partitions",
    "results",
    "assignment",
    "target_assignment",
}
_NOT_COMPARED = {"client_host"}


@dataclass(frozen=True)
class Mismatch:
    """Where a broker's response differs from an allowed one. ``expected`` and ``got`` are
    shown as the reports show them (error codes by name and number); ``value`` is the
    broker's value itself."""

    path: str  # "topics[0].partitions[1].metadata"; "response" for the whole
    expected: str
    got: str
    value: Any = None

    @property
    def field(self) -> str:
        """The path without list positions: ``topics[].partitions[].metadata``."""
        return re.sub(r"\[\d+\]", "[]", self.path)

    def __str__(self) -> str:
        return f"{self.path}: expected {self.expected}, got {self.got}"


Tolerate = Callable[[Mismatch], bool]


class Binding:
    """Placeholder <-> broker member id, one to one; the broker's ids the reference took as
    they are (``named``: no placeholder may bind to them); and the differences tolerated so far."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.placeholders: dict[str, str] = {}
        self.named: set[str] = set()
        self.tolerated: list[Mismatch] = []

    def copy(self) -> Binding:
        other = Binding()
        other.ids, other.placeholders = dict(self.ids), dict(self.placeholders)
        other.named = set(self.named)
        other.tolerated = list(self.tolerated)
        return other

    def adopt(self, other: Binding) -> None:
        self.ids, self.placeholders = other.ids, other.placeholders
        self.named, self.tolerated = other.named, other.tolerated

    def translate(self, value):
        """A request in the broker's ids, rewritten into the placeholders of this binding."""
        return _translate(value, self.placeholders) if self.placeholders else value

    def as_broker(self, value):
        """A reference response with its bound placeholders as the broker's ids: equal to the
        broker's response only if :func:`unify` would accept it and bind nothing new."""
        return _translate(value, self.ids) if self.ids else value

    def show(self, value):
        """A reference value for a report: bound placeholders as the broker's ids."""
        if isinstance(value, dict):
            return {k: self.show(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.show(v) for v in value]
        if isinstance(value, str) and value.startswith(TOKEN):
            return self.ids.get(value, f"<new member id {value.removeprefix(TOKEN)}>")
        return value


def _translate(value, ids: dict[str, str]):
    """``value`` (a request or response, or a list of their parts) with each member id that
    is a key of ``ids`` replaced by its value; the same object where nothing changes."""
    if type(value) is tuple:
        items = tuple([_translate(v, ids) for v in value])
        return items if any(map(operator.is_not, items, value)) else value
    changed = {}
    for name, nested in _member_id_fields(type(value)):
        old = getattr(value, name)
        new = _translate(old, ids) if nested else ids.get(old, old)
        if new is not old:
            changed[name] = new
    return with_fields(value, changed) if changed else value


def with_fields(value, changed: dict):
    """A copy of a frozen dataclass with ``changed`` fields, made without its __init__: for
    values its checks have seen (a member id for another, a request's id in a replay)."""
    kind = type(value)
    names, values = _FIELDS.get(kind) or _all_fields(kind)
    copy = object.__new__(kind)
    set_field = object.__setattr__
    # every field at once, in a loop that runs in C (itertools' "consume" recipe)
    deque(map(set_field, repeat(copy), names, values(value)), maxlen=0)
    for name, new in changed.items():
        set_field(copy, name, new)
    return copy


# type -> its fields' names, and a getter of their values (as a tuple)
_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple]]] = {}


def _all_fields(kind: type) -> tuple[tuple[str, ...], Callable[[Any], tuple]]:
    names = tuple(f.name for f in dataclasses.fields(kind))
    getter = operator.attrgetter(*names) if len(names) > 1 else lambda v: (getattr(v, names[0]),)
    _FIELDS[kind] = names, getter
    return names, getter


_MEMBER_IDS: dict[type, tuple[tuple[str, bool], ...]] = {}
_MEMBER_ID_NAMES = {"member_id", "leader"}


def _member_id_fields(kind: type) -> tuple[tuple[str, bool], ...]:
    """Where a request or response type holds member ids: (field, False) for a ``member_id``
    or ``leader`` field, (field, True) for a list of parts that hold some. Known once per
    type, from its hints."""
    found = _MEMBER_IDS.get(kind)
    if found is None:
        found = ()
        if dataclasses.is_dataclass(kind):
            hints = typing.get_type_hints(kind)
            found = tuple(
                (f.name, f.name not in _MEMBER_ID_NAMES)
                for f in dataclasses.fields(kind)
                if f.init
                and (
                    f.name in _MEMBER_ID_NAMES or any(map(_member_id_fields, _parts(hints[f.name])))
                )
            )
        _MEMBER_IDS[kind] = found
    return found


def _parts(hint) -> list[type]:
    """The dataclass types a tuple-typed hint holds (``tuple[Assignment, ...]``)."""
    if typing.get_origin(hint) is not tuple:
        return []
    return [a for a in typing.get_args(hint) if isinstance(a, type) and dataclasses.is_dataclass(a)]


def unify(
    expected, actual, binding: Binding, path: str = "", tolerate: Tolerate | None = None
) -> Mismatch | None:
    """None if ``actual`` is ``expected`` under ``binding`` (extended as needed), or differs
    only where ``tolerate`` accepts it; otherwise the first difference."""
    problem = _unify(expected, actual, binding, path, tolerate)
    if problem is not None and tolerate is not None and tolerate(problem):
        binding.tolerated.append(problem)
        return None
    return problem


def _unify(expected, actual, binding: Binding, path: str, tolerate: Tolerate | None):
    kind = type(expected)
    names = _COMPARED[kind] if kind in _COMPARED else _compared_fields(kind)
    if names is not None:
        if kind is not type(actual):
            return Mismatch(path or "response", f"a {kind.__name__}", type(actual).__name__, actual)
        for name in names:
            where = f"{path}.{name}" if path else name
            mine, theirs = getattr(expected, name), getattr(actual, name)
            if name in _UNORDERED and isinstance(mine, tuple) and isinstance(theirs, tuple):
                problem = _unify_unordered(mine, theirs, binding, where, tolerate)
            else:
                problem = unify(mine, theirs, binding, where, tolerate)
            if problem:
                return problem
        return None
    if isinstance(expected, tuple):
        if not isinstance(actual, tuple) or len(expected) != len(actual):
            got = len(actual) if isinstance(actual, tuple) else repr(actual)
            return Mismatch(path, f"{len(expected)} entries", str(got), actual)
        for i, (mine, theirs) in enumerate(zip(expected, actual, strict=True)):
            if problem := unify(mine, theirs, binding, f"{path}[{i}]", tolerate):
                return problem
        return None
    if isinstance(expected, str) and expected.startswith(TOKEN):
        if expected in binding.ids:
            if binding.ids[expected] != actual:
                return Mismatch(path, repr(binding.ids[expected]), repr(actual), actual)
            return None
        if not isinstance(actual, str) or not actual:
            return Mismatch(path, "a new member id", repr(actual), actual)
        if actual in binding.placeholders or actual in binding.named:
            return Mismatch(
                path, "a new member id", f"{actual!r}, which was already given out", actual
            )
        binding.ids[expected] = actual
        binding.placeholders[actual] = expected
        return None
    if expected != actual or (type(expected) is not type(actual) and not isinstance(expected, int)):
        return Mismatch(path, _show(expected), _show(actual), actual)
    return None


# type -> the fields unify compares, or None where the type is not a dataclass
_COMPARED: dict[type, tuple[str, ...] | None] = {}


def _compared_fields(kind: type) -> tuple[str, ...] | None:
    names = None
    if dataclasses.is_dataclass(kind):
        names = tuple(f.name for f in dataclasses.fields(kind) if f.name not in _NOT_COMPARED)
    _COMPARED[kind] = names
    return names


def _show(value) -> str:
    """Error codes by name and number, the rest as Python writes them."""
    if isinstance(value, enum.IntEnum):
        return f"{value.name} ({int(value)})"
    return repr(value)


def _unify_unordered(
    expected: tuple, actual: tuple, binding: Binding, path: str, tolerate: Tolerate | None
) -> Mismatch | None:
    if len(expected) != len(actual):
        return Mismatch(path, f"{len(expected)} entries", str(len(actual)), actual)
    if not expected:
        return None
    first, rest = expected[0], expected[1:]
    problems = []
    for i, candidate in enumerate(actual):
        trial = binding.copy()
        problem = unify(first, candidate, trial, f"{path}[{i}]", tolerate)
        if problem is None:
            problem = _unify_unordered(rest, actual[:i] + actual[i + 1 :], trial, path, tolerate)
            if problem is None:
                binding.adopt(trial)
                return None
        problems.append(problem)
    return problems[0]
