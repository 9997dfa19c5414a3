"""The targets the suite can run against, by name. A networked target registers its
factory here; the factory gets the command line's options.

A target that starts a child process (``embedded``, ``librdkafka-mock``) has ``stop()``;
the command line calls it after the run (and the child also goes when this process exits).
"""

from __future__ import annotations

from collections.abc import Callable

from coordspec.conformance.suite.cli import TARGETS as CHOICES
from coordspec.conformance.suite.reference_target import ReferenceTarget
from coordspec.conformance.suite.target import Target, TargetError


class UnknownTarget(ValueError):
    """A target name the suite cannot run against (yet), or a target that cannot be reached."""


def _reference(bootstrap: str | None, seed: int, faults) -> Target:
    if bootstrap:
        raise UnknownTarget(
            "--bootstrap is for a broker target; the reference target runs in-process"
        )
    return ReferenceTarget(seed=seed)


def _kafka(bootstrap: str | None, seed: int, faults) -> Target:
    from coordspec.conformance.suite.kafka_target import KafkaTarget

    if not bootstrap:
        raise UnknownTarget("the kafka target needs --bootstrap HOST:PORT")
    return KafkaTarget(bootstrap, faults=faults).check()


def _embedded(bootstrap: str | None, seed: int, faults) -> Target:
    from coordspec.conformance.suite.embedded_target import start_embedded

    if bootstrap:
        raise UnknownTarget(
            "--bootstrap is for the kafka target; the embedded target starts its own cluster"
        )
    return start_embedded(faults=True)


def _librdkafka_mock(bootstrap: str | None, seed: int, faults) -> Target:
    from coordspec.conformance.suite.mock_target import start_mock

    if bootstrap:
        raise UnknownTarget(
            "--bootstrap is for the kafka target; librdkafka-mock starts its own cluster"
        )
    return start_mock()


FACTORIES: dict[str, Callable[..., Target]] = {
    "reference": _reference,
    "kafka": _kafka,
    "embedded": _embedded,
    "librdkafka-mock": _librdkafka_mock,
}


def make(name: str, bootstrap: str | None = None, seed: int = 0, faults=None) -> Target:
    """The target ``name``; ``faults`` (a ``kafka_target.FaultCommands``) are the kafka target's hooks."""
    if name not in FACTORIES:
        if name in CHOICES:
            raise UnknownTarget(
                f"target {name!r} is not available yet; targets available: {', '.join(FACTORIES)}"
            )
        raise UnknownTarget(f"unknown target {name!r} (targets: {', '.join(CHOICES)})")
    if faults is not None and name != "kafka":
        raise UnknownTarget("--on-kill-coordinator and --on-restart are hooks for the kafka target")
    try:
        return FACTORIES[name](bootstrap, seed, faults)
    except TargetError as exc:
        raise UnknownTarget(str(exc)) from None
