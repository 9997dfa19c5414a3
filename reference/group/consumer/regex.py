"""Regular expression subscriptions of a consumer group (CG-66..CG-70), as Kafka 4.0's
``GroupMetadataManager.maybeUpdateRegularExpressions`` and ``handleRegularExpressionsResult``.

Kafka resolves a group's regular expressions asynchronously, against the topics of its
metadata image; the reference resolves them when the driver sends
:class:`~coordspec.reference.group.requests.ResolveRegularExpressions`. A regex is checked
with RE2J's syntax (Kafka compiles it with ``com.google.re2j.Pattern``); the reference
compiles it with Python's ``re`` and first refuses, by name, what ``re`` accepts and RE2J does
not (:func:`refusal`). RE2 syntax that ``re`` reads otherwise (``[[:alpha:]]``, ``a{,2}``) or
not at all (``\\z``, ``\\Q...\\E``, ``\\pL``, ``(?U)``, ``(?<name>...)``) is refused too: not
modelled (spec/consumer-group.md, CG-67). A regex matches a topic name whole
(``Matcher.matches``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import Enum

from coordspec.reference.group.consumer.state import ConsumerGroup, ConsumerMember
from coordspec.reference.group.records import (
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    Record,
)

# Group constructs of Perl and Python that RE2 does not have.
_UNSUPPORTED_GROUPS = {
    "(?=": "lookahead",
    "(?!": "negative lookahead",
    "(?<=": "lookbehind",
    "(?<!": "negative lookbehind",
    "(?>": "atomic group",
    "(?(": "conditional",
    "(?#": "comment group",
}
# Escapes Python's re takes and RE2 refuses ("invalid escape sequence").
_UNSUPPORTED_ESCAPES = {
    **{d: "backreference" for d in "123456789"},
    "Z": "\\Z",
    "N": "named character",
    "u": "\\u escape",
    "U": "\\U escape",
}
_RE2_FLAGS = set("imsU-")
_QUANTIFIERS = "*+?"


class UpdateRegularExpressionStatus(Enum):
    NO_CHANGE = 0
    REGEX_UPDATED = 1
    REGEX_UPDATED_AND_RESOLVED = 2


def refusal(pattern: str) -> str | None:
    """Why RE2J refuses ``pattern``, or None when it compiles (CG-67)."""
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped in _UNSUPPORTED_ESCAPES and not (in_class and escaped.isdigit()):
                return f"{_UNSUPPORTED_ESCAPES[escaped]} is not supported"
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):
                return "POSIX character classes are not modelled"
            in_class = ch != "]"
            i += 1
            continue
        if ch == "[":
            i += 1
            i += pattern[i : i + 1] == "^"
            i += pattern[i : i + 1] == "]"  # a ] first in a class is a literal
            in_class = True
            continue
        if pattern.startswith("{,", i):
            return "{,n} is a literal to RE2 and a repetition to Python: not modelled"
        for group, name in _UNSUPPORTED_GROUPS.items():
            if pattern.startswith(group, i):
                return f"{name} {group} is not supported"
        if pattern.startswith("(?", i) and not pattern.startswith("(?P<", i):
            flags = re.match(r"\(\?([^:)]*)[:)]", pattern[i:])
            if flags and not set(flags.group(1)) <= _RE2_FLAGS:
                return f"flags (?{flags.group(1)}) are not supported"
        if ch in _QUANTIFIERS or (ch == "}" and re.search(r"\{\d+(,\d*)?$", pattern[:i])):
            after = i + 1 + (pattern[i + 1 : i + 2] == "?")  # a lazy quantifier
            if pattern[after : after + 1] == "+":
                return "a possessive quantifier is not supported"
        i += 1
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    return None


def resolve(pattern: str, topics: Iterable[str]) -> frozenset[str]:
    """The topics whose whole name ``pattern`` matches."""
    compiled = re.compile(pattern)
    return frozenset(t for t in topics if compiled.fullmatch(t))


def subscribed_members(group: ConsumerGroup, regex: str) -> int:
    """ConsumerGroup.numSubscribedMembers: how many members subscribe to ``regex``."""
    return sum(m.subscribed_topic_regex == regex for m in group.members.values())


def update_regular_expressions(
    group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, records: list[Record]
) -> UpdateRegularExpressionStatus | None:
    """CG-66, CG-68: whether the member changed its regex, and whether the new one is already
    resolved (then the group epoch moves at once). The last member leaving a regex tombstones
    its resolution. None: the new regex is invalid (INVALID_REGULAR_EXPRESSION)."""
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    if old == new:
        return UpdateRegularExpressionStatus.NO_CHANGE
    status = UpdateRegularExpressionStatus.REGEX_UPDATED
    if old and subscribed_members(group, old) == 1:
        records.append(_tombstone(group.group_id, old))
    if new:
        if subscribed_members(group, new) == 0:
            if refusal(new) is not None:
                return None
        elif new in group.resolved_regexes:
            status = UpdateRegularExpressionStatus.REGEX_UPDATED_AND_RESOLVED
    elif old:
        status = UpdateRegularExpressionStatus.REGEX_UPDATED_AND_RESOLVED
    return status


def tombstones_of_leaving(group: ConsumerGroup, leaving: Iterable[ConsumerMember]) -> list[Record]:
    """CG-69: the resolutions no member is left subscribed to once ``leaving`` are gone
    (maybeDeleteResolvedRegularExpressions)."""
    gone: dict[str, int] = {}
    for member in leaving:
        if member.subscribed_topic_regex:
            gone[member.subscribed_topic_regex] = gone.get(member.subscribed_topic_regex, 0) + 1
    return [
        _tombstone(group.group_id, regex)
        for regex, count in gone.items()
        if subscribed_members(group, regex) == count
    ]


def resolution_records(
    group: ConsumerGroup, topics: Mapping[str, int] | None, version: int, now_ms: int
) -> tuple[list[Record], bool]:
    """CG-68: each regex the group subscribes to, resolved against ``topics``, as Kafka writes
    the result of a refresh: a record per regex; and whether a regex's topics changed (a regex
    never resolved counts as resolved to no topic), which moves the group epoch."""
    records: list[Record] = []
    changed = False
    for regex in sorted({m.subscribed_topic_regex or "" for m in group.members.values()} - {""}):
        resolved = resolve(regex, topics or {})
        changed |= resolved != group.resolved_regexes.get(regex, frozenset())
        records.append(
            Record(
                ConsumerGroupRegularExpressionKey(group.group_id, regex),
                ConsumerGroupRegularExpressionValue(tuple(sorted(resolved)), version, now_ms),
            )
        )
    return records, changed


def _tombstone(group_id: str, regex: str) -> Record:
    return Record(ConsumerGroupRegularExpressionKey(group_id, regex), None)
