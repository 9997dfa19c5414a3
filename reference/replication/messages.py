"""The controller's requests to brokers (Kafka's LeaderAndIsr and StopReplica APIs), as
data. Kafka's controller sends one request per broker per decision round, listing every
partition of that broker the round decided."""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.frozen import quicken
from coordspec.reference.replication.znodes import TopicPartition


@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartition:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    controller_epoch: (
        int  # of the controller that made this decision (may be older than the request's)
    )

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    controller_id: int
    controller_epoch: int
    partitions: tuple[LeaderAndIsrPartition, ...]


@dataclass(frozen=True, slots=True)
class StopReplica:
    controller_id: int
    controller_epoch: int
    partitions: tuple[TopicPartition, ...]
    delete: bool


ControllerRequest = LeaderAndIsr | StopReplica


quicken(globals())  # cheaper constructors (reference/frozen.py)
