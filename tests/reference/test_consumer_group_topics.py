"""Topics known by id (CG-70), written from Kafka 4.0's ``GroupMetadataManager``
(``onNewMetadataImage`` asks the groups subscribed to a created, changed or deleted topic to
refresh their subscription metadata; the next heartbeat finds it changed and bumps the group
epoch) and ``ConsumerGroupMember.topicPartitionsFromMap`` (Describe names topics by the
image and leaves out those it no longer has)."""

from __future__ import annotations

from consumer_group_context import GROUP_ID, Context, assignment, owned

from coordspec.reference.group.consumer.state import STABLE, UNREVOKED_PARTITIONS
from coordspec.reference.group.requests import ConsumerGroupDescribe

JOIN = {"member_epoch": 0, "rebalance_timeout_ms": 5000, "topic_partitions": ()}


def joined(topics: dict[str, int], names: tuple[str, ...]) -> Context:
    context = Context(topics)
    response, _ = context.heartbeat(member_id="m1", subscribed_topic_names=names, **JOIN)
    assert response.member_epoch == 1
    return context


def test_deleted_topic_leaves_the_target():
    """A deleted topic's partitions leave the target at the next heartbeat, which bumps the
    group epoch; the member revokes them as any other partitions."""
    context = joined({"foo": 2, "bar": 1}, ("foo", "bar"))
    context.new_metadata_image({"foo": 2})
    response, _ = context.heartbeat(member_id="m1", member_epoch=1)
    group = context.group()
    assert (group.group_epoch, group.target["m1"]) == (2, assignment(foo=(0, 1)))
    m1 = group.members["m1"]
    assert (m1.state, m1.pending_revocation) == (UNREVOKED_PARTITIONS, assignment(bar=(0,)))
    response, _ = context.heartbeat(
        member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1))
    )
    assert response.member_epoch == 2
    assert context.group().members["m1"].assigned == assignment(foo=(0, 1))


def test_recreated_topic_is_a_new_topic():
    """A topic deleted and created again under its name has a new id: the member gives up the
    old topic's partitions before it gets the new one's."""
    context = joined({"foo": 2}, ("foo",))
    context.new_metadata_image({})
    context.new_metadata_image({"foo": 2}, topic_ids={"foo": "foo~2"})
    context.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1)))
    group = context.group()
    assert group.target["m1"] == {("foo~2", 0), ("foo~2", 1)}
    assert group.members["m1"].pending_revocation == assignment(foo=(0, 1))
    response, _ = context.heartbeat(member_id="m1", member_epoch=1, topic_partitions=())
    assert response.member_epoch == 2
    assert context.group().members["m1"].assigned == {("foo~2", 0), ("foo~2", 1)}


def test_more_partitions_bump_the_epoch():
    context = joined({"foo": 2}, ("foo",))
    context.new_metadata_image({"foo": 3})
    response, _ = context.heartbeat(member_id="m1", member_epoch=1)
    assert response.member_epoch == 2
    assert context.group().members["m1"].assigned == assignment(foo=(0, 1, 2))


def test_a_topic_nobody_subscribes_to_changes_nothing():
    context = joined({"foo": 2}, ("foo",))
    context.new_metadata_image({"foo": 2, "qux": 4})
    response, records = context.heartbeat(member_id="m1", member_epoch=1)
    assert (response.member_epoch, records) == (1, [])
    assert context.group().members["m1"].state == STABLE


def test_a_subscribed_topic_created_later_is_assigned():
    context = joined({"foo": 2}, ("foo", "bar"))
    context.new_metadata_image({"foo": 2, "bar": 1})
    response, _ = context.heartbeat(member_id="m1", member_epoch=1)
    assert response.member_epoch == 2
    assert context.group().members["m1"].assigned == assignment(foo=(0, 1), bar=(0,))


def test_describe_leaves_out_a_deleted_topic():
    context = joined({"foo": 2, "bar": 1}, ("foo", "bar"))
    context.new_metadata_image({"foo": 2})
    effects = context.coordinator.handle(
        ConsumerGroupDescribe(request_id="d", api_version=0, now_ms=0, group_ids=(GROUP_ID,))
    )
    (described,) = effects[0].response.groups
    (shown,) = described.members[0].assignment
    assert (shown.topic_id, shown.topic_name, shown.partitions) == ("foo", "foo", (0, 1))
