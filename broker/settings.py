"""Kafka's broker settings that the brokers honour, by their Kafka names, with Kafka's defaults.

``coordspec broker``, ``coordspec cluster up`` and each cluster broker take them as
``--broker-config-file FILE`` (a Java properties file, as Kafka's ``server.properties``) and
``--broker-config KEY=VALUE`` (repeatable, over the file). :data:`SETTINGS` is the one table:
each setting's Kafka default (Kafka 3.9: ``ServerLogConfigs``, ``ReplicationConfigs``,
``GroupCoordinatorConfig``, ``SocketServerConfigs``, ``ZkConfigs``) and the default each kind
of broker uses, which is Kafka's unless the table says why not. A key not in the
table, a key that kind of broker does not honour, or a value out of range is a
:class:`SettingsError`: one line naming where it came from.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from coordspec.broker.connections import Limits
from coordspec.reference import properties
from coordspec.reference.group.config import KAFKA_SETTINGS, GroupConfig, KafkaSetting
from coordspec.reference.properties import Given, SettingsError
from coordspec.reference.replication.config import ReplicationConfig

SINGLE, CLUSTER = "single", "cluster"
KINDS = (SINGLE, CLUSTER)
BROKER_NAMES = {SINGLE: "coordspec broker (one broker, one replica)", CLUSTER: "a cluster broker"}
Value = int | bool


@dataclass(frozen=True)
class Setting:
    name: str
    kafka: Value  # Kafka's default
    single: Value | None  # coordspec broker's default; None: not honoured there
    cluster: Value | None  # a cluster broker's default; None: not honoured there
    minimum: int = 1  # the smallest integer taken (booleans have none)
    why: str = ""  # why a default, or the name, is not Kafka's

    def default(self, kind: str) -> Value | None:
        return self.single if kind == SINGLE else self.cluster

    def parse(self, text: str) -> Value:
        if isinstance(self.kafka, bool):
            text = text.strip()  # as Kafka's ConfigDef
            if text.lower() not in ("true", "false"):
                raise ValueError(f"expected true or false, got {text!r}")
            return text.lower() == "true"
        return properties.integer(text, self.minimum)


def _group(kafka: KafkaSetting) -> Setting:
    """A group coordinator setting: every broker honours it, with Kafka's default."""
    default = getattr(GroupConfig(), kafka.field) // kafka.unit_ms
    why = _OWN if kafka.name.startswith("coordspec.") else ""
    return Setting(kafka.name, default, default, default, kafka.minimum, why)


_OWN = "coordspec's name: in Kafka 4.0 a constant, CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS"
_OFFSETS_WHY = "each is a log (a replica set on a cluster) made at start-up"
SETTINGS = {
    s.name: s
    for s in (
        Setting("auto.create.topics.enable", True, True, True),
        Setting("num.partitions", 1, 1, 1),
        Setting("default.replication.factor", 1, 1, 1),
        Setting("min.insync.replicas", 1, None, 1),
        Setting("offsets.topic.num.partitions", 50, 1, 3, why=_OFFSETS_WHY),
        *(_group(s) for s in KAFKA_SETTINGS.values()),
        Setting("replica.lag.time.max.ms", 30_000, None, 30_000),
        Setting(
            "zookeeper.session.timeout.ms",
            18_000,
            None,
            6000,
            why="a killed broker's partitions move within seconds",
        ),
        Setting("socket.request.max.bytes", 104_857_600, 104_857_600, 104_857_600, minimum=8),
        Setting(
            "max.connections",
            2**31 - 1,
            1000,
            1000,
            why="below the process's limit of open files",
        ),
        Setting("connections.max.idle.ms", 600_000, 600_000, 600_000),
    )
}


def pairs(texts: Iterable[str]) -> list[Given]:
    """The settings of ``--broker-config KEY=VALUE`` flags."""
    return properties.pairs(texts, "--broker-config")


def read_file(path: Path) -> list[Given]:
    """The settings of a Java properties file (:func:`coordspec.reference.properties.parse`)."""
    try:
        text = path.read_text(encoding="latin-1")
    except OSError as e:
        raise SettingsError(f"--broker-config-file {path}: {e.strerror or e}") from None
    return properties.parse(text, f"--broker-config-file {path}")


def resolve(kind: str, given: Iterable[Given]) -> dict[str, Value]:
    """Every setting ``kind`` honours: its default, or the last value given for it."""
    values = {name: s.default(kind) for name, s in SETTINGS.items() if s.default(kind) is not None}
    for g in given:
        setting = SETTINGS.get(g.key)
        if setting is None:
            raise SettingsError(
                f"{g.source} {g.key}: not a broker setting coordspec honours "
                "(coordspec broker --help lists them)"
            )
        if setting.default(kind) is None:
            raise SettingsError(f"{g.source} {g.key}: not honoured by {BROKER_NAMES[kind]}")
        try:
            values[g.key] = setting.parse(g.value)
        except ValueError as e:
            raise SettingsError(f"{g.source} {g.key}: {e}") from None
    low, high = values["group.min.session.timeout.ms"], values["group.max.session.timeout.ms"]
    if low > high:
        raise SettingsError(
            f"group.min.session.timeout.ms {low} exceeds group.max.session.timeout.ms {high}"
        )
    return values


def differences(values: Mapping[str, Value]) -> list[str]:
    """``name=value (Kafka: default)`` for each value that is not Kafka's default."""
    return [
        f"{name}={text(value)} (Kafka: {text(SETTINGS[name].kafka)})"
        for name, value in values.items()
        if value != SETTINGS[name].kafka
    ]


def text(value: Value) -> str:
    """As a properties file writes it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def as_arguments(values: Mapping[str, Value]) -> list[str]:
    """``--broker-config KEY=VALUE`` for each of ``values``: how a launcher passes them on."""
    return [arg for name, v in values.items() for arg in ("--broker-config", f"{name}={text(v)}")]


# -- the command lines ----------------------------------------------------------------------


def help_table() -> str:
    """The settings, their defaults and why a default is not Kafka's, for ``--help``."""
    lines = [
        "Kafka broker settings (--broker-config, --broker-config-file): the default of",
        "coordspec broker / of a cluster broker (-: not honoured there), and Kafka's if not so:",
    ]
    width = max(map(len, SETTINGS)) + 2
    for s in SETTINGS.values():
        shown = " / ".join(text(d) if (d := s.default(k)) is not None else "-" for k in KINDS)
        line = f"  {s.name:<{width}}{shown:<20}"
        if any(d is not None and d != s.kafka for d in (s.single, s.cluster)):
            line += f"Kafka: {text(s.kafka)} ({s.why})"
        elif s.why:
            line += f"({s.why})"
        lines.append(line.rstrip())
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker setting by its Kafka name (repeatable; over --broker-config-file)",
    )
    parser.add_argument(
        "--broker-config-file",
        type=Path,
        metavar="FILE",
        help="Kafka broker settings as a Java properties file (as Kafka's server.properties)",
    )


def from_arguments(kind: str, args: argparse.Namespace) -> dict[str, Value]:
    """The file first, then each --broker-config over it."""
    given = read_file(args.broker_config_file) if args.broker_config_file else []
    return resolve(kind, [*given, *pairs(args.broker_config)])


# -- what the brokers are made of -----------------------------------------------------------


@dataclass(frozen=True)
class TopicDefaults:
    """What a topic gets when its creator does not say: auto-created, or -1 in CreateTopics."""

    auto_create: bool  # auto.create.topics.enable
    partitions: int  # num.partitions
    replication_factor: int  # default.replication.factor


def topic_defaults_of(values: Mapping[str, Value]) -> TopicDefaults:
    return TopicDefaults(
        bool(values["auto.create.topics.enable"]),
        int(values["num.partitions"]),
        int(values["default.replication.factor"]),
    )


def group_config_of(values: Mapping[str, Value]) -> GroupConfig:
    return GroupConfig(
        **{s.field: s.to_field(int(values[s.name])) for s in KAFKA_SETTINGS.values()}
    )


def limits_of(values: Mapping[str, Value]) -> Limits:
    return Limits(
        int(values["socket.request.max.bytes"]),
        int(values["max.connections"]),
        int(values["connections.max.idle.ms"]) / 1000,
    )


def replication_config_of(values: Mapping[str, Value]) -> ReplicationConfig:
    return ReplicationConfig(
        min_insync_replicas=int(values["min.insync.replicas"]),
        replica_lag_time_max_ms=int(values["replica.lag.time.max.ms"]),
        zookeeper_session_timeout_ms=int(values["zookeeper.session.timeout.ms"]),
    )
