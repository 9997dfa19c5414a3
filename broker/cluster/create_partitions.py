"""CreatePartitions (37) on the cluster, as ZooKeeper-mode Kafka 3.9 serves it.

Only the active controller accepts it (KafkaApis.handleCreatePartitionsRequest): any other
broker answers NOT_CONTROLLER. A topic queued for deletion gets INVALID_TOPIC_EXCEPTION, one
being reassigned REASSIGNMENT_IN_PROGRESS; the others are screened and assigned as the
single broker's (:func:`coordspec.broker.apis.create_partitions.new_partitions`, over the
registered brokers) and their assignment znode rewritten with the new partitions
(ZkAdminManager.createPartitions). The controller's data watch on that znode starts them
(ISR-20). The answer waits until every partition of the topic has a leader in the metadata
this broker publishes, or ``timeout_ms``, then REQUEST_TIMED_OUT (DelayedCreatePartitions);
with ``timeout_ms`` <= 0 it is REQUEST_TIMED_OUT at once, ``validate_only`` NONE at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from coordspec.broker.apis.create_partitions import (
    INVALID_TOPIC_EXCEPTION,
    NONE,
    NOT_CONTROLLER,
    REASSIGNMENT_IN_PROGRESS,
    REQUEST_TIMED_OUT,
    UNKNOWN_TOPIC_OR_PARTITION,
    Refused,
    answer,
    distinct,
    new_partitions,
)
from coordspec.broker.cluster.purgatory import wait_until
from coordspec.broker.context import Client
from coordspec.reference.errors import ErrorCode
from coordspec.reference.replication.znodes import TopicAssignment, TopicPartition
from coordspec.reference.wire.entities import ms

UNKNOWN_SERVER_ERROR = ErrorCode.UNKNOWN_SERVER_ERROR


def _grow(ctx: Any, topic: Any, validate_only: bool) -> dict[str, Any]:
    """Runs on a thread: the topic's answer once its assignment is written (or checked)."""
    if ctx.node.queued_for_deletion(topic.name):
        return answer(topic.name, INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
    brokers = sorted(b for b in ctx.view.live_brokers if b in ctx.node.config.peers)

    def grow(assignment: TopicAssignment) -> TopicAssignment:
        if assignment.adding_replicas or assignment.removing_replicas:
            raise Refused(
                REASSIGNMENT_IN_PROGRESS,
                f"A partition reassignment is in progress for the topic '{topic.name}'.",
            )
        added = new_partitions(topic, assignment.partitions, brokers)
        return dataclasses.replace(assignment, partitions={**assignment.partitions, **added})

    try:
        outcome = ctx.node.grow_topic(topic.name, grow, write=not validate_only)
    except Refused as refused:
        return answer(topic.name, refused.error, refused.message)
    if outcome is False:
        message = f"The topic '{topic.name}' does not exist."
        return answer(topic.name, UNKNOWN_TOPIC_OR_PARTITION, message)
    if outcome is not True:
        return answer(topic.name, UNKNOWN_SERVER_ERROR, outcome)
    return answer(topic.name)


def _led(ctx: Any, topic: Any) -> bool:
    return all(ctx.view.leader(TopicPartition(topic.name, p)) >= 0 for p in range(topic.count))


async def handle(ctx: Any, client: Client, version: int, body: Any) -> dict[str, Any]:
    """``ctx``: the cluster's ClusterContext."""
    if not ctx.node.replica.controller.active:
        names = dict.fromkeys(t.name for t in body.topics)
        return {"results": [answer(name, NOT_CONTROLLER) for name in names]}
    once, answers = distinct(body)
    grown = []
    for topic in once:
        answers.append(await asyncio.to_thread(_grow, ctx, topic, body.validate_only))
        if answers[-1]["error_code"] == NONE and not body.validate_only:
            grown.append((topic, answers[-1]))
    await wait_until(lambda: all(_led(ctx, t) for t, _ in grown), ms(body.timeout))
    for topic, result in grown:
        if not _led(ctx, topic):
            result["error_code"] = REQUEST_TIMED_OUT
    return {"results": answers}
