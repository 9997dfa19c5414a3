"""The targets the suite can run against, by name. A networked target registers its
factory here; the factory gets the command line's options."""

from __future__ import annotations

from collections.abc import Callable

from conformance.suite.cli import TARGETS as CHOICES
from conformance.suite.reference_target import ReferenceTarget
from conformance.suite.target import Target


class UnknownTarget(ValueError):
    """A target name the suite cannot run against (yet)."""


def _reference(bootstrap: str | None, seed: int) -> Target:
    if bootstrap:
        raise UnknownTarget("--bootstrap is for a broker target; the reference target runs in-process")
    return ReferenceTarget(seed=seed)


FACTORIES: dict[str, Callable[[str | None, int], Target]] = {"reference": _reference}


def make(name: str, bootstrap: str | None = None, seed: int = 0) -> Target:
    if name not in FACTORIES:
        if name in CHOICES:
            raise UnknownTarget(f"target {name!r} is not available yet; targets available: {', '.join(FACTORIES)}")
        raise UnknownTarget(f"unknown target {name!r} (targets: {', '.join(CHOICES)})")
    return FACTORIES[name](bootstrap, seed)
