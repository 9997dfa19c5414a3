"""Settings that change the model's answers (Kafka's config names in comments)."""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.batching import DEFAULT_MULTI_BYTE_BUDGET, JUTE_MAXBUFFER


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    min_insync_replicas: int = 1  # min.insync.replicas
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms (30 s since Kafka 2.5, KIP-537)
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    zookeeper_session_timeout_ms: int = 18_000  # zookeeper.session.timeout.ms (Kafka 2.6)
    # The controller's writes: all decisions of one round as multis of at most
    # multi_byte_budget bytes (True), or one partition-state write at a time, each waiting
    # for the previous one's result (False; for comparison only).
    batch_writes: bool = True
    multi_byte_budget: int = DEFAULT_MULTI_BYTE_BUDGET

    def __post_init__(self) -> None:
        for name in (
            "min_insync_replicas",
            "replica_lag_time_max_ms",
            "zookeeper_session_timeout_ms",
            "multi_byte_budget",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise UsageError(f"ReplicationConfig: {name} must be a positive int, got {value!r}")
        if self.multi_byte_budget >= JUTE_MAXBUFFER:
            raise UsageError(
                f"ReplicationConfig: multi_byte_budget {self.multi_byte_budget} must stay below ZooKeeper's jute.maxbuffer ({JUTE_MAXBUFFER})"
            )
