"""Metadata (3): this broker, and the topics asked for.

A missing topic is created when the request allows it and ``auto.create.topics.enable``
is on; as in Kafka 4.x (KRaft, where creation goes through the controller), the request
that triggers the creation still answers UNKNOWN_TOPIC_OR_PARTITION for it, and the
client's next Metadata request finds it.

From v12 a request may name topics by id (KIP-516), as a KIP-848 consumer does for the ids
its assignment gives: then, as Kafka's KafkaApis, only the ids count, and an unknown one is
answered UNKNOWN_TOPIC_ID."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.log.topics import topic_name_error

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_ID = 0, 3, 17, 100
ZERO_ID = uuid.UUID(int=0)


def by_id(
    requested: Any, name_of: Callable[[uuid.UUID], str | None]
) -> tuple[list[str], list[dict[str, Any]]] | None:
    """For a request naming topics by id: the names of the known ids, and the answers to the
    unknown ones; None for a request by name."""
    ids = [t.topic_id for t in requested if getattr(t, "topic_id", None) not in (None, ZERO_ID)]
    if not ids:
        return None
    names, unknown = [], []
    for topic_id in dict.fromkeys(ids):
        name = name_of(topic_id)
        if name is None:
            unknown.append(
                {
                    "error_code": UNKNOWN_TOPIC_ID,
                    "name": None,
                    "topic_id": topic_id,
                    "is_internal": False,
                    "partitions": [],
                }
            )
        else:
            names.append(name)
    return names, unknown


def topic_metadata(ctx: BrokerContext, name: str) -> dict[str, Any]:
    entry = ctx.topics.entry(name)
    return {
        "error_code": NONE,
        "name": name,
        "topic_id": entry.topic_id,
        "is_internal": entry.internal,
        "partitions": [
            {
                "error_code": NONE,
                "partition_index": p,
                "leader_id": ctx.node_id,
                "leader_epoch": 0,
                "replica_nodes": [ctx.node_id],
                "isr_nodes": [ctx.node_id],
                "offline_replicas": [],
            }
            for p in range(entry.partitions)
        ],
        "topic_authorized_operations": -2147483648,
    }


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    requested = body.topics
    topics: list[dict[str, Any]] = []
    if requested is None or (version == 0 and not requested):  # v0: an empty list means all
        names = ctx.topics.names()
    elif (found := by_id(requested, ctx.topics.name_of)) is not None:
        names, topics = found
    else:
        names = [t.name for t in requested]
    defaults = ctx.topic_defaults
    # As KRaft's broker: a topic it cannot create (default.replication.factor above 1) is
    # unknown all the same.
    allow_create = (
        getattr(body, "allow_auto_topic_creation", True)
        and defaults.auto_create
        and defaults.replication_factor == 1
    )
    for name in names:
        if name is None or topic_name_error(name):
            topics.append(
                {
                    "error_code": INVALID_TOPIC_EXCEPTION,
                    "name": name,
                    "is_internal": False,
                    "partitions": [],
                }
            )
            continue
        if name not in ctx.topics:
            if allow_create:
                ctx.topics.create(name, defaults.partitions)
            topics.append(
                {
                    "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                    "name": name,
                    "is_internal": False,
                    "partitions": [],
                }
            )
            continue
        topics.append(topic_metadata(ctx, name))
    return {
        "brokers": [{"node_id": ctx.node_id, "host": ctx.host, "port": ctx.port, "rack": None}],
        "cluster_id": ctx.cluster_id,
        "controller_id": ctx.node_id,
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
    }
