"""The consumer embedded protocol: what consumers put in JoinGroup metadata and
SyncGroup assignments (Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment,
versions 0-3, classic non-flexible encoding behind an int16 version header).

The coordinator treats these bytes as opaque; the reference decodes them only to check
``AtMostOneOwnerPerPartition`` and to know which topics a consumer group subscribes to.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HIGHEST_VERSION = 3


class MalformedConsumerProtocol(ValueError):
    """The bytes are not a consumer-protocol subscription or assignment."""


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+
    # Not on the wire: the leader learns it from JoinGroup's member list, as Kafka's
    # Subscription object carries it to the assignor.
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: tuple[TopicPartitions, ...]
    user_data: bytes | None = None


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
            return
        raw = v.encode()
        self.int16(len(raw))
        self.parts.append(raw)

    def bytes_(self, v: bytes | None) -> None:
        if v is None:
            self.int32(-1)
            return
        self.int32(len(v))
        self.parts.append(v)

    def topic_partitions(self, items: tuple[TopicPartitions, ...]) -> None:
        self.int32(len(items))
        for item in items:
            self.string(item.topic)
            self.int32(len(item.partitions))
            for p in item.partitions:
                self.int32(p)

    def done(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise MalformedConsumerProtocol(
                f"{self.what}: truncated at byte {self.pos} of {len(self.data)}"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def string(self, nullable: bool = False) -> str | None:
        n = self.int16()
        if n == -1 and nullable:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise MalformedConsumerProtocol(
                f"{self.what}: string at byte {self.pos} is not UTF-8"
            ) from exc

    def bytes_(self) -> bytes | None:
        n = self.int32()
        return None if n == -1 else self._take(n)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data):
            raise MalformedConsumerProtocol(
                f"{self.what}: impossible array length {n} at byte {self.pos - 4}"
            )
        return n

    def topic_partitions(self) -> tuple[TopicPartitions, ...]:
        items = []
        for _ in range(self.count()):
            topic = self.string()
            partitions = tuple(self.int32() for _ in range(self.count()))
            items.append(TopicPartitions(topic or "", partitions))
        return tuple(items)


def encode_subscription(sub: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    w = _Writer()
    w.int16(version)
    w.int32(len(sub.topics))
    for topic in sub.topics:
        w.string(topic)
    w.bytes_(sub.user_data)
    if version >= 1:
        w.topic_partitions(sub.owned_partitions)
    if version >= 2:
        w.int32(sub.generation_id)
    if version >= 3:
        w.string(sub.rack_id)
    return w.done()


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data, "consumer subscription")
    version = min(r.int16(), HIGHEST_VERSION)
    if version < 0:
        raise MalformedConsumerProtocol(f"consumer subscription: negative version {version}")
    topics = tuple(r.string() or "" for _ in range(r.count()))
    user_data = r.bytes_()
    owned = r.topic_partitions() if version >= 1 else ()
    generation_id = r.int32() if version >= 2 else -1
    rack_id = r.string(nullable=True) if version >= 3 else None
    return Subscription(topics, user_data, owned, generation_id, rack_id)


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    w = _Writer()
    w.int16(version)
    w.topic_partitions(assignment.partitions)
    w.bytes_(assignment.user_data)
    return w.done()


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data, "consumer assignment")
    if r.int16() < 0:
        raise MalformedConsumerProtocol("consumer assignment: negative version")
    partitions = r.topic_partitions()
    return Assignment(partitions, r.bytes_())
