"""A test driver for the reference group coordinator, shaped like Kafka's
GroupMetadataManagerTestContext so Kafka's coordinator tests port step by step.

    d = Driver()
    join = d.join(member_id="", version=4)          # a Pending handle
    assert join.error == ErrorCode.MEMBER_ID_REQUIRED
    d.sleep(3000)                                   # timers due by then fire, each at its deadline

Kafka's own test helpers built on the context (joinClassicGroupAsDynamicMemberAndCompleteJoin,
staticMembersJoinAndRebalance, createClassicGroup, ...) are ported in tests/reference/kafka_context.py.

Every step is checked by the invariant Monitor. Appends complete on their own unless
the driver is built with ``complete_appends=False``; then ``d.complete(append, error)``.

One difference from Kafka's mock timer: ``sleep`` there moves the clock to the end of the
sleep and then runs every due timer at that time; the reference runs each timer at its
own deadline, as a real broker does. Tests ported from Kafka note where this matters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordspec.reference.choices import SeededChoices
from coordspec.reference.consumer_protocol import Subscription, encode_subscription
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import (
    AppendCompleted,
    Assignment,
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    FetchTopic,
    GroupConfig,
    GroupCoordinator,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    LoadGroups,
    MemberIdentity,
    OffsetCommit,
    OffsetDelete,
    OffsetDeletePartition,
    OffsetDeleteTopic,
    OffsetFetch,
    Protocol,
    SyncGroup,
    Tick,
    TxnOffsetCommit,
    UnloadGroups,
    WriteTxnMarker,
)
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.invariants import Monitor
from coordspec.reference.group.records import Record
from coordspec.reference.group.state import Group
from coordspec.reference.substeps import UNOBSERVED, SubStepObserver

GROUP_ID = "group-id"
# What every Driver's coordinator reports its sub-steps to; a test may subscribe here.
SUBSTEPS: SubStepObserver = UNOBSERVED
LATEST = {
    "JoinGroup": 9,
    "SyncGroup": 5,
    "Heartbeat": 4,
    "LeaveGroup": 5,
    "OffsetCommit": 9,
    "OffsetFetch": 9,
    "DescribeGroups": 5,
    "ListGroups": 5,
    "DeleteGroups": 2,
    "OffsetDelete": 0,
    "TxnOffsetCommit": 5,
}
_TOPICS = ("foo", "bar", "baz")


def kafka_test_config(**overrides) -> GroupConfig:
    """GroupMetadataManagerTestContext's settings: 3 s initial delay, sessions 10 ms..10 min."""
    settings = dict(
        min_session_timeout_ms=10, max_session_timeout_ms=600_000, initial_rebalance_delay_ms=3_000
    )
    settings.update(overrides)
    return GroupConfig(**settings)


def protocols(*names: str) -> tuple[Protocol, ...]:
    """Protocols whose metadata is a consumer subscription to foo, bar, baz in turn (Kafka's test builder)."""
    return tuple(
        Protocol(name, encode_subscription(Subscription((_TOPICS[i % 3],))))
        for i, name in enumerate(names)
    )


@dataclass
class Pending:
    """A request sent to the coordinator; its reply may come later."""

    driver: Driver
    request: object
    records: list[Record] = field(default_factory=list)  # appended by the step that sent it

    @property
    def done(self) -> bool:
        return self.request.request_id in self.driver.replies

    @property
    def response(self):
        reply = self.driver.replies.get(self.request.request_id)
        assert reply is not None, f"{self.request.api} #{self.request.request_id} has no reply yet"
        return reply.response

    @property
    def error(self) -> ErrorCode:
        return self.response.error_code


def _commit_topics(
    offsets: dict[tuple[str, int], int], leader_epoch: int, metadata: str | None
) -> tuple[CommitTopic, ...]:
    topics: dict[str, list[CommitPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            CommitPartition(partition, offset, leader_epoch, metadata)
        )
    return tuple(CommitTopic(t, tuple(ps)) for t, ps in topics.items())


class Driver:
    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        seed: int = 0,
        now_ms: int = 0,
        complete_appends: bool = True,
        arbitrary: bool = False,
        topics: dict[str, int] | None = None,
    ) -> None:
        self.monitor = Monitor()
        self.coordinator = GroupCoordinator(
            config or kafka_test_config(),
            SeededChoices(seed, arbitrary),
            now_ms=now_ms,
            complete_appends=complete_appends,
            observer=self.monitor,
            substeps=SUBSTEPS,
            topics=topics,
        )
        self.now_ms = now_ms
        self.replies: dict[int, Reply] = {}
        self.log: list[Record] = []  # every record appended and completed so far, in order
        self.appends: list[AppendRecords] = []  # appends issued by the last step
        self.last_records: list[Record] = []
        self._request_ids = 0

    # -- sending -------------------------------------------------------------------

    def _step(self, event) -> list[Record]:
        self.appends = []
        records = []
        for effect in self.coordinator.handle(event):
            if isinstance(effect, Reply):
                assert effect.request_id not in self.replies, (
                    f"second reply to #{effect.request_id}"
                )
                self.replies[effect.request_id] = effect
            else:
                self.appends.append(effect)
                records.extend(effect.records)
        if self.coordinator.complete_appends:
            self.log.extend(records)
        self.last_records = records
        return records

    def send(self, cls, version: int | None = None, **fields) -> Pending:
        self._request_ids += 1
        request = cls(
            self._request_ids,
            LATEST[cls.__name__] if version is None else version,
            self.now_ms,
            **fields,
        )
        pending = Pending(self, request)
        pending.records = self._step(request)
        return pending

    def sleep(self, ms: int) -> list[Record]:
        self.now_ms += ms
        return self._step(Tick(self.now_ms))

    def complete(self, append: AppendRecords, error: ErrorCode = ErrorCode.NONE) -> list[Record]:
        if error == ErrorCode.NONE:
            self.log.extend(append.records)
        return self._step(AppendCompleted(append.append_id, self.now_ms, error))

    def load(self, records) -> None:
        self._step(LoadGroups(tuple(records), self.now_ms))

    def unload(self) -> None:
        self._step(UnloadGroups(self.now_ms))

    # -- requests with Kafka's test defaults -----------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        version: int = 3,
        group_id: str = GROUP_ID,
        group_instance_id: str | None = None,
        protocol_names: tuple[str, ...] = ("range",),
        session_timeout_ms: int = 500,
        rebalance_timeout_ms: int = 500,
        protocol_type: str = "consumer",
        **fields,
    ) -> Pending:
        fields.setdefault("protocols", protocols(*protocol_names))
        return self.send(
            JoinGroup,
            version,
            group_id=group_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            **fields,
        )

    def sync(
        self,
        member_id: str,
        generation_id: int,
        *,
        version: int | None = None,
        group_id: str = GROUP_ID,
        group_instance_id: str | None = None,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
        assignments: dict[str, bytes] | None = None,
    ) -> Pending:
        return self.send(
            SyncGroup,
            version,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=tuple(Assignment(m, a) for m, a in (assignments or {}).items()),
        )

    def heartbeat(
        self,
        member_id: str,
        generation_id: int,
        *,
        group_id: str = GROUP_ID,
        group_instance_id: str | None = None,
        version: int | None = None,
    ) -> Pending:
        return self.send(
            Heartbeat,
            version,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
        )

    def leave(
        self,
        *members: tuple[str, str | None] | str,
        group_id: str = GROUP_ID,
        version: int | None = None,
    ) -> Pending:
        identities = tuple(
            MemberIdentity(m) if isinstance(m, str) else MemberIdentity(m[0], m[1]) for m in members
        )
        return self.send(LeaveGroup, version, group_id=group_id, members=identities)

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        group_id: str | None = GROUP_ID,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        retention_time_ms: int = -1,
        version: int | None = None,
        metadata: str | None = "",
        leader_epoch: int = -1,
    ) -> Pending:
        return self.send(
            OffsetCommit,
            version,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            retention_time_ms=retention_time_ms,
            topics=_commit_topics(offsets, leader_epoch, metadata),
        )

    def txn_commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        producer_id: int = 10,
        group_id: str | None = GROUP_ID,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        version: int | None = None,
        metadata: str | None = "",
        leader_epoch: int = -1,
    ) -> Pending:
        return self.send(
            TxnOffsetCommit,
            version,
            transactional_id=f"txn-{producer_id}",
            group_id=group_id,
            producer_id=producer_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            topics=_commit_topics(offsets, leader_epoch, metadata),
        )

    def marker(self, producer_id: int, result: str, *, group_id: str = GROUP_ID) -> list[Record]:
        return self._step(WriteTxnMarker(group_id, producer_id, result, self.now_ms))

    def fetch(
        self,
        partitions: dict[str, tuple[int, ...]] | None,
        *,
        group_id: str | None = GROUP_ID,
        version: int | None = None,
        require_stable: bool = False,
    ) -> Pending:
        topics = (
            None if partitions is None else tuple(FetchTopic(t, ps) for t, ps in partitions.items())
        )
        return self.send(
            OffsetFetch, version, group_id=group_id, topics=topics, require_stable=require_stable
        )

    def describe(self, *group_ids: str | None, version: int | None = None) -> Pending:
        return self.send(DescribeGroups, version, groups=group_ids)

    def list_groups(self, *states: str, version: int | None = None) -> Pending:
        return self.send(ListGroups, version, states_filter=states)

    def delete(self, *group_ids: str | None, version: int | None = None) -> Pending:
        return self.send(DeleteGroups, version, groups_names=group_ids)

    def delete_offsets(
        self, partitions: dict[str, tuple[int, ...]], *, group_id: str = GROUP_ID
    ) -> Pending:
        topics = tuple(
            OffsetDeleteTopic(t, tuple(OffsetDeletePartition(p) for p in ps))
            for t, ps in partitions.items()
        )
        return self.send(OffsetDelete, group_id=group_id, topics=topics)

    # -- inspection -------------------------------------------------------------------

    def group(self, group_id: str = GROUP_ID) -> Group:
        return self.coordinator.group(group_id)
