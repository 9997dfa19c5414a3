"""A consumer group test context mirroring Kafka's GroupMetadataManagerTestContext for the
KIP-848 tests: a coordinator with a metadata image (its topics), groups built by replaying
records (``LoadGroups``), a prepared assignment for the mock assignor, heartbeats that return
the response and the records written, and ``sleep`` that fires the due timers."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping

from coordspec.reference import assignors
from coordspec.reference.assignors.server import GroupSpec
from coordspec.reference.group.consumer.heartbeat import REBALANCE_TIMER, SESSION_TIMER
from coordspec.reference.group.consumer.state import (
    ConsumerGroup,
    ConsumerMember,
    Partitions,
    to_topic_partitions,
)
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import AppendRecords, Effect, Reply
from coordspec.reference.group.invariants import Monitor
from coordspec.reference.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
    TopicPartitions,
)
from coordspec.reference.group.requests import (
    ConsumerGroupHeartbeat,
    LoadGroups,
    NewMetadataImage,
    ResolveRegularExpressions,
    Tick,
)
from coordspec.reference.group.responses import ConsumerGroupHeartbeatResponse

GROUP_ID = "fooup"
CLIENT_ID = "client"
CLIENT_HOST = "/127.0.0.1"


def assignment(**topics: tuple[int, ...]) -> Partitions:
    """Kafka's mkAssignment(mkTopicAssignment(...)): ``assignment(foo=(0, 1), bar=(2,))``."""
    return frozenset((t, p) for t, ps in topics.items() for p in ps)


def owned(**topics: tuple[int, ...]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, ps) for t, ps in topics.items())


def member(member_id: str, **fields: object) -> ConsumerMember:
    base = ConsumerMember(
        member_id, client_id=CLIENT_ID, client_host=CLIENT_HOST, rebalance_timeout_ms=5000
    )
    return dataclasses.replace(base, **fields)


def subscription_record(group_id: str, m: ConsumerMember) -> Record:
    return Record(
        ConsumerGroupMemberMetadataKey(group_id, m.member_id),
        ConsumerGroupMemberMetadataValue(
            m.instance_id,
            m.rack_id,
            m.client_id,
            m.client_host,
            tuple(sorted(m.subscribed_topic_names)),
            m.subscribed_topic_regex,
            m.rebalance_timeout_ms,
            m.server_assignor,
        ),
    )


def epoch_record(group_id: str, epoch: int) -> Record:
    return Record(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch))


def target_record(group_id: str, member_id: str, partitions: Partitions) -> Record:
    return Record(
        ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
        ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(partitions)),
    )


def target_epoch_record(group_id: str, epoch: int) -> Record:
    return Record(
        ConsumerGroupTargetAssignmentMetadataKey(group_id),
        ConsumerGroupTargetAssignmentMetadataValue(epoch),
    )


def current_record(group_id: str, m: ConsumerMember) -> Record:
    return Record(
        ConsumerGroupCurrentMemberAssignmentKey(group_id, m.member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            m.member_epoch,
            m.previous_member_epoch,
            m.state,
            to_topic_partitions(m.assigned),
            to_topic_partitions(m.pending_revocation),
        ),
    )


def group_records(
    group_id: str, epoch: int, members: list[ConsumerMember], targets: Mapping[str, Partitions]
) -> list[Record]:
    """Kafka's ConsumerGroupBuilder: the records of a group at ``epoch`` (target epoch too)."""
    records = [subscription_record(group_id, m) for m in members]
    records.append(epoch_record(group_id, epoch))
    records += [target_record(group_id, m, p) for m, p in targets.items()]
    records.append(target_epoch_record(group_id, epoch))
    records += [current_record(group_id, m) for m in members]
    return records


class Context:
    def __init__(
        self,
        topics: Mapping[str, int] | None = None,
        records: list[Record] | None = None,
        now_ms: int = 0,
    ) -> None:
        self.monitor = Monitor()
        self.coordinator = GroupCoordinator(
            topics=topics or {}, observer=self.monitor, now_ms=now_ms
        )
        self.now_ms = now_ms
        self._requests = 0
        self.log: list[Record] = []  # every record written since the load, in order
        if records:
            self.coordinator.handle(LoadGroups(tuple(records), now_ms=now_ms))

    def heartbeat(
        self, api_version: int = 1, group_id: str = GROUP_ID, **fields: object
    ) -> tuple[ConsumerGroupHeartbeatResponse, list[Record]]:
        self._requests += 1
        effects = self.coordinator.handle(
            ConsumerGroupHeartbeat(
                request_id=self._requests,
                api_version=api_version,
                now_ms=self.now_ms,
                group_id=group_id,
                **fields,
            )
        )
        replies = [e.response for e in effects if isinstance(e, Reply)]
        assert len(replies) == 1, effects
        response = replies[0]
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response, self._written(effects)

    def _written(self, effects: list[Effect]) -> list[Record]:
        records = [r for e in effects if isinstance(e, AppendRecords) for r in e.records]
        self.log += records
        return records

    def sleep(self, ms: int) -> list[Record]:
        """Time moves on; the records the timers due by then wrote."""
        self.now_ms += ms
        return self._written(self.coordinator.handle(Tick(now_ms=self.now_ms)))

    def resolve_regular_expressions(self, group_id: str = GROUP_ID) -> list[Record]:
        """Kafka's executor running the group's regex refresh, then its result handler."""
        effects = self.coordinator.handle(ResolveRegularExpressions(group_id, self.now_ms))
        return self._written(effects)

    def new_metadata_image(
        self, topics: Mapping[str, int], topic_ids: Mapping[str, str] | None = None
    ) -> None:
        self.coordinator.handle(NewMetadataImage(topics, self.now_ms, topic_ids or {}))

    def group(self, group_id: str = GROUP_ID) -> ConsumerGroup:
        return self.coordinator.consumer_groups[group_id]

    def session_deadline(self, member_id: str, group_id: str = GROUP_ID) -> int | None:
        return self.coordinator.timers.deadline((SESSION_TIMER, group_id, member_id))

    def rebalance_deadline(self, member_id: str, group_id: str = GROUP_ID) -> int | None:
        return self.coordinator.timers.deadline((REBALANCE_TIMER, group_id, member_id))


@contextlib.contextmanager
def prepared(result: Mapping[str, Partitions]) -> Iterator[None]:
    """Kafka's MockPartitionAssignor.prepareGroupAssignment: Kafka's tests configure the mock
    as the only assignor, so here every assignor name answers ``result``."""

    def mock(spec: GroupSpec) -> dict[str, dict[str, frozenset[int]]]:
        by_member: dict[str, dict[str, frozenset[int]]] = {m: {} for m in spec.members}
        for m, partitions in result.items():
            for topic, partition in partitions:
                by_member.setdefault(m, {})
                by_member[m][topic] = by_member[m].get(topic, frozenset()) | {partition}
        return by_member

    original = dict(assignors.server.ASSIGNORS)
    assignors.server.ASSIGNORS.update(dict.fromkeys(original, mock))
    try:
        yield
    finally:
        assignors.server.ASSIGNORS.update(original)
