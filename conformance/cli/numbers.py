"""Argparse types for counts and durations: a bad number is argparse's one line, naming the
option, not a run that silently does nothing (``--runs 0``) or misbehaves (``--latency-ms -5``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = f"an integer >= {low}"
    return parse


POSITIVE = at_least(1)
NON_NEGATIVE = at_least(0)
