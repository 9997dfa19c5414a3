"""What ZooKeeper publishes, as a broker answers Metadata and FindCoordinator from it.

A second ZooKeeper session per broker, apart from the one the replication model drives
(so the model's session sees only its own watches): kazoo's ``ChildrenWatch`` and
``DataWatch`` keep the live brokers, the controller, each topic's assignment and each
partition's state (leader, leader epoch, ISR) up to date. Kafka brokers answer from a
metadata cache the controller fills with UpdateMetadata; here the cache is ZooKeeper's
own published state, which the controller's writes and the leaders' ISR writes define.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.znodes import (
    BROKER_IDS,
    CONTROLLER,
    TOPICS,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    decode_controller,
    state_path,
    topic_path,
)


@dataclass
class PublishedView:
    client: KazooClient
    live_brokers: set[int] = field(default_factory=set)
    controller: int = -1
    assignments: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # of the znodes that have one
    topics_version: int = 0  # moves whenever assignments or topic_ids change
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    _watched_topics: set[str] = field(default_factory=set)
    _watched_states: set[TopicPartition] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, hosts: str, timeout_s: float = 10.0) -> PublishedView:
        client = KazooClient(hosts, timeout=10.0)
        try:
            client.start(timeout=timeout_s)
            client.ensure_path(BROKER_IDS)
            client.ensure_path(TOPICS)
        except BaseException:
            client.stop()  # or it keeps trying to connect
            client.close()
            raise
        view = cls(client)
        ChildrenWatch(client, BROKER_IDS, view._brokers)
        ChildrenWatch(client, TOPICS, view._topics)
        DataWatch(client, CONTROLLER, view._controller)
        return view

    def close(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()

    def partition_count(self, topic: str) -> int | None:
        partitions = self.assignments.get(topic)
        return len(partitions) if partitions is not None else None

    def leader(self, tp: TopicPartition) -> int:
        state = self.states.get(tp)
        return state.leader if state is not None else -1

    # -- watch callbacks ----------------------------------------------------------------------
    # They run on kazoo's threads while the broker's loop reads: each update replaces a whole
    # dict (readers iterate a snapshot), under a lock (two watch threads may update at once).

    def _watch(self, path: str, callback) -> None:
        # A new watch reads its node at once: not on the callback thread, which would wait on itself.
        self.client.handler.spawn(DataWatch, self.client, path, callback)

    def _brokers(self, children: list[str]) -> None:
        self.live_brokers = {int(c) for c in children if c.isdigit()}

    def _controller(self, data: bytes | None, stat) -> None:
        try:
            self.controller = decode_controller(CONTROLLER, data) if data else -1
        except UsageError:
            self.controller = -1

    def _topics(self, children: list[str]) -> None:
        with self._lock:
            new = [t for t in children if t not in self._watched_topics]
            self._watched_topics |= set(new)
            self.assignments = {t: p for t, p in self.assignments.items() if t in children}
            self.topic_ids = {t: i for t, i in self.topic_ids.items() if t in children}
            self.topics_version += 1
        for topic in new:
            self._watch(topic_path(topic), self._on_assignment(topic))

    # kazoo passes a third argument (the event) to a callback that takes one: no defaults here.
    def _on_assignment(self, topic: str):
        return lambda data, stat: self._assignment(topic, data)

    def _on_state(self, tp: TopicPartition):
        return lambda data, stat: self._state(tp, data)

    def _assignment(self, topic: str, data: bytes | None) -> bool | None:
        if data is None:
            with self._lock:
                self.assignments = {t: p for t, p in self.assignments.items() if t != topic}
                self.topic_ids = {t: i for t, i in self.topic_ids.items() if t != topic}
                self._watched_topics.discard(topic)
                self.topics_version += 1
            return False  # stop watching a deleted topic
        try:
            assignment = TopicAssignment.decode(topic_path(topic), data)
        except UsageError:
            return None
        partitions = assignment.partitions
        with self._lock:
            self.assignments = {**self.assignments, topic: partitions}
            if assignment.topic_id is not None:
                self.topic_ids = {**self.topic_ids, topic: assignment.topic_id}
            self.topics_version += 1
            new = [
                TopicPartition(topic, n)
                for n in partitions
                if TopicPartition(topic, n) not in self._watched_states
            ]
            self._watched_states |= set(new)
        for tp in new:
            self._watch(state_path(tp), self._on_state(tp))
        return None

    def _state(self, tp: TopicPartition, data: bytes | None) -> None:
        try:
            state = PartitionState.decode(state_path(tp), data) if data is not None else None
        except UsageError:
            state = None
        with self._lock:
            states = {k: v for k, v in self.states.items() if k != tp}
            if state is not None:
                states[tp] = state
            self.states = states
