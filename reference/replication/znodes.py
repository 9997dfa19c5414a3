"""Kafka's ZooKeeper layout (ZooKeeper-mode Kafka 2.6, ``kafka.zk.ZkData``): the paths and
the JSON each znode holds, with codecs.

JSON is written compactly, fields in the order Kafka writes them. A znode that does not
decode (not Kafka's JSON) raises :class:`UsageError` naming the path: in this model only
Kafka's own writers touch these znodes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, TypeVar

from coordspec.reference.errors import UsageError
from coordspec.reference.frozen import quicken
from coordspec.reference.wire import kafka_uuid

NO_LEADER = -1  # LeaderAndIsr.NoLeader
V = TypeVar("V")

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = ISR_CHANGE_NOTIFICATION + "/isr_change_"

# Created by every broker at start-up when missing (KafkaZkClient.createTopLevelPaths).
PERSISTENT_PATHS = (
    "/brokers",
    BROKER_IDS,
    TOPICS,
    "/admin",
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
)


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(tp: TopicPartition) -> str:
    return f"{TOPICS}/{tp.topic}/partitions/{tp.partition}"


def state_path(tp: TopicPartition) -> str:
    return f"{TOPICS}/{tp.topic}/partitions/{tp.partition}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def topic_path_topic(path: str) -> str | None:
    """The topic whose assignment znode ``path`` is, or None."""
    parts = path.split("/")
    if len(parts) == 4 and parts[:3] == ["", "brokers", "topics"] and parts[3]:
        return parts[3]
    return None


def state_path_partition(path: str) -> TopicPartition | None:
    """The partition whose state znode ``path`` is, or None."""
    parts = path.split("/")
    if (
        len(parts) == 7
        and parts[:3] == ["", "brokers", "topics"]
        and parts[4] == "partitions"
        and parts[6] == "state"
        and parts[5].isdigit()
    ):
        return TopicPartition(parts[3], int(parts[5]))
    return None


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _loads(path: str, data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{path}: not JSON: {data[:80]!r}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path}: expected a JSON object, got {data[:80]!r}")
    return value


def _field(path: str, value: dict[str, Any], name: str, kind: type[V]) -> V:
    field = value.get(name)
    if not isinstance(field, kind) or isinstance(field, bool):
        raise UsageError(f"{path}: field {name!r} must be {kind.__name__}, got {field!r}")
    return field


def _brokers(path: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(b, int) and not isinstance(b, bool) for b in value
    ):
        raise UsageError(f"{path}: expected a list of broker ids, got {value!r}")
    return tuple(value)


# -- /brokers/topics/<t>/partitions/<p>/state -----------------------------------------

_STATE_JSON = b'{"controller_epoch":%d,"leader":%d,"version":1,"leader_epoch":%d,"isr":[%b]}'
_ISR_JSON: dict[tuple[int, ...], bytes] = {}  # a cluster has few distinct ISRs
_ISRS_KEPT = 256


def _isr_json(isr: tuple[int, ...]) -> bytes:
    """The ISR's JSON list items, each ISR encoded once (a dict, cheaper than lru_cache)."""
    known = _ISR_JSON.get(isr)
    if known is None:
        if len(_ISR_JSON) >= _ISRS_KEPT:
            _ISR_JSON.clear()
        known = _ISR_JSON[isr] = ",".join(str(int(b)) for b in isr).encode()
    return known


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the controller publishes for one partition (``LeaderIsrAndControllerEpoch``).
    The znode's version is the partition's ``zk_version``; it is kept beside, not inside."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def next(self, leader: int, isr: tuple[int, ...], controller_epoch: int) -> PartitionState:
        """The next decision: every change of leader or ISR by the controller bumps the leader epoch."""
        if type(isr) is not tuple:  # tuple() of a tuple is itself, but a call
            isr = tuple(isr)
        return PartitionState(leader, self.leader_epoch + 1, isr, controller_epoch)

    def with_isr(self, isr: tuple[int, ...]) -> PartitionState:
        """A leader's own ISR change: same leader, same leader epoch (Kafka 2.6)."""
        return replace(self, isr=tuple(isr))

    def encode(self) -> bytes:
        # Formatted by hand: a failover encodes one state per partition, and json.dumps
        # costs most of the controller's time there. Same bytes as _dumps (a test checks).
        isr = self.isr
        return _STATE_JSON % (
            self.controller_epoch,
            self.leader,
            self.leader_epoch,
            _isr_json(isr if type(isr) is tuple else tuple(isr)),
        )

    @staticmethod
    def decode(path: str, data: bytes) -> PartitionState:
        value = _loads(path, data)
        return PartitionState(
            leader=_field(path, value, "leader", int),
            leader_epoch=_field(path, value, "leader_epoch", int),
            isr=_brokers(path, value.get("isr")),
            controller_epoch=_field(path, value, "controller_epoch", int),
        )


# -- /brokers/topics/<t> -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """The replicas of each partition, in assignment order (the order elections follow),
    a reassignment's adding/removing replicas (KIP-455, Kafka 2.4+), and the topic's id
    (KIP-516, Kafka 2.8+: version 3 of the znode; None in a topic written without one)."""

    partitions: dict[int, tuple[int, ...]]
    adding_replicas: dict[int, tuple[int, ...]]
    removing_replicas: dict[int, tuple[int, ...]]
    topic_id: uuid.UUID | None = None

    @staticmethod
    def of(
        partitions: Mapping[int, Iterable[int]], topic_id: uuid.UUID | None = None
    ) -> TopicAssignment:
        return TopicAssignment({p: tuple(r) for p, r in partitions.items()}, {}, {}, topic_id)

    def encode(self) -> bytes:
        def table(mapping: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
            return {str(p): list(r) for p, r in sorted(mapping.items())}

        value: dict[str, object] = {
            "version": 2 if self.topic_id is None else 3,
            "partitions": table(self.partitions),
            "adding_replicas": table(self.adding_replicas),
            "removing_replicas": table(self.removing_replicas),
        }
        if self.topic_id is not None:
            value["topic_id"] = kafka_uuid.to_text(self.topic_id)
        return _dumps(value)

    @staticmethod
    def decode(path: str, data: bytes) -> TopicAssignment:
        value = _loads(path, data)

        def table(name: str) -> dict[int, tuple[int, ...]]:
            raw = value.get(name, {})
            if not isinstance(raw, dict) or not all(k.isdigit() for k in raw):
                raise UsageError(
                    f"{path}: field {name!r} must map partition numbers to replicas, got {raw!r}"
                )
            return {int(p): _brokers(path, r) for p, r in raw.items()}

        topic_id = value.get("topic_id")
        if topic_id is not None and not isinstance(topic_id, str):
            raise UsageError(f"{path}: field 'topic_id' must be a string, got {topic_id!r}")
        return TopicAssignment(
            table("partitions"),
            table("adding_replicas"),
            table("removing_replicas"),
            None if topic_id is None else _topic_id(path, topic_id),
        )


def _topic_id(path: str, text: str) -> uuid.UUID:
    try:
        return kafka_uuid.from_text(text)
    except ValueError:
        raise UsageError(f"{path}: field 'topic_id' is not a Kafka Uuid: {text!r}") from None


# -- /admin/reassign_partitions ---------------------------------------------------------


def encode_reassignment(targets: dict[TopicPartition, tuple[int, ...]]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(r)}
                for tp, r in sorted(targets.items())
            ],
        }
    )


def decode_reassignment(path: str, data: bytes) -> dict[TopicPartition, tuple[int, ...]]:
    value = _loads(path, data)
    entries = value.get("partitions")
    if not isinstance(entries, list):
        raise UsageError(f"{path}: field 'partitions' must be a list, got {entries!r}")
    targets = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: each reassignment must be an object, got {entry!r}")
        tp = TopicPartition(
            _field(path, entry, "topic", str), _field(path, entry, "partition", int)
        )
        targets[tp] = _brokers(path, entry.get("replicas"))
    return targets


# -- /isr_change_notification/isr_change_<seq> ---------------------------------------------


def encode_isr_change(partitions: list[TopicPartition]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions],
        }
    )


def decode_isr_change(path: str, data: bytes) -> list[TopicPartition]:
    value = _loads(path, data)
    entries = value.get("partitions")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{path}: field 'partitions' must be a list of objects, got {entries!r}")
    return [
        TopicPartition(_field(path, e, "topic", str), _field(path, e, "partition", int))
        for e in entries
    ]


# -- /brokers/ids/<id>, /controller, /controller_epoch -----------------------------------


def encode_broker_registration(port: int, now_ms: int) -> bytes:
    endpoint = f"PLAINTEXT://127.0.0.1:{port}"
    return _dumps(
        {
            "version": 4,
            "host": "127.0.0.1",
            "port": port,
            "endpoints": [endpoint],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "jmx_port": -1,
            "timestamp": str(now_ms),
        }
    )


def encode_controller(broker_id: int, now_ms: int) -> bytes:
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": str(now_ms)})


def decode_controller(path: str, data: bytes) -> int:
    return _field(path, _loads(path, data), "brokerid", int)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(path: str, data: bytes) -> int:
    text = data.decode(errors="replace")
    if not text.isdigit():
        raise UsageError(f"{path}: expected a decimal epoch, got {data[:40]!r}")
    return int(text)


quicken(globals())  # cheaper constructors (reference/frozen.py)
