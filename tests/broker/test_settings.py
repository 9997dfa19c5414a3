"""The brokers' settings table (:mod:`coordspec.broker.settings`): a properties file, KEY=VALUE
over it, Kafka's defaults, and one line for every setting a broker cannot take."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from coordspec.broker.settings import (
    CLUSTER,
    KINDS,
    SETTINGS,
    SINGLE,
    SettingsError,
    differences,
    group_config_of,
    pairs,
    read_file,
    resolve,
)
from coordspec.reference.group.config import KAFKA_SETTINGS, GroupConfig

PROPERTIES = """\
# server.properties, as Kafka writes it
! also a comment \\
num.partitions=9

  num.partitions = 4
min.insync.replicas: 2
group.initial.rebalance.delay.ms   0
auto.create.topics.enable=\\
    false
"""


def test_a_file_then_key_value_pairs_over_it(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(PROPERTIES)
    given = read_file(path)
    # A comment does not continue; "=", ":" or spaces separate; a trailing backslash
    # continues a value.
    assert [(g.key, g.value) for g in given] == [
        ("num.partitions", "9"),
        ("num.partitions", "4"),
        ("min.insync.replicas", "2"),
        ("group.initial.rebalance.delay.ms", "0"),
        ("auto.create.topics.enable", "false"),
    ]
    assert given[2].source == f"--broker-config-file {path}:6"
    assert resolve(CLUSTER, given)["num.partitions"] == 4  # the later line wins
    values = resolve(CLUSTER, [*given, *pairs(["num.partitions=6"])])
    assert values["num.partitions"] == 6
    assert values["min.insync.replicas"] == 2
    assert values["group.initial.rebalance.delay.ms"] == 0
    assert values["auto.create.topics.enable"] is False
    assert values["replica.lag.time.max.ms"] == 30_000  # Kafka's, as nothing says otherwise


def test_the_defaults_are_kafkas_but_where_the_table_says_why() -> None:
    assert {name: s.kafka for name, s in SETTINGS.items() if not s.why} == {
        name: value for name, value in resolve(CLUSTER, []).items() if not SETTINGS[name].why
    }
    cluster = resolve(CLUSTER, [])
    assert (
        cluster["min.insync.replicas"],
        cluster["num.partitions"],
        cluster["default.replication.factor"],
    ) == (1, 1, 1)
    assert differences(cluster) == [
        "offsets.topic.num.partitions=3 (Kafka: 50)",
        "zookeeper.session.timeout.ms=6000 (Kafka: 18000)",
        "max.connections=1000 (Kafka: 2147483647)",
    ]
    assert "min.insync.replicas" not in resolve(SINGLE, [])


@pytest.mark.parametrize(
    ("kind", "given", "message"),
    [
        (
            CLUSTER,
            ["min.insync.replicas=x"],
            "--broker-config min.insync.replicas: expected an integer >= 1, got 'x'",
        ),
        (
            CLUSTER,
            ["num.partitions=0"],
            "--broker-config num.partitions: expected an integer >= 1, got '0'",
        ),
        (
            CLUSTER,
            ["auto.create.topics.enable=yes"],
            "--broker-config auto.create.topics.enable: expected true or false, got 'yes'",
        ),
        (
            CLUSTER,
            ["log.retention.hours=1"],
            (
                "--broker-config log.retention.hours: not a broker setting coordspec honours "
                "(coordspec broker --help lists them)"
            ),
        ),
        (
            SINGLE,
            ["min.insync.replicas=2"],
            (
                "--broker-config min.insync.replicas: not honoured by coordspec broker "
                "(one broker, one replica)"
            ),
        ),
        (SINGLE, ["num.partitions"], "--broker-config 'num.partitions': expected KEY=VALUE"),
        (
            SINGLE,
            ["group.min.session.timeout.ms=7000", "group.max.session.timeout.ms=6000"],
            "group.min.session.timeout.ms 7000 exceeds group.max.session.timeout.ms 6000",
        ),
    ],
    ids=["integer", "minimum", "boolean", "unknown", "not-here", "no-equals", "sessions"],
)
def test_a_setting_the_broker_cannot_take_is_one_line(
    kind: str, given: list[str], message: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        resolve(kind, pairs(given))
    assert str(raised.value) == message


def test_a_bad_line_of_the_file_is_named_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=2\nbroker.id=0\n")
    with pytest.raises(SettingsError) as raised:
        resolve(CLUSTER, read_file(path))
    assert str(raised.value).startswith(f"--broker-config-file {path}:2 broker.id: not a broker")
    with pytest.raises(SettingsError) as raised:
        read_file(tmp_path / "missing.properties")
    assert (
        str(raised.value)
        == f"--broker-config-file {tmp_path / 'missing.properties'}: No such file or directory"
    )


def test_every_group_setting_reaches_the_coordinator_in_its_unit() -> None:
    """Each GroupConfig field has a Kafka name both kinds of broker honour; minutes become ms."""
    given = pairs(
        [
            "group.max.size=1",
            "offset.metadata.max.bytes=8",
            "offsets.retention.minutes=2",
            "offsets.retention.check.interval.ms=1000",
            "coordspec.group.new.member.join.timeout.ms=5000",
            "group.initial.rebalance.delay.ms=0",
            "group.min.session.timeout.ms=10",
            "group.max.session.timeout.ms=20",
        ]
    )
    for kind in KINDS:
        assert group_config_of(resolve(kind, given)) == GroupConfig(
            max_size=1,
            offset_metadata_max_bytes=8,
            offsets_retention_ms=120_000,
            offsets_retention_check_interval_ms=1000,
            new_member_join_timeout_ms=5000,
            initial_rebalance_delay_ms=0,
            min_session_timeout_ms=10,
            max_session_timeout_ms=20,
        )
    assert {f.name for f in fields(GroupConfig)} == {s.field for s in KAFKA_SETTINGS.values()}
    assert group_config_of(resolve(SINGLE, [])) == GroupConfig()  # Kafka's defaults
    with pytest.raises(SettingsError) as raised:
        resolve(CLUSTER, pairs(["offsets.retention.minutes=0"]))
    assert str(raised.value) == (
        "--broker-config offsets.retention.minutes: expected an integer >= 1, got '0'"
    )
