"""CreatePartitions (37, v0-v3): more partitions for existing topics.

Each topic is screened and its new partitions assigned as ZooKeeper-mode Kafka 3.9 does
(KafkaApis.handleCreatePartitionsRequest, ZkAdminManager.createPartitions,
AdminZkClient.createNewPartitionsAssignment): a name given twice gets INVALID_REQUEST
(once, as Kafka answers a map by name), an unknown topic UNKNOWN_TOPIC_OR_PARTITION, a
count not above the current one INVALID_PARTITIONS, explicit assignments that name unknown
brokers, repeat a broker, are not one per new partition or differ from partition 0's
replication factor INVALID_REPLICA_ASSIGNMENT, and more replicas than brokers
INVALID_REPLICATION_FACTOR; as KRaft, more than 10,000 new partitions (one metadata record
each) POLICY_VIOLATION. ``validate_only`` answers the same and changes nothing.
``__consumer_offsets`` is refused with TOPIC_AUTHORIZATION_FAILED (Kafka would grow it and
move the groups its partition count places).

The single broker grows the topic at once; the cluster's controller rewrites the topic's
assignment and waits for leaders (:mod:`coordspec.broker.cluster.create_partitions`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from coordspec.broker.apis.create_topics import MAX_RECORDS_PER_USER_OP, POLICY_VIOLATION
from coordspec.broker.context import BrokerContext, Client
from coordspec.broker.log.topics import OFFSETS_TOPIC

NONE, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, INVALID_TOPIC_EXCEPTION = 0, 3, 7, 17
TOPIC_AUTHORIZATION_FAILED, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR = 29, 37, 38
INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER, INVALID_REQUEST = 39, 41, 42
REASSIGNMENT_IN_PROGRESS = 60


class Refused(Exception):
    """A topic's answer other than NONE."""

    def __init__(self, error: int, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def answer(name: str, error: int = NONE, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "error_code": error, "error_message": message}


def distinct(body: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """The topics named once, and the answers for names given more than once."""
    counts = Counter(t.name for t in body.topics)
    once = [t for t in body.topics if counts[t.name] == 1]
    twice = [n for n in dict.fromkeys(t.name for t in body.topics) if counts[n] > 1]
    return once, [answer(n, INVALID_REQUEST, "Duplicate topic in request.") for n in twice]


def new_partitions(
    topic: Any, current: dict[int, tuple[int, ...]] | None, brokers: list[int]
) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition ``topic`` adds to ``current`` (None: no such topic),
    over the registered ``brokers``; raises Refused."""
    if topic.name == OFFSETS_TOPIC:
        raise Refused(
            TOPIC_AUTHORIZATION_FAILED,
            f"{OFFSETS_TOPIC}'s partition count places the groups; it is not changed",
        )
    if not current:
        raise Refused(UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic.name}' does not exist.")
    old = len(current)
    if topic.count < old:
        raise Refused(
            INVALID_PARTITIONS,
            f"Topic currently has {old} partitions, which is higher than the requested {topic.count}.",
        )
    if topic.count == old:
        raise Refused(INVALID_PARTITIONS, f"Topic already has {old} partitions.")
    if topic.count - old > MAX_RECORDS_PER_USER_OP:  # KRaft's bound, as CreateTopics'
        raise Refused(POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    factor = len(current[0])
    if topic.assignments is None:
        if factor > len(brokers):
            raise Refused(
                INVALID_REPLICATION_FACTOR,
                f"Replication factor: {factor} larger than available brokers: {len(brokers)}.",
            )
        start = next((i for i, b in enumerate(brokers) if b >= current[0][0]), 0)
        return _spread(brokers, range(old, topic.count), factor, start)
    proposed = [tuple(int(b) for b in a.broker_ids) for a in topic.assignments]
    unknown = sorted({b for replicas in proposed for b in replicas} - set(brokers))
    if unknown:
        raise Refused(
            INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(proposed) != topic.count - old:
        raise Refused(
            INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {topic.count - old} but "
            f"{len(proposed)} assignments provided.",
        )
    added = {old + i: replicas for i, replicas in enumerate(proposed)}
    for p, replicas in added.items():
        if not replicas:
            why = f"Cannot have replication factor of 0 for partition id {p}."
        elif len(set(replicas)) != len(replicas):
            listed = ", ".join(map(str, replicas))
            why = f"Duplicate brokers not allowed in replica assignment: {listed} for partition id {p}."
        elif len(replicas) != factor:
            why = (
                f"Inconsistent replication factor between partitions, partition 0 has {factor} "
                f"while partition {p} has {len(replicas)} replicas."
            )
        else:
            continue
        raise Refused(INVALID_REPLICA_ASSIGNMENT, why)
    return added


def _spread(
    brokers: list[int], partitions: range, factor: int, start: int
) -> dict[int, tuple[int, ...]]:
    """AdminUtils.assignReplicasToBrokers without racks, from a fixed start index: first
    replicas round-robin, the others at a shift that moves on every len(brokers) partitions."""
    n, shift, spread = len(brokers), start, {}
    for p in partitions:
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        others = (brokers[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(factor - 1))
        spread[p] = (brokers[first], *others)
    return spread


async def handle(ctx: BrokerContext, client: Client, version: int, body: Any) -> dict[str, Any]:
    once, answers = distinct(body)
    for topic in once:
        count = ctx.topics.partition_count(topic.name)
        current = {p: (ctx.node_id,) for p in range(count)} if count else None
        try:
            new_partitions(topic, current, [ctx.node_id])
        except Refused as refused:
            answers.append(answer(topic.name, refused.error, refused.message))
            continue
        if not body.validate_only:
            ctx.topics.grow(topic.name, topic.count)
        answers.append(answer(topic.name))
    return {"results": answers}
