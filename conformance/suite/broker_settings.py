"""The settings of the broker under test, as the user declares them, by Kafka's names:
``--broker-setting NAME=VALUE`` (repeatable, over the file) and ``--broker-settings-file FILE``
(a Java properties file, as Kafka's ``server.properties``: its other settings are ignored). The
names are the group coordinator's (``KAFKA_SETTINGS`` beside GroupConfig); the oracle models
the broker with them. ``coordspec conform``, ``coordspec trace check`` and ``coordspec
pipeline`` take them (``add_broker_settings`` in conformance/cli/trace.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from coordspec.reference import properties
from coordspec.reference.group.config import BY_FIELD, KAFKA_SETTINGS, GroupConfig
from coordspec.reference.properties import Given, SettingsError

FLAG, FILE_FLAG = "--broker-setting", "--broker-settings-file"


def overrides(args: argparse.Namespace) -> dict[str, int]:
    """GroupConfig's fields the arguments set; raises SettingsError with one line."""
    given = []
    if args.broker_settings_file:
        path = args.broker_settings_file
        try:
            text = path.read_text(encoding="latin-1")
        except OSError as e:
            raise SettingsError(f"{FILE_FLAG} {path}: {e.strerror or e}") from None
        # A server.properties holds settings the oracle has no use for: only the group's count.
        given = [
            g for g in properties.parse(text, f"{FILE_FLAG} {path}") if g.key in KAFKA_SETTINGS
        ]
    return resolve([*given, *properties.pairs(args.broker_setting, FLAG)])


def resolve(given: Iterable[Given]) -> dict[str, int]:
    fields: dict[str, int] = {}
    for g in given:
        setting = KAFKA_SETTINGS.get(g.key)
        if setting is None:
            raise SettingsError(
                f"{g.source} {g.key}: not a group coordinator setting "
                f"(settings: {', '.join(KAFKA_SETTINGS)})"
            )
        try:
            fields[setting.field] = setting.to_field(properties.integer(g.value, setting.minimum))
        except ValueError as e:
            raise SettingsError(f"{g.source} {g.key}: {e}") from None
    config = GroupConfig()
    low = fields.get("min_session_timeout_ms", config.min_session_timeout_ms)
    high = fields.get("max_session_timeout_ms", config.max_session_timeout_ms)
    if low > high:
        raise SettingsError(
            f"group.min.session.timeout.ms {low} exceeds group.max.session.timeout.ms {high}"
        )
    return fields


def config_of(args: argparse.Namespace) -> GroupConfig:
    return GroupConfig(**overrides(args))


def named(config: GroupConfig, fields: Iterable[str]) -> list[str]:
    """``name=value`` by Kafka's names, for ``fields`` of ``config``."""
    return [BY_FIELD[f].of(config) for f in fields]
