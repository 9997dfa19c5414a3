"""ConsumerGroupDescribe (API 69, v0): a consumer group in full (CG-50), as Kafka 4.0's
``GroupCoordinatorService.consumerGroupDescribe`` and ``ConsumerGroup.asDescribedGroup``."""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.consumer.assignor import preferred_assignor
from coordspec.reference.group.consumer.state import (
    ConsumerGroup,
    Partitions,
    to_topic_partitions,
)
from coordspec.reference.group.context import Context
from coordspec.reference.group.requests import ConsumerGroupDescribe
from coordspec.reference.group.responses import (
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
)


def consumer_group_describe(c: Context, req: ConsumerGroupDescribe) -> None:
    c.reply(
        req,
        ConsumerGroupDescribeResponse(
            tuple(_describe(c.consumer_groups.get(g), g, _names(c)) for g in req.group_ids)
        ),
    )


def _names(c: Context) -> dict[str, str] | None:
    """Each topic's name by id; None without a metadata image (then ids are names)."""
    if c.topics is None:
        return None
    return {topic_id: name for name, topic_id in c.topic_ids.items()}


def _describe(
    group: ConsumerGroup | None, group_id: str, names: dict[str, str] | None
) -> DescribedConsumerGroup:
    """A blank id is INVALID_GROUP_ID (and no id); an id of no consumer group, a classic
    one's included, is GROUP_ID_NOT_FOUND."""
    if group_id == "":
        return DescribedConsumerGroup(ErrorCode.INVALID_GROUP_ID, None)
    if group is None:
        return DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, group_id)
    return DescribedConsumerGroup(
        ErrorCode.NONE,
        group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=preferred_assignor(group.members),
        members=tuple(
            DescribedConsumerMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_partitions(m.assigned, names),
                target_assignment=_partitions(group.target.get(m.member_id, frozenset()), names),
            )
            for m in group.members.values()
        ),
    )


def _partitions(
    partitions: Partitions, names: dict[str, str] | None
) -> tuple[DescribedTopicPartitions, ...]:
    """CG-70: named as the metadata image names them; a topic it no longer has is left out
    (ConsumerGroupMember.topicPartitionsFromMap)."""
    if names is None:
        return tuple(
            DescribedTopicPartitions(t.topic_id, t.topic_id, t.partitions)
            for t in to_topic_partitions(partitions)
        )
    return tuple(
        DescribedTopicPartitions(t.topic_id, names[t.topic_id], t.partitions)
        for t in to_topic_partitions(partitions)
        if t.topic_id in names
    )
