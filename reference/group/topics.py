"""Partitions that do not exist, as Kafka's request layer answers them before the coordinator.

Kafka 4.0's ``KafkaApis.handleOffsetCommitRequest`` answers UNKNOWN_TOPIC_OR_PARTITION for
each partition of a topic the broker does not have, and for each partition a topic it has
does not have, and gives the coordinator only the rest (nothing at all if nothing is left:
the group is then neither created nor touched). The answer is built as
``OffsetCommitResponse.Builder`` does: the refused partitions first, grouped by topic in the
request's order, then the coordinator's topics merged in (a topic already there gets its
partitions appended). Spec rule GM-56.

The broker's request layer and the reference (``GroupCoordinator(topics=...)``) both use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    OffsetCommitResponse,
)


class _Partition(Protocol):
    @property
    def partition_index(self) -> int: ...


class _Topic(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def partitions(self) -> Sequence[_Partition]: ...


Topic = TypeVar("Topic", bound=_Topic)  # a request's topic: the reference's or the wire's


def split_known(
    topics: Sequence[Topic], partition_count: Callable[[str], int | None]
) -> tuple[tuple[Topic, ...], tuple[CommitTopicResponse, ...]]:
    """The topics with the partitions that exist (``partition_count``: a topic's, or None when
    the broker has no such topic), and the answers refusing the others."""
    kept: list[Topic] = []
    refused: dict[str, list[CommitPartitionResponse]] = {}  # a topic named twice is one answer
    for topic in topics:
        count = partition_count(topic.name) or 0
        known = [p for p in topic.partitions if 0 <= p.partition_index < count]
        if len(known) < len(topic.partitions):
            refused.setdefault(topic.name, []).extend(
                CommitPartitionResponse(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                for p in topic.partitions
                if not 0 <= p.partition_index < count
            )
            if known:
                kept.append(dataclasses.replace(topic, partitions=tuple(known)))  # type: ignore[type-var]
        else:
            kept.append(topic)
    return tuple(kept), tuple(CommitTopicResponse(n, tuple(ps)) for n, ps in refused.items())


def merged(
    refused: tuple[CommitTopicResponse, ...], answer: OffsetCommitResponse
) -> OffsetCommitResponse:
    """The refused partitions' answers with the coordinator's ``answer`` merged in."""
    topics = list(refused)
    at = {t.name: i for i, t in enumerate(topics)}
    for topic in answer.topics:
        if topic.name in at:
            i = at[topic.name]
            topics[i] = CommitTopicResponse(topic.name, topics[i].partitions + topic.partitions)
        else:
            at[topic.name] = len(topics)
            topics.append(topic)
    return OffsetCommitResponse(tuple(topics))
