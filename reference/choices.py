"""The reference's only source of nondeterminism, injected by the driver.

Kafka leaves some outcomes open: member id values (a random UUID), which member leads
after the leader leaves (hash-map order), and which protocol wins a tie of votes. The
reference asks a :class:`Choices` object for each of these, so a test can seed it, and
the conformance oracle can substitute the choice a broker actually made.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Protocol


class Choices(Protocol):
    def member_id(self, prefix: str) -> str:
        """A fresh member id for a client id or group instance id ``prefix``."""

    def leader(self, candidates: Sequence[str]) -> str:
        """The next leader among ``candidates`` (member ids, in join order)."""

    def protocol(self, tied: Sequence[str]) -> str:
        """The winner among protocols that received the same, highest, number of votes."""


class SeededChoices:
    """Deterministic choices derived from ``seed`` and a counter: no ambient randomness.

    With ``arbitrary=False`` the first candidate always wins (join order, first vote),
    which keeps tests readable. With ``arbitrary=True`` every open choice is drawn from
    the seed, exercising the freedom Kafka leaves to an implementation.
    """

    def __init__(self, seed: int = 0, arbitrary: bool = False) -> None:
        self._seed = seed
        self._arbitrary = arbitrary
        self._counter = 0

    def _draw(self) -> bytes:
        self._counter += 1
        return hashlib.blake2b(f"{self._seed}/{self._counter}".encode(), digest_size=16).digest()

    def member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(bytes=self._draw(), version=4)}"

    def _pick(self, options: Sequence[str]) -> str:
        if not self._arbitrary or len(options) == 1:
            return options[0]
        return options[int.from_bytes(self._draw()[:4], "big") % len(options)]

    def leader(self, candidates: Sequence[str]) -> str:
        return self._pick(candidates)

    def protocol(self, tied: Sequence[str]) -> str:
        return self._pick(tied)
