"""Settings as Kafka takes them: ``KEY=VALUE`` flags and Java properties text (as Kafka's
``server.properties``). Pure, so that the brokers (``--broker-config``) and the conformance
suite (``--broker-setting``) read settings the same way; each reads its own files."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


class SettingsError(Exception):
    """A setting that cannot be taken, in one line naming where it came from."""


@dataclass(frozen=True)
class Given:
    """One KEY=VALUE and where it came from (for the error line)."""

    source: str
    key: str
    value: str


def pairs(texts: Iterable[str], flag: str) -> list[Given]:
    """The settings of ``flag KEY=VALUE`` flags."""
    given = []
    for text in texts:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise SettingsError(f"{flag} {text!r}: expected KEY=VALUE")
        given.append(Given(flag, key.strip(), value))
    return given


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        escaped: str = match.group(1)
        if escaped.startswith("u"):
            return chr(int(escaped[1:], 16))
        return _ESCAPES.get(escaped, escaped)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


def parse(text: str, source: str) -> list[Given]:
    """The settings of Java properties text: ``key=value``, ``key: value`` or ``key value``,
    ``#`` and ``!`` comments, blank lines, a trailing backslash continuing a line. Each is
    given from ``source:LINE``."""
    lines = text.splitlines()
    given = []
    number = 0
    while number < len(lines):
        start, logical = number + 1, lines[number].lstrip()
        number += 1
        if not logical or logical[0] in "#!":  # a comment does not continue
            continue
        while _continues(logical):
            logical = logical[:-1] + (lines[number].lstrip() if number < len(lines) else "")
            number += 1
        match = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:]?\s*(.*)", logical, re.DOTALL)
        assert match is not None  # the pattern matches any line
        given.append(Given(f"{source}:{start}", *map(_unescape, match.groups())))
    return given


def _continues(line: str) -> bool:
    """An odd number of trailing backslashes: the line goes on."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def integer(text: str, minimum: int) -> int:
    """An integer setting's value, as Kafka's ConfigDef reads it; ValueError says what was wrong."""
    text = text.strip()
    if not re.fullmatch(r"[+-]?\d+", text) or int(text) < minimum:
        raise ValueError(f"expected an integer >= {minimum}, got {text!r}")
    return int(text)
