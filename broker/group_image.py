"""What the single broker and a cluster broker share to serve consumer groups (KIP-848).

The group coordinator knows the broker's topics from an :class:`Image` (the reference's
``NewMetadataImage``), each topic known by Kafka's text form of its id (CG-70). The driver
gives it a new image before the first request after a change. After a ConsumerGroupHeartbeat
is answered, :class:`Resolutions` says whether the group's regexes are to be resolved
(``ResolveRegularExpressions``, CG-68), as Kafka 4.0 does asynchronously. :class:`ImagesShown`
keeps a trace replayable: a consumer group's request after a change is preceded by the image.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from coordspec.broker.group_driver import GroupDriver
from coordspec.broker.trace import Trace
from coordspec.reference.group import GroupCoordinator, NewMetadataImage
from coordspec.reference.wire import kafka_uuid
from coordspec.reference.wire.group_apis import TopicIds

CONSUMER_GROUP_APIS = frozenset({"ConsumerGroupHeartbeat", "ConsumerGroupDescribe"})


@dataclass(frozen=True)
class Image:
    """The broker's topics as the group coordinator knows them (NewMetadataImage)."""

    version: int  # changes whenever the topics do
    topics: dict[str, int]
    topic_ids: dict[str, str]  # name -> Kafka's text form of the topic's Uuid

    def event(self, now_ms: int) -> NewMetadataImage:
        return NewMetadataImage(self.topics, now_ms, self.topic_ids)

    @cached_property
    def wire_ids(self) -> TopicIds:
        """The wire's topic ids, each read as the reference's id of its topic."""
        return TopicIds({text: kafka_uuid.from_text(text) for text in self.topic_ids.values()})


class ImagesShown:
    """Which image each group's trace last showed: a consumer group's request after another
    one came is preceded by a ``metadata_image`` line, so a checker's coordinator knows it."""

    def __init__(self, trace: Trace) -> None:
        self._trace = trace
        self._shown: dict[str, int] = {}  # group -> the image version its trace has

    def show(self, now_ms: int, group_id: str, image: Image, again: bool = False) -> None:
        """Write ``image`` to the group's trace unless it is the one the trace has (``again``:
        even then, for a new coordinator, which knows the image it was loaded with)."""
        if again or self._shown.get(group_id) != image.version:
            self._shown[group_id] = image.version
            self._trace.metadata_image(now_ms, group_id, image.topics, image.topic_ids)


class Resolutions:
    """CG-68: a group's regexes are resolved after a heartbeat when one is new, or the topics
    changed since they last were."""

    def __init__(self) -> None:
        self._resolved: dict[str, int] = {}  # group -> the image version its regexes last saw

    def due(self, coordinator: GroupCoordinator | None, group_id: str, image: Image) -> bool:
        """True (and noted) when ``coordinator``, the group's, is to resolve them now."""
        group = None if coordinator is None else coordinator.consumer_groups.get(group_id)
        if group is None:
            return False
        regexes = {m.subscribed_topic_regex for m in group.members.values()} - {None, ""}
        if regexes and (
            not regexes <= group.resolved_regexes.keys()
            or self._resolved.get(group_id) != image.version
        ):
            self._resolved[group_id] = image.version
            return True
        return False


async def call_keeping_request(
    driver: GroupDriver, client: str, make: Callable[[int, int], Any]
) -> tuple[Any, Any]:
    """``driver.call``, with the request it made: its driver may resolve regexes after it."""
    made: list[Any] = []

    def kept(request_id: int, now_ms: int) -> Any:
        made.append(make(request_id, now_ms))
        return made[-1]

    response = await driver.call(client, kept)
    return made[0], response
