"""One broker's coordinator host against a log this file keeps: routing, loading, refusals
per API and version, and writes acknowledged only at the high watermark (CF-2 … CF-8).

``OneBroker`` plays the replication layer for a single broker: it appends each batch where
the host says, reads the log back for loading, and moves the high watermark when a test
says the followers caught up. The failover Monitor checks every step.
"""

from __future__ import annotations

import pytest
from driver import LATEST, kafka_test_config, protocols

from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.failover.effects import AppendToPartition, LoadPartition
from coordspec.reference.failover.events import (
    AppendFailed,
    BecomeCoordinator,
    HighWatermarkUpdated,
    LoadGroup,
    ResignCoordinator,
)
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.failover.invariants import Monitor
from coordspec.reference.failover.partition import PartitionState
from coordspec.reference.failover.placement import partition_for
from coordspec.reference.group import (
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    FetchTopic,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    MemberIdentity,
    NewMetadataImage,
    OffsetCommit,
    OffsetDelete,
    OffsetDeletePartition,
    OffsetDeleteTopic,
    OffsetFetch,
    ResolveRegularExpressions,
    SyncGroup,
    Tick,
)
from coordspec.reference.group.requests import (
    VERSIONS,
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
)
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeletableGroupResult,
    DeleteGroupsResponse,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)

PARTITIONS = 3
CG_JOIN = {"member_epoch": 0, "rebalance_timeout_ms": 5_000, "topic_partitions": ()}
GROUP = "group-id"  # partition_for("group-id", 3) == 0
OTHER = "a"  # partition_for("a", 3) == 1


class OneBroker:
    def __init__(self, broker_id: int = 1, monitor: Monitor | None = None) -> None:
        self.monitor = monitor or Monitor(PARTITIONS)
        self.host = CoordinatorHost(broker_id, PARTITIONS, kafka_test_config())
        self.monitor.watch(self.host)
        self.logs: dict[int, list[tuple]] = {p: [] for p in range(PARTITIONS)}
        self.hw: dict[int, int] = dict.fromkeys(range(PARTITIONS), 0)
        self.epochs: dict[int, int] = {}
        self.replies: dict[int | str, object] = {}
        self.appends: list[AppendToPartition] = []
        self.loads: list[LoadPartition] = []
        self.now_ms = 0
        self._ids = 0

    def step(self, event) -> list:
        effects = self.host.handle(event)
        for effect in effects:
            if isinstance(effect, AppendToPartition):
                log = self.logs[effect.partition]
                assert effect.offset == len(log), f"append at {effect.offset}, log end {len(log)}"
                log.append(effect.records)
                self.appends.append(effect)
            elif isinstance(effect, LoadPartition):
                self.loads.append(effect)
            else:
                assert effect.request_id not in self.replies, f"second reply to {effect.request_id}"
                self.replies[effect.request_id] = effect
        return effects

    # -- leadership and the log --------------------------------------------------------

    def become(self, partition: int = 0, epoch: int = 1) -> None:
        self.epochs[partition] = epoch
        self.step(BecomeCoordinator(partition, epoch, self.now_ms))

    def load(self, partition: int = 0) -> None:
        log = self.logs[partition]
        self.step(
            LoadGroup(
                partition, self.epochs[partition], tuple(log), self.hw[partition], self.now_ms
            )
        )

    def lead(self, partition: int = 0, epoch: int = 1) -> None:
        self.become(partition, epoch)
        self.load(partition)

    def replicate(self, partition: int = 0, upto: int | None = None) -> None:
        """The followers caught up: the high watermark moves to ``upto`` (the log end by default)."""
        self.hw[partition] = len(self.logs[partition]) if upto is None else upto
        self.step(HighWatermarkUpdated(partition, self.hw[partition], self.now_ms))

    def resign(self, partition: int = 0, epoch: int | None = None) -> None:
        self.step(
            ResignCoordinator(
                partition, epoch if epoch is not None else self.epochs[partition] + 1, self.now_ms
            )
        )

    def sleep(self, ms: int) -> None:
        self.now_ms += ms
        self.step(Tick(self.now_ms))

    # -- requests ------------------------------------------------------------------------

    def send(self, cls, version: int | None = None, **fields):
        self._ids += 1
        request = cls(
            self._ids, LATEST[cls.__name__] if version is None else version, self.now_ms, **fields
        )
        self.step(request)
        return request.request_id

    def reply(self, request_id):
        return self.replies[request_id].response

    def join(self, member_id: str = "", group_id: str = GROUP, version: int = 3, **fields):
        fields.setdefault("protocols", protocols("range"))
        return self.send(
            JoinGroup,
            version,
            group_id=group_id,
            member_id=member_id,
            session_timeout_ms=5_000,
            rebalance_timeout_ms=5_000,
            **fields,
        )

    def commit(self, offset: int, group_id: str = GROUP, version: int | None = None, **fields):
        topics = (CommitTopic("foo", (CommitPartition(0, offset),)),)
        return self.send(OffsetCommit, version, group_id=group_id, topics=topics, **fields)

    def fetch(self, group_id: str = GROUP, version: int | None = None):
        return self.send(OffsetFetch, version, group_id=group_id, topics=(FetchTopic("foo", (0,)),))

    def stable_group(self) -> tuple[str, int]:
        """One member joins, syncs, and its assignment is committed: (member id, generation)."""
        join = self.join()
        self.sleep(3_000)  # group.initial.rebalance.delay.ms
        response = self.reply(join)
        sync = self.send(
            SyncGroup,
            group_id=GROUP,
            generation_id=response.generation_id,
            member_id=response.member_id,
            protocol_type="consumer",
            protocol_name="range",
        )
        assert sync not in self.replies  # the leader's assignment waits for the high watermark
        self.replicate()
        assert self.reply(sync).error_code == ErrorCode.NONE
        return response.member_id, response.generation_id


def test_partitions_of_the_test_groups():
    assert partition_for(GROUP, PARTITIONS) == 0
    assert partition_for(OTHER, PARTITIONS) == 1


# -- refusals per API and version (CF-2, CF-5) ---------------------------------------------


def _request(api: str, version: int, group_id: str = GROUP):
    fields = {
        "JoinGroup": {
            "group_id": group_id,
            "protocols": protocols("range"),
            "session_timeout_ms": 5_000,
        },
        "SyncGroup": {"group_id": group_id, "generation_id": 1, "member_id": "m"},
        "Heartbeat": {"group_id": group_id, "generation_id": 1, "member_id": "m"},
        "LeaveGroup": {"group_id": group_id, "members": (MemberIdentity("m"),)},
        "OffsetCommit": {
            "group_id": group_id,
            "topics": (CommitTopic("foo", (CommitPartition(0, 5), CommitPartition(1, 6))),),
        },
        "OffsetFetch": {"group_id": group_id, "topics": (FetchTopic("foo", (0,)),)},
        "DescribeGroups": {"groups": (group_id,)},
        "DeleteGroups": {"groups_names": (group_id,)},
        "OffsetDelete": {
            "group_id": group_id,
            "topics": (OffsetDeleteTopic("foo", (OffsetDeletePartition(0),)),),
        },
        "ConsumerGroupHeartbeat": {
            "group_id": group_id,
            "member_id": "m",
            "subscribed_topic_names": ("foo",),
            **CG_JOIN,
        },
        "ConsumerGroupDescribe": {"group_ids": (group_id,)},
    }[api]
    cls = {
        c.__name__: c
        for c in (
            JoinGroup,
            SyncGroup,
            Heartbeat,
            LeaveGroup,
            OffsetCommit,
            OffsetFetch,
            DescribeGroups,
            DeleteGroups,
            OffsetDelete,
            ConsumerGroupHeartbeat,
            ConsumerGroupDescribe,
        )
    }[api]
    return cls(f"{api}-v{version}", version, 0, **fields)


def _expected_refusal(api: str, version: int, error: ErrorCode):
    """What Kafka 4.0 sends, field by field, when the group's partition is not served."""
    if api == "JoinGroup":
        return JoinGroupResponse(
            error,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if version >= 7 else "",
            leader="",
            member_id="",
        )
    if api == "SyncGroup":
        return SyncGroupResponse(error, None, None, b"")
    if api == "Heartbeat":
        return HeartbeatResponse(
            ErrorCode.NONE if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error
        )
    if api == "LeaveGroup":
        return LeaveGroupResponse(error, ())
    if api == "OffsetCommit":
        return OffsetCommitResponse(
            (
                CommitTopicResponse(
                    "foo", (CommitPartitionResponse(0, error), CommitPartitionResponse(1, error))
                ),
            )
        )
    if api == "OffsetFetch":
        # v0-v1 have no top-level error and the coordinator's group error lists no
        # partitions: the client sees an empty answer.
        return OffsetFetchResponse(error if version >= 2 else ErrorCode.NONE, ())
    if api == "DescribeGroups":
        return DescribeGroupsResponse((DescribedGroup(error, GROUP, "", "", "", ()),))
    if api == "OffsetDelete":
        return OffsetDeleteResponse(error, ())
    if api == "ConsumerGroupHeartbeat":
        return ConsumerGroupHeartbeatResponse(error)
    if api == "ConsumerGroupDescribe":
        # ConsumerGroupDescribeRequest.getErrorDescribedGroupList: the id and the error
        return ConsumerGroupDescribeResponse((DescribedConsumerGroup(error, GROUP),))
    return DeleteGroupsResponse((DeletableGroupResult(GROUP, error),))


API_VERSIONS = [
    (api, v)
    for api in (
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "OffsetCommit",
        "OffsetFetch",
        "DescribeGroups",
        "DeleteGroups",
        "OffsetDelete",
        "ConsumerGroupHeartbeat",
        "ConsumerGroupDescribe",
    )
    for v in VERSIONS[api]
]


@pytest.mark.parametrize(("api", "version"), API_VERSIONS)
def test_not_coordinator_per_api_and_version(api, version):
    broker = OneBroker()
    broker.lead(partition=1)  # leads another partition, not the group's
    request = _request(api, version)
    broker.step(request)
    assert broker.reply(request.request_id) == _expected_refusal(
        api, version, ErrorCode.NOT_COORDINATOR
    )


@pytest.mark.parametrize(("api", "version"), API_VERSIONS)
def test_coordinator_load_in_progress_per_api_and_version(api, version):
    broker = OneBroker()
    broker.become(partition=0)
    assert broker.loads == [LoadPartition(0, 1)]
    request = _request(api, version)
    broker.step(request)
    assert broker.reply(request.request_id) == _expected_refusal(
        api, version, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    )


@pytest.mark.parametrize("version", list(VERSIONS["ListGroups"]))
def test_list_groups_while_loading_and_while_not_leading(version):
    broker = OneBroker()
    request = ListGroups("none", version, 0)
    broker.step(request)
    assert broker.reply("none") == ListGroupsResponse(ErrorCode.NONE, ())
    broker.become(partition=0)
    broker.step(ListGroups("loading", version, 0))
    assert broker.reply("loading") == ListGroupsResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ())


def test_service_checks_come_before_the_partition():
    """GM-1 holds on a broker that coordinates nothing: the service checks first."""
    broker = OneBroker()
    broker.step(
        JoinGroup(
            1,
            5,
            0,
            group_id="",
            member_id="m",
            protocols=protocols("range"),
            session_timeout_ms=5_000,
        )
    )
    assert broker.reply(1) == JoinGroupResponse(
        ErrorCode.INVALID_GROUP_ID, member_id="m"
    ).at_version(5)
    broker.step(
        JoinGroup(
            2,
            5,
            0,
            group_id=GROUP,
            member_id="m",
            protocols=protocols("range"),
            session_timeout_ms=1,
        )
    )
    assert broker.reply(2) == JoinGroupResponse(
        ErrorCode.INVALID_SESSION_TIMEOUT, member_id="m"
    ).at_version(5)
    broker.step(OffsetCommit(3, 9, 0, group_id=None))
    assert broker.reply(3) == OffsetCommitResponse(())
    broker.step(DescribeGroups(4, 5, 0, groups=(None, GROUP)))
    assert [(g.group_id, g.error_code) for g in broker.reply(4).groups] == [
        (None, ErrorCode.INVALID_GROUP_ID),
        (GROUP, ErrorCode.NOT_COORDINATOR),
    ]
    # GroupCoordinatorService.deleteOffsets: an empty group id is refused before routing.
    broker.step(OffsetDelete(5, 0, 0, group_id=""))
    assert broker.reply(5) == OffsetDeleteResponse(ErrorCode.INVALID_GROUP_ID)


def test_describe_and_delete_split_by_partition():
    """Served, loading and unled partitions in one request; invalid ids first (Kafka's service order)."""
    broker = OneBroker()
    broker.lead(partition=0)
    broker.become(partition=1)
    broker.step(DescribeGroups(1, 5, 0, groups=(GROUP, OTHER, "b", None)))  # "b" is on partition 2
    assert partition_for("b", PARTITIONS) == 2
    assert [(g.group_id, g.error_code, g.group_state) for g in broker.reply(1).groups] == [
        (None, ErrorCode.INVALID_GROUP_ID, ""),
        (GROUP, ErrorCode.NONE, "Dead"),
        (OTHER, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ""),
        ("b", ErrorCode.NOT_COORDINATOR, ""),
    ]
    broker.step(DeleteGroups(2, 2, 0, groups_names=(GROUP, OTHER)))
    assert [(r.group_id, r.error_code) for r in broker.reply(2).results] == [
        (GROUP, ErrorCode.GROUP_ID_NOT_FOUND),
        (OTHER, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    ]


# -- writes wait for the high watermark (CF-6) ------------------------------------------------


def test_commit_acknowledged_only_after_replication():
    broker = OneBroker()
    broker.lead()
    commit = broker.commit(42)
    assert commit not in broker.replies
    [append] = broker.appends
    assert (append.partition, append.leader_epoch, append.offset) == (0, 1, 0)
    fetch = broker.fetch()
    assert (
        broker.reply(fetch).topics[0].partitions[0].committed_offset == -1
    )  # not committed: not visible
    broker.replicate(upto=0)  # nothing new committed
    assert commit not in broker.replies
    broker.replicate(upto=1)
    assert broker.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert broker.reply(broker.fetch()).topics[0].partitions[0].committed_offset == 42


def test_write_operations_without_records_wait_for_earlier_writes():
    """Kafka 4.0 (CoordinatorRuntime.append with no records): a heartbeat is answered once the
    writes before it are committed."""
    broker = OneBroker()
    broker.lead()
    member_id, generation = broker.stable_group()
    commit = broker.commit(7, generation_id=generation, member_id=member_id)
    heartbeat = broker.send(
        Heartbeat, group_id=GROUP, generation_id=generation, member_id=member_id
    )
    assert commit not in broker.replies and heartbeat not in broker.replies
    broker.replicate()
    assert broker.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert broker.reply(heartbeat).error_code == ErrorCode.NONE
    later = broker.send(Heartbeat, group_id=GROUP, generation_id=generation, member_id=member_id)
    assert broker.reply(later).error_code == ErrorCode.NONE  # nothing uncommitted: at once


def test_leadership_lost_before_commit_fails_with_not_coordinator():
    broker = OneBroker()
    broker.lead()
    member_id, generation = broker.stable_group()
    commit = broker.commit(7, generation_id=generation, member_id=member_id)
    heartbeat = broker.send(
        Heartbeat, group_id=GROUP, generation_id=generation, member_id=member_id
    )
    broker.resign()
    assert broker.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    assert broker.reply(heartbeat).error_code == ErrorCode.NOT_COORDINATOR
    assert broker.host.state(0) is None
    assert broker.reply(broker.fetch()).error_code == ErrorCode.NOT_COORDINATOR


@pytest.mark.parametrize(
    ("log_error", "client_error"),
    [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_refused_append_maps_the_error(log_error, client_error):
    broker = OneBroker()
    broker.lead()
    commit = broker.commit(3)
    [append] = broker.appends
    broker.logs[0].pop()  # the log refused it
    broker.step(AppendFailed(0, append.offset, log_error, broker.now_ms))
    assert broker.reply(commit).topics[0].partitions[0].error_code == client_error
    again = broker.commit(4)
    assert broker.appends[-1].offset == append.offset  # the failed offset is written again
    broker.replicate()
    assert broker.reply(again).topics[0].partitions[0].error_code == ErrorCode.NONE


# -- loading, resigning (CF-3, CF-4, CF-7) ---------------------------------------------------


def test_load_replays_the_log_and_serves_the_committed_generation():
    first = OneBroker(broker_id=1)
    first.lead()
    member_id, generation = first.stable_group()
    commit = first.commit(99, generation_id=generation, member_id=member_id)
    first.replicate()
    assert first.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NONE

    second = OneBroker(broker_id=2)
    second.logs = {p: list(log) for p, log in first.logs.items()}
    second.hw = dict(first.hw)
    second.become(epoch=2)
    assert second.host.state(0) is PartitionState.LOADING
    heartbeat = second.send(
        Heartbeat, group_id=GROUP, generation_id=generation, member_id=member_id
    )
    assert second.reply(heartbeat).error_code == ErrorCode.NONE  # the blind answer while loading
    second.load()
    assert second.host.state(0) is PartitionState.SERVING
    group = second.host.serving(0).group(GROUP)
    assert (str(group.state), group.generation_id) == ("Stable", generation)
    assert second.reply(second.fetch()).topics[0].partitions[0].committed_offset == 99


def test_parked_join_answered_not_coordinator_on_resign():
    broker = OneBroker()
    broker.lead()
    join = broker.join()
    assert join not in broker.replies  # parked for the initial rebalance delay
    broker.resign()
    assert broker.reply(join).error_code == ErrorCode.NOT_COORDINATOR


def test_epochs_decide_which_leadership_events_count():
    broker = OneBroker()
    broker.become(epoch=3)
    broker.step(BecomeCoordinator(0, 3, 0))  # the same epoch again: ignored, no second load
    assert broker.loads == [LoadPartition(0, 3)]
    broker.load()
    broker.step(ResignCoordinator(0, 3, 0))  # not newer than ours: ignored
    assert broker.host.state(0) is PartitionState.SERVING
    broker.step(BecomeCoordinator(0, 5, 0))  # re-elected while leading: keeps serving, no reload
    assert (broker.host.state(0), broker.host.hosted[0].leader_epoch, len(broker.loads)) == (
        PartitionState.SERVING,
        5,
        1,
    )
    broker.step(ResignCoordinator(0, None, 0))  # the partition was deleted
    assert broker.host.state(0) is None
    broker.step(LoadGroup(0, 5, (), 0, 0))  # a late load completion: ignored
    assert broker.host.state(0) is None


def test_timers_run_only_on_served_partitions():
    broker = OneBroker()
    broker.lead()
    broker.join()
    assert broker.host.next_deadline_ms() == 3_000
    broker.resign()
    assert broker.host.next_deadline_ms() is None


def test_leave_group_waits_for_its_write():
    broker = OneBroker()
    broker.lead()
    member_id, _ = broker.stable_group()
    leave = broker.send(LeaveGroup, group_id=GROUP, members=(MemberIdentity(member_id),))
    assert leave not in broker.replies
    broker.replicate()
    assert broker.reply(leave).members[0].error_code == ErrorCode.NONE


# -- Kafka's CoordinatorRuntimeTest load and unload cases, ported (CF-2, CF-3, CF-4, CF-7) ----
# apache/kafka 1eb7644349cb, coordinator-common/src/test/java/org/apache/kafka/coordinator/
# common/runtime/CoordinatorRuntimeTest.java. Kafka's context states map to the host's:
# none (contextOrThrow throws NotCoordinatorException) is no hosted partition, LOADING is
# Loading, ACTIVE is Serving, CLOSED is none again. A failed load (FAILED) is not modelled
# (spec/coordinator-failover.md), so testScheduleLoadingWithFailure and
# testScheduleLoadingAfterLoadingFailure have no port.


def test_schedule_loading():
    """Kafka: CoordinatorRuntimeTest.testScheduleLoading"""
    broker = OneBroker()
    assert broker.host.state(0) is None
    assert broker.reply(broker.fetch()).error_code == ErrorCode.NOT_COORDINATOR
    broker.become(epoch=0)
    assert broker.loads == [LoadPartition(0, 0)]
    assert (broker.host.state(0), broker.host.hosted[0].leader_epoch) == (PartitionState.LOADING, 0)
    assert broker.reply(broker.fetch()).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    broker.load()
    assert broker.host.state(0) is PartitionState.SERVING
    # onLoaded: the partition has a coordinator of its own, which answers.
    assert broker.host.serving(0) is not None
    assert broker.reply(broker.fetch()).error_code == ErrorCode.NONE


def test_schedule_loading_with_stale_partition_epoch():
    """Kafka: CoordinatorRuntimeTest.testScheduleLoadingWithStalePartitionEpoch"""
    broker = OneBroker()
    broker.become(epoch=10)
    assert (broker.host.state(0), broker.host.hosted[0].leader_epoch) == (
        PartitionState.LOADING,
        10,
    )
    broker.load()
    assert broker.host.state(0) is PartitionState.SERVING
    broker.step(BecomeCoordinator(0, 0, broker.now_ms))  # an older epoch: nothing happens
    assert (broker.host.state(0), broker.host.hosted[0].leader_epoch) == (
        PartitionState.SERVING,
        10,
    )
    assert broker.loads == [LoadPartition(0, 10)]


@pytest.mark.parametrize(
    "epoch", [11, None], ids=["testScheduleUnloading", "testScheduleUnloadingWithEmptyEpoch"]
)
def test_schedule_unloading(epoch):
    """Kafka: CoordinatorRuntimeTest.testScheduleUnloading, testScheduleUnloadingWithEmptyEpoch
    (no epoch: the partition was deleted)"""
    broker = OneBroker()
    broker.lead(epoch=10)
    join = broker.join()  # parked: onUnloaded must answer it
    broker.step(ResignCoordinator(0, epoch, broker.now_ms))
    assert broker.host.state(0) is None and broker.host.next_deadline_ms() is None
    assert broker.reply(join).error_code == ErrorCode.NOT_COORDINATOR
    assert broker.reply(broker.fetch()).error_code == ErrorCode.NOT_COORDINATOR


def test_schedule_unloading_when_context_doesnt_exist():
    """Kafka: CoordinatorRuntimeTest.testScheduleUnloadingWhenContextDoesntExist"""
    broker = OneBroker()
    assert broker.step(ResignCoordinator(0, 11, 0)) == []  # a follower that never led: skipped
    assert broker.host.state(0) is None
    assert broker.reply(broker.fetch()).error_code == ErrorCode.NOT_COORDINATOR


def test_schedule_unloading_with_stale_partition_epoch():
    """Kafka: CoordinatorRuntimeTest.testScheduleUnloadingWithStalePartitionEpoch"""
    broker = OneBroker()
    broker.lead(epoch=10)
    join = broker.join()
    broker.step(ResignCoordinator(0, 0, broker.now_ms))  # an older epoch: nothing happens
    assert (broker.host.state(0), broker.host.hosted[0].leader_epoch) == (
        PartitionState.SERVING,
        10,
    )
    assert join not in broker.replies  # the parked join still waits


@pytest.mark.parametrize(
    "write",
    [True, False],
    ids=["testScheduleWriteOpWhenInactive", "testScheduleReadOpWhenPartitionInactive"],
)
def test_schedule_operation_when_inactive(write):
    """Kafka: CoordinatorRuntimeTest.testScheduleWriteOpWhenInactive,
    testScheduleReadOpWhenPartitionInactive: a write (OffsetCommit) and a read (OffsetFetch)
    for a partition the broker does not coordinate fail with NOT_COORDINATOR."""
    broker = OneBroker()
    if write:
        response = broker.reply(broker.commit(5))
        assert response.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    else:
        assert broker.reply(broker.fetch()).error_code == ErrorCode.NOT_COORDINATOR
    assert broker.appends == []


def test_list_groups_failed_with_not_coordinator_exception():
    """Kafka: GroupCoordinatorServiceTest.testListGroupsFailedWithNotCoordinatorException: of
    three partitions, the two the broker serves answer with their groups; the one it does not
    lead is left out, and the answer is NONE."""
    broker = OneBroker()
    broker.lead(0)
    broker.lead(1)
    broker.stable_group()  # GROUP, on partition 0
    broker.commit(5, group_id=OTHER)  # a simple group on partition 1
    broker.replicate(1)
    broker.step(ListGroups("all", LATEST["ListGroups"], broker.now_ms))
    listed = broker.reply("all")
    assert listed.error_code == ErrorCode.NONE
    assert [(g.group_id, g.group_state) for g in listed.groups] == [
        (GROUP, "Stable"),
        (OTHER, "Empty"),
    ]


def test_describe_group_coordinator_load_in_progress():
    """Kafka: GroupCoordinatorServiceTest.testDescribeGroupCoordinatorLoadInProgress: one
    offsets partition, loading; the group is described with its id and the error only."""
    host = CoordinatorHost(1, offsets_partitions=1, config=kafka_test_config())
    host.handle(BecomeCoordinator(0, 0, 0))
    (reply,) = host.handle(DescribeGroups("d", LATEST["DescribeGroups"], 0, groups=(GROUP,)))
    assert reply.response == DescribeGroupsResponse(
        (DescribedGroup(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, GROUP, ""),)
    )


# -- misuse ---------------------------------------------------------------------------------


def test_misuse_raises_usage_error():
    broker = OneBroker()
    broker.lead()
    broker.commit(1)
    with pytest.raises(UsageError, match="high watermark 5 outside"):
        broker.step(HighWatermarkUpdated(0, 5, 0))
    with pytest.raises(UsageError, match="no pending append at offset 3"):
        broker.step(AppendFailed(0, 3, ErrorCode.NOT_LEADER_OR_FOLLOWER, 0))
    broker.become(partition=1, epoch=1)
    with pytest.raises(UsageError, match="loaded at leader epoch 2"):
        broker.step(LoadGroup(1, 2, (), 0, 0))
    broker.sleep(10)
    with pytest.raises(UsageError, match="before broker 1's time"):
        broker.step(Tick(0))
    with pytest.raises(UsageError, match="still awaiting its reply"):
        broker.step(OffsetCommit(1, 9, 10, group_id=GROUP))
    with pytest.raises(UsageError, match="high watermark 2 outside the log"):
        LoadGroup(0, 1, ((),), 2, 0)
    with pytest.raises(UsageError, match="not a host event"):
        broker.step(object())
    with pytest.raises(UsageError, match="at least one partition"):
        CoordinatorHost(1, 0)


def test_static_takeover_answered_once_its_write_is_committed():
    """GM-6's takeover in Stable writes the new member id first; the join waits for the HW."""
    broker = OneBroker()
    broker.lead()
    join = broker.join(version=5, group_instance_id="instance-1")
    broker.sleep(3_000)
    joined = broker.reply(join)
    sync = broker.send(
        SyncGroup,
        group_id=GROUP,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id="instance-1",
        protocol_type="consumer",
        protocol_name="range",
    )
    broker.replicate()
    assert broker.reply(sync).error_code == ErrorCode.NONE
    takeover = broker.join(version=5, group_instance_id="instance-1")
    assert takeover not in broker.replies
    broker.replicate()
    response = broker.reply(takeover)
    assert (response.error_code, response.generation_id) == (ErrorCode.NONE, joined.generation_id)
    assert response.member_id != joined.member_id


def test_stable_offset_fetch_waits_for_pending_commits():
    """OffsetFetch with require_stable (v7+) is a write operation in Kafka 4.0; a plain one reads at once."""
    broker = OneBroker()
    broker.lead()
    commit = broker.commit(8)
    stable = broker.send(
        OffsetFetch, 7, group_id=GROUP, topics=(FetchTopic("foo", (0,)),), require_stable=True
    )
    plain = broker.send(OffsetFetch, 7, group_id=GROUP, topics=(FetchTopic("foo", (0,)),))
    assert stable not in broker.replies
    assert broker.reply(plain).topics[0].partitions[0].committed_offset == -1
    broker.replicate()
    assert broker.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert (
        broker.reply(stable).topics[0].partitions[0].committed_offset == 8
    )  # it sees the pending commit


def test_stable_offset_fetch_reads_when_its_commits_are_committed_not_when_it_came():
    """Time passes while it waits: it is answered at the high watermark's advance (a cluster
    broker hit this: the coordinator refused the fetch as older than its clock)."""
    broker = OneBroker()
    broker.lead()
    broker.commit(8)
    stable = broker.send(
        OffsetFetch, 7, group_id=GROUP, topics=(FetchTopic("foo", (0,)),), require_stable=True
    )
    broker.sleep(200)
    broker.replicate()
    assert broker.reply(stable).topics[0].partitions[0].committed_offset == 8


def test_stable_offset_fetch_fails_with_its_partition():
    broker = OneBroker()
    broker.lead()
    broker.commit(8)
    stable = broker.send(
        OffsetFetch, 7, group_id=GROUP, topics=(FetchTopic("foo", (0,)),), require_stable=True
    )
    broker.resign()
    assert broker.reply(stable).error_code == ErrorCode.NOT_COORDINATOR


def test_offset_delete_acknowledged_only_after_replication():
    """GM-63 under CF-6: the offset is gone from OffsetFetch once the tombstone is committed."""
    broker = OneBroker()
    broker.lead()
    broker.commit(42)
    broker.replicate()
    topics = (OffsetDeleteTopic("foo", (OffsetDeletePartition(0),)),)
    delete = broker.send(OffsetDelete, group_id=GROUP, topics=topics)
    assert delete not in broker.replies
    assert broker.reply(broker.fetch()).topics[0].partitions[0].committed_offset == 42
    broker.replicate()
    assert broker.reply(delete).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert broker.reply(broker.fetch()).topics[0].partitions[0].committed_offset == -1


# -- consumer groups: the broker's topics reach every coordinator (CF-14) ----------------------

IMAGE = NewMetadataImage({"foo": 2}, 0, {"foo": "foo-id"})


def test_metadata_image_reaches_serving_and_later_loaded_coordinators():
    """Kafka 4.0 CoordinatorRuntime.onNewMetadataImage (active coordinators) and onLoaded."""
    broker = OneBroker()
    broker.lead(partition=0)
    broker.become(partition=1)  # loading when the image comes
    broker.step(IMAGE)
    assert dict(broker.host.serving(0).topics) == {"foo": 2}
    assert broker.host.serving(0).topic_ids == {"foo": "foo-id"}
    broker.load(partition=1)
    assert dict(broker.host.serving(1).topics) == {"foo": 2}
    broker.lead(partition=2)
    assert broker.host.serving(2).topic_ids == {"foo": "foo-id"}
    broker.now_ms = 5
    broker.step(NewMetadataImage({"foo": 2, "bar": 1}, 5, {"foo": "foo-id", "bar": "bar-id"}))
    assert all(dict(broker.host.serving(p).topics) == {"foo": 2, "bar": 1} for p in range(3))


def _cg_join(broker: OneBroker, member_id: str, group_id: str = GROUP, **fields):
    fields.setdefault("subscribed_topic_names", ("foo",))
    return broker.send(
        ConsumerGroupHeartbeat, 1, group_id=group_id, member_id=member_id, **CG_JOIN, **fields
    )


def test_consumer_group_heartbeat_is_answered_once_its_write_is_committed():
    broker = OneBroker()
    broker.lead()
    broker.step(IMAGE)
    join = _cg_join(broker, "m1")
    assert join not in broker.replies  # the new member's records wait for the high watermark
    broker.replicate()
    response = broker.reply(join)
    assert (response.error_code, response.member_epoch) == (ErrorCode.NONE, 1)
    assert [(t.topic_id, t.partitions) for t in response.assignment] == [("foo-id", (0, 1))]
    elsewhere = _cg_join(broker, "m2", group_id=OTHER)  # partition 1: not led here
    assert broker.reply(elsewhere) == ConsumerGroupHeartbeatResponse(ErrorCode.NOT_COORDINATOR)


def test_consumer_group_describe_split_by_partition():
    """Kafka 4.0 GroupCoordinatorService.consumerGroupDescribe: a blank id is answered
    INVALID_GROUP_ID with no id, first; then each partition's groups."""
    broker = OneBroker()
    broker.lead(partition=0)
    broker.become(partition=1)
    broker.step(IMAGE)
    _cg_join(broker, "m1")
    broker.replicate()
    broker.step(ConsumerGroupDescribe(9, 0, 0, group_ids=(GROUP, OTHER, "b", "")))
    assert [(g.group_id, g.error_code, g.group_state) for g in broker.reply(9).groups] == [
        (None, ErrorCode.INVALID_GROUP_ID, ""),
        (GROUP, ErrorCode.NONE, "Stable"),
        (OTHER, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ""),
        ("b", ErrorCode.NOT_COORDINATOR, ""),
    ]


def test_resolve_regular_expressions_goes_to_the_groups_coordinator():
    broker = OneBroker()
    broker.lead()
    broker.step(IMAGE)
    join = _cg_join(broker, "m1", subscribed_topic_names=None, subscribed_topic_regex="fo.*")
    broker.replicate()
    assert broker.reply(join).assignment == ()  # nothing resolved yet
    broker.step(ResolveRegularExpressions(GROUP, 0))
    broker.replicate()
    group = broker.host.serving(0).consumer_groups[GROUP]
    assert group.resolved_regexes == {"fo.*": frozenset({"foo"})}
    assert broker.step(ResolveRegularExpressions(OTHER, 0)) == []  # not served here: nothing


def test_list_groups_keeps_its_filters_on_every_partition():
    broker = OneBroker()
    broker.lead()
    broker.step(IMAGE)
    _cg_join(broker, "m1")
    broker.replicate()
    for request_id, types in ((20, ("classic",)), (21, ("Consumer",))):
        broker.step(ListGroups(request_id, 5, 0, types_filter=types))
    assert [g.group_id for g in broker.reply(20).groups] == []
    assert [(g.group_id, g.group_type) for g in broker.reply(21).groups] == [(GROUP, "consumer")]
