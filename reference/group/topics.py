"""Partitions that do not exist, as Kafka's request layer answers them before the coordinator.

Kafka 4.0's ``KafkaApis`` (``handleOffsetCommitRequest``, ``handleTxnOffsetCommitRequest``,
``handleOffsetDeleteRequest``)
answers UNKNOWN_TOPIC_OR_PARTITION for each partition of a topic the broker does not have,
and for each partition a topic it has does not have, and gives the coordinator only the rest.
An (Txn)OffsetCommit with nothing left never reaches the coordinator (the group is then neither
created nor touched); an OffsetDelete always does, so its group errors still come back. The
answer is built as the responses' ``Builder`` does: the refused partitions first, grouped by
topic in the request's order, then the coordinator's topics merged in (a topic already there
gets its partitions appended); an OffsetDelete answered with a top-level error is that answer
alone. Spec rule GM-56.

The broker's request layer and the reference (``GroupCoordinator(topics=...)``) both use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.requests import OffsetCommit, OffsetDelete, Request, TxnOffsetCommit
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    OffsetCommitResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteResponse,
    OffsetDeleteTopicResponse,
    TxnOffsetCommitResponse,
)

CommitResponse = OffsetCommitResponse | TxnOffsetCommitResponse

UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class _Partition(Protocol):
    @property
    def partition_index(self) -> int: ...


class _Topic(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def partitions(self) -> Sequence[_Partition]: ...


Topic = TypeVar("Topic", bound=_Topic)  # a request's topic: the reference's or the wire's
Refused = tuple[tuple[str, tuple[int, ...]], ...]  # (topic, partition indexes), request order


def split_known(
    topics: Sequence[Topic], partition_count: Callable[[str], int | None]
) -> tuple[tuple[Topic, ...], Refused]:
    """The topics with the partitions that exist (``partition_count``: a topic's, or None when
    the broker has no such topic), and the partitions that do not."""
    kept: list[Topic] = []
    refused: dict[str, list[int]] = {}  # a topic named twice is one answer
    for topic in topics:
        count = partition_count(topic.name) or 0
        known = [p for p in topic.partitions if 0 <= p.partition_index < count]
        if len(known) < len(topic.partitions):
            refused.setdefault(topic.name, []).extend(
                p.partition_index for p in topic.partitions if not 0 <= p.partition_index < count
            )
            if known:
                kept.append(dataclasses.replace(topic, partitions=tuple(known)))  # type: ignore[type-var]
        else:
            kept.append(topic)
    return tuple(kept), tuple((name, tuple(ps)) for name, ps in refused.items())


def reaching_coordinator(
    req: Request, topics: Mapping[str, int]
) -> tuple[Request | None, Refused, CommitResponse | None]:
    """What of a request reaches the coordinator, the partitions refused, and the whole
    answer when nothing is left of a (Txn)OffsetCommit (the request is then None)."""
    if not isinstance(req, (OffsetCommit, TxnOffsetCommit, OffsetDelete)):
        return req, (), None
    kept, refused = split_known(req.topics, topics.get)
    if not refused:
        return req, (), None
    if not kept and not isinstance(req, OffsetDelete):
        response = (
            TxnOffsetCommitResponse if isinstance(req, TxnOffsetCommit) else OffsetCommitResponse
        )
        return None, refused, commit_refused(refused, response)
    return dataclasses.replace(req, topics=kept), refused, None  # type: ignore[arg-type]


def commit_refused(
    refused: Refused, response: type[CommitResponse] = OffsetCommitResponse
) -> CommitResponse:
    """The (Txn)OffsetCommit answer for partitions that do not exist, when nothing else is left."""
    return response(
        tuple(
            CommitTopicResponse(name, tuple(CommitPartitionResponse(p, UNKNOWN) for p in ps))
            for name, ps in refused
        )
    )


def merged(
    refused: Refused, answer: CommitResponse | OffsetDeleteResponse
) -> CommitResponse | OffsetDeleteResponse:
    """The coordinator's ``answer`` with the refused partitions' answers before it."""
    if isinstance(answer, (OffsetCommitResponse, TxnOffsetCommitResponse)):
        return type(answer)(
            _merge(commit_refused(refused).topics, answer.topics, CommitTopicResponse)
        )
    if answer.error_code != ErrorCode.NONE:
        return answer
    ours = tuple(
        OffsetDeleteTopicResponse(
            name, tuple(OffsetDeletePartitionResponse(p, UNKNOWN) for p in ps)
        )
        for name, ps in refused
    )
    return OffsetDeleteResponse(
        ErrorCode.NONE, _merge(ours, answer.topics, OffsetDeleteTopicResponse)
    )


Answer = TypeVar("Answer", CommitTopicResponse, OffsetDeleteTopicResponse)


def _merge(
    first: tuple[Answer, ...], then: tuple[Answer, ...], make: Callable[..., Answer]
) -> tuple[Answer, ...]:
    topics = list(first)
    at = {t.name: i for i, t in enumerate(topics)}
    for topic in then:
        if topic.name in at:
            i = at[topic.name]
            topics[i] = make(topic.name, topics[i].partitions + topic.partitions)
        else:
            at[topic.name] = len(topics)
            topics.append(topic)
    return tuple(topics)
