"""Consumer groups beside classic ones in the one coordinator: the records and the loader
(CG-40, CG-41), a failed write (CG-40), the answers across the two kinds of group
(CG-3, CG-36..CG-38), ListGroups and DescribeGroups (CG-30), and the invariants' mutants.

Ported from Kafka's GroupMetadataManagerTest, commit 1eb7644349cb07139d6a3c1ad1986979647cac99:
testConsumerGroupHeartbeatWithNonEmptyClassicGroup, testConsumerGroupHeartbeatWithEmptyClassicGroup,
testOnLoaded, testListGroups (its consumer-group part) and testDescribeGroups' Dead answer
for a group of the other kind. The online migration between the kinds
(testConsumerGroupHeartbeatWithStableClassicGroup and the classic-protocol members of a
consumer group) is not modelled: spec/consumer-group.md says what the reference answers.
"""

from __future__ import annotations

import dataclasses

import pytest
from consumer_group_context import (
    GROUP_ID,
    Context,
    assignment,
    current_record,
    epoch_record,
    owned,
    prepared,
    subscription_record,
)
from driver import Driver

from coordspec.reference.errors import ErrorCode, InvariantViolation
from coordspec.reference.group.consumer import invariants, reconcile
from coordspec.reference.group.consumer import offsets as consumer_offsets
from coordspec.reference.group.consumer.state import UNREVOKED_PARTITIONS, ConsumerMember
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.records import GroupMetadataKey, Record
from coordspec.reference.group.requests import (
    AppendCompleted,
    CommitPartition,
    CommitTopic,
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    DescribeGroups,
    FailNextWrite,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    LoadGroups,
    MemberIdentity,
    OffsetCommit,
    Protocol,
    SyncGroup,
    UnloadGroups,
)
from coordspec.reference.group.responses import (
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
)

JOIN = {"rebalance_timeout_ms": 5000, "topic_partitions": ()}


def test_loading_the_written_records_rebuilds_the_group():
    """Kafka: testOnLoaded. CG-41: members, epochs, targets and states come back; sessions
    restart, and a member still revoking gets its rebalance timer again."""
    ctx = Context({"foo": 3})
    with prepared({"m1": assignment(foo=(0, 1, 2))}):
        ctx.heartbeat(member_id="m1", subscribed_topic_names=("foo",), **JOIN)
    with prepared({"m1": assignment(foo=(0, 1)), "m2": assignment(foo=(2,))}):
        ctx.heartbeat(member_id="m2", instance_id="i2", subscribed_topic_names=("foo",), **JOIN)
    ctx.heartbeat(member_id="m1", member_epoch=1)
    before = ctx.group()
    assert before.members["m1"].state == UNREVOKED_PARTITIONS

    loaded = Context({"foo": 3}, ctx.log, now_ms=1000)
    after = loaded.group()
    assert dataclasses.replace(after, revoking_epochs={}) == dataclasses.replace(
        before, revoking_epochs={}
    )
    assert after.state == "Reconciling"
    assert loaded.session_deadline("m2") == 1000 + 45000
    assert loaded.rebalance_deadline("m1") == 1000 + 5000
    # The loaded group goes on: m1 revokes and m2 gets foo-2.
    loaded.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1)))
    response, _ = loaded.heartbeat(member_id="m2", instance_id="i2", member_epoch=2)
    assert response.assignment == owned(foo=(2,))


def test_a_failed_write_leaves_the_group_as_it_was():
    """CG-40: the heartbeat is answered with the write's error, mapped as Kafka maps it, and
    the group is as before (Kafka reverts its snapshot)."""
    ctx = Context({"foo": 3})
    ctx.heartbeat(member_id="m1", subscribed_topic_names=("foo",), **JOIN)
    before = ctx.group().copy()
    ctx.coordinator.handle(FailNextWrite(ErrorCode.NOT_LEADER_OR_FOLLOWER, now_ms=0))
    response, _ = ctx.heartbeat(member_id="m2", subscribed_topic_names=("foo",), **JOIN)
    assert response.error_code == ErrorCode.NOT_COORDINATOR
    assert ctx.group() == before


def test_the_answer_waits_for_the_write():
    """CG-40: with a driver that owns the log, the answer comes with AppendCompleted."""
    coordinator = GroupCoordinator(topics={"foo": 1}, complete_appends=False)
    effects = coordinator.handle(
        ConsumerGroupHeartbeat(
            1, 1, 0, group_id="g", member_id="m", subscribed_topic_names=("foo",), **JOIN
        )
    )
    (append,) = effects
    assert isinstance(append, AppendRecords)
    (reply,) = coordinator.handle(AppendCompleted(append.append_id, now_ms=1))
    assert isinstance(reply, Reply) and reply.response.member_epoch == 1


def test_consumer_group_heartbeat_with_non_empty_classic_group():
    """Kafka: testConsumerGroupHeartbeatWithNonEmptyClassicGroup (CG-3)."""
    d = Driver()
    d.join(group_id=GROUP_ID)  # a member joins: the classic group has members
    coordinator = d.coordinator
    effects = coordinator.handle(
        ConsumerGroupHeartbeat(
            "cg",
            1,
            d.now_ms,
            group_id=GROUP_ID,
            member_id="m",
            subscribed_topic_names=("foo",),
            **JOIN,
        )
    )
    (reply,) = [e for e in effects if isinstance(e, Reply) and e.request_id == "cg"]
    assert reply.response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert GROUP_ID not in coordinator.consumer_groups


def test_consumer_group_heartbeat_with_empty_classic_group():
    """Kafka: testConsumerGroupHeartbeatWithEmptyClassicGroup (CG-3): the empty classic group
    is deleted, with its tombstone, and the consumer group takes the id."""
    coordinator = GroupCoordinator(topics={"foo": 1})
    coordinator.handle(LoadGroups((), now_ms=0))
    group = coordinator.create_group(GROUP_ID)
    group.in_log = True
    effects = coordinator.handle(
        ConsumerGroupHeartbeat(
            1, 1, 0, group_id=GROUP_ID, member_id="m", subscribed_topic_names=("foo",), **JOIN
        )
    )
    records = [r for e in effects if isinstance(e, AppendRecords) for r in e.records]
    assert records[0] == Record(GroupMetadataKey(GROUP_ID), None)
    assert GROUP_ID not in coordinator.groups
    assert coordinator.consumer_groups[GROUP_ID].group_epoch == 1


def test_a_join_takes_an_empty_classic_group_with_its_offsets():
    """CG-3: a simple consumer's commit makes an Empty classic group; a join takes its id and
    keeps its offsets, also through a load (Kafka keeps offsets by group id: the classic
    group's tombstone deletes the group only). librdkafka's 0029_assign_offset commits
    after assign() and then subscribes under the same group id."""
    ctx = Context({"foo": 1})
    commit = OffsetCommit(20, 9, 0, group_id=GROUP_ID, topics=COMMIT_FOO_0)
    effects = ctx.coordinator.handle(commit)
    (reply,) = [e for e in effects if isinstance(e, Reply)]
    assert reply.response.topics[0].partitions[0].error_code == ErrorCode.NONE
    log = [r for e in effects if isinstance(e, AppendRecords) for r in e.records]
    response, written = ctx.heartbeat(member_id="m", subscribed_topic_names=("foo",), **JOIN)
    assert response.error_code == ErrorCode.NONE and response.member_epoch == 1
    assert written[0] == Record(GroupMetadataKey(GROUP_ID), None)
    assert GROUP_ID not in ctx.coordinator.groups
    assert {k: v.offset for k, v in ctx.group().store.offsets.items()} == {("foo", 0): 1}

    loaded = Context({"foo": 1}, [*log, *written])
    assert GROUP_ID not in loaded.coordinator.groups
    assert {k: v.offset for k, v in loaded.group().store.offsets.items()} == {("foo", 0): 1}


def classic_request(ctx: Context, request) -> object:
    (reply,) = [e for e in ctx.coordinator.handle(request) if isinstance(e, Reply)]
    return reply.response


def test_classic_requests_on_a_consumer_group():
    """CG-37: SyncGroup and Heartbeat find no classic member in a consumer group; CG-36: a
    JoinGroup to a consumer group with members is refused (migration not modelled)."""
    ctx = Context({"foo": 1})
    ctx.heartbeat(member_id="m", instance_id="i", subscribed_topic_names=("foo",), **JOIN)
    sync = SyncGroup(10, 5, 0, group_id=GROUP_ID, generation_id=1, member_id="x")
    beat = Heartbeat(
        11, 4, 0, group_id=GROUP_ID, generation_id=1, member_id="x", group_instance_id="i"
    )
    join = JoinGroup(12, 9, 0, group_id=GROUP_ID, member_id="", protocols=(Protocol("range"),))
    assert classic_request(ctx, sync).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert classic_request(ctx, beat).error_code == ErrorCode.FENCED_INSTANCE_ID
    assert classic_request(ctx, join).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_leave_group_removes_consumer_members():
    """CG-38: LeaveGroup on a consumer group removes the named members, one epoch bump."""
    ctx = Context({"foo": 2})
    ctx.heartbeat(member_id="m1", subscribed_topic_names=("foo",), **JOIN)
    ctx.heartbeat(member_id="m2", instance_id="i2", subscribed_topic_names=("foo",), **JOIN)
    epoch = ctx.group().group_epoch
    leave = LeaveGroup(
        20,
        5,
        0,
        group_id=GROUP_ID,
        members=(MemberIdentity("m1"), MemberIdentity("", "i2"), MemberIdentity("nobody")),
    )
    response = classic_request(ctx, leave)
    assert [m.error_code for m in response.members] == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert (ctx.group().members, ctx.group().group_epoch) == ({}, epoch + 1)


def test_join_group_takes_an_empty_consumer_group_id():
    """CG-36: a classic join to an Empty consumer group deletes it and creates a classic group."""
    ctx = Context({"foo": 1})
    ctx.heartbeat(member_id="m", subscribed_topic_names=("foo",), **JOIN)
    ctx.heartbeat(member_id="m", member_epoch=-1)
    join = JoinGroup(30, 3, 0, group_id=GROUP_ID, member_id="", protocols=(Protocol("range"),))
    ctx.coordinator.handle(join)
    assert GROUP_ID not in ctx.coordinator.consumer_groups
    assert GROUP_ID in ctx.coordinator.groups


def test_list_and_describe_groups():
    """CG-30: ListGroups lists a consumer group with its state; DescribeGroups (the classic
    API) answers Dead for it, as Kafka does for a group of the other kind."""
    ctx = Context({"foo": 2})
    ctx.heartbeat(member_id="m1", subscribed_topic_names=("foo",), **JOIN)
    ctx.heartbeat(member_id="m2", subscribed_topic_names=("foo",), **JOIN)
    listed = classic_request(ctx, ListGroups(40, 4, 0))
    assert [(g.group_id, g.protocol_type, g.group_state) for g in listed.groups] == [
        (GROUP_ID, "consumer", "Reconciling")
    ]
    stable = classic_request(ctx, ListGroups(41, 4, 0, states_filter=("stable",)))
    assert stable.groups == ()
    ctx.coordinator.create_group("classic").in_log = True
    typed = classic_request(ctx, ListGroups(43, 5, 0, types_filter=("Consumer",)))
    assert [(g.group_id, g.group_type) for g in typed.groups] == [(GROUP_ID, "consumer")]
    both = classic_request(ctx, ListGroups(44, 5, 0))
    assert [(g.group_id, g.group_type) for g in both.groups] == [
        ("classic", "classic"),
        (GROUP_ID, "consumer"),
    ]
    unknown = classic_request(ctx, ListGroups(45, 5, 0, types_filter=("share-ish",)))
    assert unknown.groups == ()
    described = classic_request(ctx, DescribeGroups(42, 5, 0, groups=(GROUP_ID,)))
    assert described.groups[0].group_state == "Dead"


COMMIT_FOO_0 = (CommitTopic("foo", (CommitPartition(0, 1),)),)


def _mutant_partition_given_before_release(monkeypatch):
    original = reconcile._next

    def greedy(member, member_epoch, target_epoch, target, partition_epoch, owned):
        return original(member, member_epoch, target_epoch, target, lambda p: -1, owned)

    monkeypatch.setattr(reconcile, "_next", greedy)


def _mutant_member_epoch_ahead(monkeypatch):
    original = reconcile._updated

    def ahead(member, state, epoch, assigned, revoking):
        return original(member, state, epoch + 1, assigned, revoking)

    monkeypatch.setattr(reconcile, "_updated", ahead)


def _mutant_commit_without_epoch_check(monkeypatch):
    monkeypatch.setattr(consumer_offsets, "validate_commit", lambda group, req: None)


MUTANTS = {
    "AtMostOneOwnerPerPartition": _mutant_partition_given_before_release,
    "MemberEpochNotAheadOfGroup": _mutant_member_epoch_ahead,
    "NoStaleMemberEpochCommit": _mutant_commit_without_epoch_check,
}


def test_every_consumer_invariant_has_a_mutant():
    assert MUTANTS.keys() == invariants.INVARIANTS.keys()


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_breaks_its_invariant(name, monkeypatch):
    MUTANTS[name](monkeypatch)
    with pytest.raises(InvariantViolation) as caught:
        ctx = Context({"foo": 2})
        ctx.heartbeat(member_id="m1", subscribed_topic_names=("foo",), **JOIN)
        ctx.heartbeat(member_id="m2", subscribed_topic_names=("foo",), **JOIN)
        ctx.heartbeat(member_id="m1", member_epoch=1)
        stale = OffsetCommit(
            60, 9, 0, group_id=GROUP_ID, member_id="m1", generation_id=0, topics=COMMIT_FOO_0
        )
        assert classic_request(ctx, stale).topics[0].partitions[0].error_code == (
            ErrorCode.STALE_MEMBER_EPOCH
        )
    assert caught.value.invariant == name


def describe(ctx: Context, *group_ids: str) -> tuple:
    response = classic_request(ctx, ConsumerGroupDescribe(50, 0, 0, group_ids=group_ids))
    return response.groups


def test_consumer_group_describe_no_errors():
    """Kafka: testConsumerGroupDescribeNoErrors (CG-50). Kafka's test configures only the
    "range" assignor, so an Empty group names it; here the default is "uniform"."""
    m = ConsumerMember(
        "member-id", subscribed_topic_names=("topicName",), server_assignor="assignorName"
    )
    records = [
        epoch_record("group-id-1", 10),
        subscription_record("group-id-2", m),
        epoch_record("group-id-2", 10),
        current_record("group-id-2", m),
    ]
    ctx = Context({}, records)
    assert describe(ctx, "group-id-1", "group-id-2") == (
        DescribedConsumerGroup(
            ErrorCode.NONE, "group-id-1", "Empty", group_epoch=10, assignor_name="uniform"
        ),
        DescribedConsumerGroup(
            ErrorCode.NONE,
            "group-id-2",
            "Assigning",
            group_epoch=10,
            assignor_name="assignorName",
            members=(
                DescribedConsumerMember(
                    "member-id", None, None, 0, "", "", ("topicName",), None, (), ()
                ),
            ),
        ),
    )


def test_consumer_group_describe_with_errors():
    """Kafka: testConsumerGroupDescribeWithErrors, and GroupCoordinatorServiceTest's
    invalid group id: a blank id is INVALID_GROUP_ID, a classic group's id is not found."""
    ctx = Context({"foo": 1})
    ctx.coordinator.create_group("classic").in_log = True
    assert describe(ctx, "groupId", "", "classic") == (
        DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, "groupId"),
        DescribedConsumerGroup(ErrorCode.INVALID_GROUP_ID, None),
        DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, "classic"),
    )


def test_consumer_group_describe_shows_assignment_and_target():
    """CG-50: each member's assignment and target, topics named."""
    ctx = Context({"foo": 2})
    ctx.heartbeat(
        member_id="m1", instance_id="i1", rack_id="r", subscribed_topic_names=("foo",), **JOIN
    )
    ctx.heartbeat(member_id="m2", subscribed_topic_names=("foo",), **JOIN)
    (group,) = describe(ctx, GROUP_ID)
    m1, m2 = group.members
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Reconciling", 2, 2)
    assert (m1.instance_id, m1.rack_id, m1.member_epoch) == ("i1", "r", 1)
    assert m1.assignment == (DescribedTopicPartitions("foo", "foo", (0, 1)),)
    assert m1.target_assignment == (DescribedTopicPartitions("foo", "foo", (0,)),)
    assert (m2.assignment, m2.target_assignment) == (
        (),
        (DescribedTopicPartitions("foo", "foo", (1,)),),
    )


def test_a_write_failing_after_the_unload_brings_nothing_back():
    """CG-40: once the partition is unloaded, a heartbeat's failed write restores no group."""
    coordinator = GroupCoordinator(topics={"foo": 1}, complete_appends=False)
    coordinator.handle(LoadGroups((), now_ms=0))
    (append,) = coordinator.handle(
        ConsumerGroupHeartbeat(
            1, 1, 0, group_id="g", member_id="m", subscribed_topic_names=("foo",), **JOIN
        )
    )
    coordinator.handle(UnloadGroups(now_ms=1))
    (reply,) = coordinator.handle(
        AppendCompleted(append.append_id, now_ms=2, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    )
    assert reply.response.error_code == ErrorCode.NOT_COORDINATOR
    assert coordinator.consumer_groups == {}
