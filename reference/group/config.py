"""Broker settings that shape the classic group coordinator (Kafka 4.x defaults)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType

from coordspec.reference.errors import UsageError


@dataclass(frozen=True, slots=True)
class GroupConfig:
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1  # group.max.size
    # A new member that never rejoins is dropped after this long (KAFKA-7610); a
    # constant in Kafka, a setting here so tests can shorten it.
    new_member_join_timeout_ms: int = 300_000  # coordspec.group.new.member.join.timeout.ms
    offset_metadata_max_bytes: int = 4_096  # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3_600_000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    consumer_session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = 2**31 - 1  # group.consumer.max.size

    def __deepcopy__(self, memo: dict[int, object]) -> GroupConfig:
        return self  # immutable: copies of a coordinator (the oracle's hypotheses) share it

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UsageError(
                    f"GroupConfig.{field.name} must be a non-negative int, got {value!r}"
                )
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise UsageError(
                "GroupConfig: min_session_timeout_ms "
                f"({self.min_session_timeout_ms}) exceeds max_session_timeout_ms ({self.max_session_timeout_ms})"
            )
        if self.max_size < 1:
            raise UsageError("GroupConfig.max_size must be at least 1")
        if self.offsets_retention_check_interval_ms < 1:
            raise UsageError("GroupConfig.offsets_retention_check_interval_ms must be at least 1")


@dataclass(frozen=True, slots=True)
class KafkaSetting:
    """A broker setting by Kafka's name, as the GroupConfig field it sets."""

    name: str  # Kafka's (a coordspec.* name where Kafka has none)
    field: str  # GroupConfig's
    minimum: int  # the least value Kafka takes, in Kafka's unit
    unit_ms: int = 1  # GroupConfig's value is Kafka's times this (minutes: 60000)

    def to_field(self, value: int) -> int:
        return value * self.unit_ms

    def of(self, config: GroupConfig) -> str:
        """``name=value`` in Kafka's unit (a fraction if the field is not a whole unit)."""
        value = getattr(config, self.field)
        shown = value // self.unit_ms if value % self.unit_ms == 0 else value / self.unit_ms
        return f"{self.name}={shown}"


# Kafka 4.0's GroupCoordinatorConfig names every field but the new-member join timeout, which
# is its constant CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (5 minutes).
KAFKA_SETTINGS = MappingProxyType(
    {
        s.name: s
        for s in (
            KafkaSetting("group.min.session.timeout.ms", "min_session_timeout_ms", 0),
            KafkaSetting("group.max.session.timeout.ms", "max_session_timeout_ms", 0),
            KafkaSetting("group.initial.rebalance.delay.ms", "initial_rebalance_delay_ms", 0),
            KafkaSetting("group.max.size", "max_size", 1),
            KafkaSetting(
                "coordspec.group.new.member.join.timeout.ms", "new_member_join_timeout_ms", 1
            ),
            KafkaSetting("offset.metadata.max.bytes", "offset_metadata_max_bytes", 0),
            KafkaSetting("offsets.retention.minutes", "offsets_retention_ms", 1, unit_ms=60_000),
            KafkaSetting(
                "offsets.retention.check.interval.ms", "offsets_retention_check_interval_ms", 1
            ),
            KafkaSetting("group.consumer.session.timeout.ms", "consumer_session_timeout_ms", 1),
            KafkaSetting(
                "group.consumer.heartbeat.interval.ms", "consumer_heartbeat_interval_ms", 1
            ),
            KafkaSetting("group.consumer.max.size", "consumer_max_size", 1),
        )
    }
)
BY_FIELD = MappingProxyType({s.field: s for s in KAFKA_SETTINGS.values()})
