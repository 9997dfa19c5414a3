"""The targets the suite can run against, by name. A networked target registers its
factory here; the factory gets the command line's options. ``TARGETS`` is the list the
command line offers: importing this module loads no target, so building the parser stays
cheap.

A target that starts a child process (``embedded``, ``librdkafka-mock``) has ``stop()``;
the command line calls it after the run (and the child also goes when this process exits).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coordspec.conformance.suite.target import Target
    from coordspec.reference.group.config import GroupConfig


class UnknownTarget(ValueError):
    """A target name the suite cannot run against, or a target that cannot be reached."""


def _reference(bootstrap: str | None, seed: int, faults, config: GroupConfig | None) -> Target:
    from coordspec.conformance.suite.reference_target import ReferenceTarget

    if bootstrap:
        raise UnknownTarget(
            "--bootstrap is for a broker target; the reference target runs in-process"
        )
    return ReferenceTarget(config, seed=seed)


def _kafka(
    bootstrap: str | None,
    seed: int,
    faults,
    config: GroupConfig | None,
    security=None,
    topics=None,
) -> Target:
    from coordspec.conformance.security import PLAINTEXT
    from coordspec.conformance.suite.kafka_target import TOPICS, KafkaTarget

    if not bootstrap:
        raise UnknownTarget("the kafka target needs --bootstrap HOST:PORT")
    return KafkaTarget(
        bootstrap,
        faults=faults,
        config=config,
        security=security or PLAINTEXT,
        topics=topics or TOPICS,
    ).check()


def _embedded(bootstrap: str | None, seed: int, faults, config: GroupConfig | None) -> Target:
    from coordspec.conformance.suite.embedded_target import start_embedded

    if bootstrap:
        raise UnknownTarget(
            "--bootstrap is for the kafka target; the embedded target starts its own clusters"
        )
    return start_embedded(config)


def _librdkafka_mock(
    bootstrap: str | None, seed: int, faults, config: GroupConfig | None
) -> Target:
    from coordspec.conformance.suite.mock_target import start_mock

    if bootstrap:
        raise UnknownTarget(
            "--bootstrap is for the kafka target; librdkafka-mock starts its own cluster"
        )
    return start_mock(config=config)


FACTORIES: dict[str, Callable[..., Target]] = {
    "reference": _reference,
    "kafka": _kafka,
    "librdkafka-mock": _librdkafka_mock,
    "embedded": _embedded,
}
TARGETS = tuple(FACTORIES)


def make(
    name: str,
    bootstrap: str | None = None,
    seed: int = 0,
    faults=None,
    config: GroupConfig | None = None,
    security=None,
    *,
    topics=None,
) -> Target:
    """The target ``name``; ``faults`` (a ``kafka_target.FaultCommands``) are the kafka target's
    hooks; ``config`` the broker's settings (--broker-setting), Kafka's defaults if None;
    ``security`` (a ``conformance.security.ClientSecurity``) the kafka target's TLS and SASL;
    ``topics`` the names the kafka target gives the catalog's foo, bar, baz (--topics)."""
    from coordspec.conformance.suite.target import TargetError

    if name not in FACTORIES:
        raise UnknownTarget(f"unknown target {name!r} (targets: {', '.join(TARGETS)})")
    if faults is not None and name != "kafka":
        raise UnknownTarget("--on-kill-coordinator and --on-restart are hooks for the kafka target")
    if security is not None and name != "kafka":
        raise UnknownTarget("--command-config is for the kafka target")
    if topics is not None and name != "kafka":
        raise UnknownTarget("--topics is for the kafka target; the others start their own brokers")
    extra = {} if security is None else {"security": security}
    if topics is not None:
        extra["topics"] = topics
    try:
        return FACTORIES[name](bootstrap, seed, faults, config, **extra)
    except TargetError as exc:
        raise UnknownTarget(str(exc)) from None
