"""What every API handler can see: the broker's identity, its topics and its group coordinator."""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.broker.group_service import GroupService
from coordspec.broker.log.producers import ProducerIds
from coordspec.broker.log.topics import TopicStore
from coordspec.broker.settings import TopicDefaults


@dataclass
class BrokerContext:
    node_id: int
    host: str  # advertised to clients in Metadata and FindCoordinator
    port: int
    cluster_id: str
    topics: TopicStore
    groups: GroupService
    producer_ids: ProducerIds
    topic_defaults: TopicDefaults


@dataclass(frozen=True, slots=True)
class Client:
    """The connection a request came on: Kafka records these with each group member."""

    client_id: str
    host: str  # as Kafka writes it: "/127.0.0.1"
    port: int = 0

    @property
    def name(self) -> str:
        """The connection, for the trace: client id and address."""
        return f"{self.client_id}@{self.host.lstrip('/')}:{self.port}"
