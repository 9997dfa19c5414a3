"""DeleteTopics (20): topics and their logs removed; by name (v1-v5), by name or topic id (v6).

Each topic of the request is screened as ZooKeeper-mode Kafka 3.9 screens it
(KafkaApis.handleDeleteTopicsRequest): a name and an id both given fail the whole request
with INVALID_REQUEST, an id that names no topic gets UNKNOWN_TOPIC_ID, a topic not in the
broker's metadata UNKNOWN_TOPIC_OR_PARTITION. As KRaft's controller (ControllerApis), a
name given twice, or no name and no id, gets INVALID_REQUEST. Kafka lets an authorised
client delete ``__consumer_offsets``; here it gets TOPIC_AUTHORIZATION_FAILED, the answer
of a Kafka whose authorizer denies it, because the group coordinator's committed offsets
live in it (Kafka would recreate it empty; CF-21: no committed offset is lost).

The single broker deletes at once and answers NONE; the cluster's controller marks the
topics and waits for the deletion (:mod:`coordspec.broker.cluster.delete_topics`).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.log.topics import OFFSETS_TOPIC

NONE, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT = 0, 3, 7
TOPIC_AUTHORIZATION_FAILED, NOT_CONTROLLER, INVALID_REQUEST, UNKNOWN_TOPIC_ID = 29, 41, 42, 100
ZERO_ID = uuid.UUID(int=0)


def answer(
    name: str | None, topic_id: uuid.UUID, error: int, message: str | None = None
) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": error, "error_message": message}


def requested(body: Any) -> list[tuple[str | None, uuid.UUID]]:
    """(name, topic id) of each topic asked for; the zero id where only a name is given."""
    if hasattr(body, "topic_names"):  # v1-v5
        return [(name, ZERO_ID) for name in body.topic_names]
    return [(t.name, t.topic_id or ZERO_ID) for t in body.topics]


def screen(
    asked: list[tuple[str | None, uuid.UUID]],
    name_of: Callable[[uuid.UUID], str | None],
    exists: Callable[[str], bool],
) -> list[dict[str, Any]]:
    """Each topic's answer: an error, or NONE for a topic to delete (``name`` set)."""
    if any(name is not None and topic_id != ZERO_ID for name, topic_id in asked):
        message = "Topic name and topic ID can not both be specified."
        return [answer(name, topic_id, INVALID_REQUEST, message) for name, topic_id in asked]
    resolved = [(name_of(i) if i != ZERO_ID else n, i) for n, i in asked]
    counts = Counter(name for name, _ in resolved)
    answers = []
    for (given, topic_id), (name, _) in zip(asked, resolved, strict=True):
        if given is None and topic_id == ZERO_ID:
            error, message = INVALID_REQUEST, "Neither topic name nor id were specified."
        elif name is None:
            error, message = UNKNOWN_TOPIC_ID, None
        elif counts[name] > 1:
            error, message = INVALID_REQUEST, "Duplicate topic name."
        elif name == OFFSETS_TOPIC:
            error = TOPIC_AUTHORIZATION_FAILED
            message = f"{OFFSETS_TOPIC} holds the groups' committed offsets; it is not deleted"
        elif not exists(name):
            error, message = UNKNOWN_TOPIC_OR_PARTITION, None
        else:
            error, message = NONE, None
        answers.append(answer(name, topic_id, error, message))
    return answers


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    ids = {ctx.topics.entry(t).topic_id: t for t in ctx.topics.names()}
    answers = screen(requested(body), ids.get, ctx.topics.__contains__)
    for deleted in (a for a in answers if a["error_code"] == NONE):
        ctx.topics.delete(deleted["name"])
    return {"responses": answers}
