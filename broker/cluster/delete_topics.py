"""DeleteTopics (20) on the cluster, as ZooKeeper-mode Kafka 3.9 serves it.

Only the active controller accepts it (KafkaApis.handleDeleteTopicsRequest): any other
broker answers NOT_CONTROLLER and the client asks the controller Metadata names. The
controller screens each topic (:func:`coordspec.broker.apis.delete_topics.screen`; a topic
named by id is found by the ids its znode holds, Kafka 2.8+), marks the others under
``/admin/delete_topics`` (ZkAdminManager.deleteTopics; a topic already marked is waited
for as well) and answers once they are gone from the metadata this broker publishes, or
after ``timeout_ms`` with REQUEST_TIMED_OUT for those still there (DelayedDeleteTopics
in the topic purgatory); with ``timeout_ms`` <= 0 it answers REQUEST_TIMED_OUT at once.
The controller model does the deletion itself (ISR-9).
"""

from __future__ import annotations

import asyncio
from typing import Any

from coordspec.broker.apis.delete_topics import (
    NONE,
    NOT_CONTROLLER,
    REQUEST_TIMED_OUT,
    UNKNOWN_TOPIC_OR_PARTITION,
    answer,
    requested,
    screen,
)
from coordspec.broker.cluster.purgatory import wait_until
from coordspec.broker.context import Client
from coordspec.reference.errors import ErrorCode
from coordspec.reference.wire.entities import ms

UNKNOWN_SERVER_ERROR = ErrorCode.UNKNOWN_SERVER_ERROR


async def handle(ctx: Any, client: Client, version: int, body: Any) -> dict[str, Any]:
    """``ctx``: the cluster's ClusterContext."""
    asked = requested(body)
    if not ctx.node.replica.controller.active:
        return {"responses": [answer(name, i, NOT_CONTROLLER) for name, i in asked]}
    ids = {topic_id: name for name, topic_id in ctx.view.topic_ids.items()}
    answers = screen(asked, ids.get, ctx.view.assignments.__contains__)
    marked = []
    for topic in (a for a in answers if a["error_code"] == NONE):
        outcome = await asyncio.to_thread(ctx.node.mark_for_deletion, topic["name"])
        if outcome is True:
            marked.append(topic)
        elif outcome is False:
            topic["error_code"] = UNKNOWN_TOPIC_OR_PARTITION
        else:
            topic.update(error_code=UNKNOWN_SERVER_ERROR, error_message=outcome)
    await wait_until(
        lambda: not any(t["name"] in ctx.view.assignments for t in marked), ms(body.timeout)
    )
    for topic in marked:
        if topic["name"] in ctx.view.assignments:
            topic["error_code"] = REQUEST_TIMED_OUT
    return {"responses": answers}
