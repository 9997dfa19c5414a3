"""TLA+ values as text and back: ``tla_value`` prints a Python value for a TraceData module,
``parse_value`` reads a value TLC printed in a counterexample.

Parsed values follow TLA+: a set is a ``frozenset``; a record, a function and a sequence
(a function on 1..n, which TLC prints as ``<<...>>``) are all a :class:`Record` (a dict; a
sequence is keyed 1..n). So a function on 1..n and a sequence parse alike, and a set of
records or of sequences is a set.
"""

from __future__ import annotations

import re
from collections.abc import Callable


def tla_value(
    value,
    model_values: frozenset[str],
    special: Callable[[object], str | None] = lambda value: None,
) -> str:
    """Python -> TLA+ text: strings in ``model_values`` are model values, other strings are
    strings; lists and tuples are sequences, sets are sets; a dict is a sequence when keyed by
    ints, a function (``:>``/``@@``) when keyed by model values, else a record. ``special``
    may print a value its own way (None: the usual way)."""
    custom = special(value)
    if custom is not None:
        return custom

    def text(v) -> str:
        return tla_value(v, model_values, special)

    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value if value in model_values else f'"{value}"'
    if isinstance(value, list | tuple):
        return "<<" + ", ".join(text(v) for v in value) + ">>"
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted(text(v) for v in value)) + "}"
    if isinstance(value, dict):
        keys = list(value)
        if keys and all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
            return "<<" + ", ".join(text(value[k]) for k in sorted(keys)) + ">>"
        if keys and all(k in model_values for k in keys):
            return "(" + " @@ ".join(f"{k} :> {text(value[k])}" for k in sorted(keys)) + ")"
        return "[" + ", ".join(f"{k} |-> {text(v)}" for k, v in value.items()) + "]"
    raise TypeError(f"no TLA+ form for {value!r}")


class Record(dict):
    """A parsed record, function or sequence. It equals the plain dict with the same items,
    and hashes by its items so that it can be a member of a set; it is not changed after
    parsing."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


_TOKEN = re.compile(r'\s*(<<|>>|\|->|:>|@@|[{}\[\](),]|"[^"]*"|-?\d+|[A-Za-z_][A-Za-z0-9_]*)')


def parse_value(text: str):
    """TLC's printed value -> Python (see the module docstring for the shapes)."""
    tokens = _TOKEN.findall(text)
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        raise ValueError(f"cannot tokenize {text!r}")
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take(expected=None):
        nonlocal pos
        token = tokens[pos]
        if expected is not None and token != expected:
            raise ValueError(f"expected {expected} at {token!r} in {text!r}")
        pos += 1
        return token

    def items(close):
        out = []
        while peek() != close:
            out.append(value())
            if peek() == ",":
                take(",")
        take(close)
        return out

    def value():
        left = primary()
        if peek() != ":>":
            return left
        out = Record()
        while True:
            take(":>")
            out[left] = primary()
            if peek() != "@@":
                return out
            take("@@")
            left = primary()

    def primary():
        token = take()
        if token == "{":
            return frozenset(items("}"))
        if token == "<<":
            return Record((k + 1, v) for k, v in enumerate(items(">>")))
        if token == "(":
            inner = value()
            take(")")
            return inner
        if token == "[":
            out = Record()
            while peek() != "]":
                name = take()
                take("|->")
                out[name] = value()
                if peek() == ",":
                    take(",")
            take("]")
            return out
        if token.startswith('"'):
            return token[1:-1]
        if token in ("TRUE", "FALSE"):
            return token == "TRUE"
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        return token

    result = value()
    if pos != len(tokens):
        raise ValueError(f"trailing tokens in {text!r}")
    return result
