"""Server settings that change the model's answers (zoo.cfg names in comments)."""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.errors import UsageError


@dataclass(frozen=True, slots=True)
class ZooKeeperConfig:
    tick_time_ms: int = 2000  # tickTime: session deadlines are rounded up to a tick
    min_session_timeout_ms: int | None = None  # minSessionTimeout; default 2 ticks
    max_session_timeout_ms: int | None = None  # maxSessionTimeout; default 20 ticks

    def __post_init__(self) -> None:
        if not isinstance(self.tick_time_ms, int) or self.tick_time_ms <= 0:
            raise UsageError(
                f"ZooKeeperConfig: tick_time_ms must be a positive int, got {self.tick_time_ms!r}"
            )
        if self.min_timeout_ms > self.max_timeout_ms:
            raise UsageError(
                f"ZooKeeperConfig: min session timeout {self.min_timeout_ms} exceeds max {self.max_timeout_ms}"
            )

    @property
    def min_timeout_ms(self) -> int:
        return (
            2 * self.tick_time_ms
            if self.min_session_timeout_ms is None
            else self.min_session_timeout_ms
        )

    @property
    def max_timeout_ms(self) -> int:
        return (
            20 * self.tick_time_ms
            if self.max_session_timeout_ms is None
            else self.max_session_timeout_ms
        )

    def negotiate(self, timeout_ms: int) -> int:
        """The session timeout the server grants for a requested one."""
        return min(max(timeout_ms, self.min_timeout_ms), self.max_timeout_ms)
