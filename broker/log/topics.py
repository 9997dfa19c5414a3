"""The topics of one broker and their partition logs, under its data directory.

``topics.json`` names each topic with its partition count and topic id; each partition
lives in ``<topic>-<partition>/``, as in Kafka's log directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import uuid
from pathlib import Path

from pydantic import BaseModel, ValidationError

from coordspec.broker.log.partition import PartitionLog

OFFSETS_TOPIC = "__consumer_offsets"
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class TopicEntry(BaseModel):
    partitions: int
    topic_id: uuid.UUID
    internal: bool = False


class TopicsFile(BaseModel):
    topics: dict[str, TopicEntry] = {}


class DataDirError(Exception):
    """The data directory cannot be used; the message is one line for the user."""


def topic_name_error(name: str) -> str | None:
    """Why Kafka refuses ``name`` as a topic name (Topic.validate), or None."""
    if not name or name in (".", ".."):
        return f"topic name {name!r} is illegal"
    if len(name) > 249:
        return "topic names are at most 249 characters"
    if not _LEGAL_NAME.fullmatch(name):
        return (
            f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


class TopicStore:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._file = data_dir / "topics.json"
        try:
            self._topics = (
                TopicsFile.model_validate_json(self._file.read_bytes()).topics
                if self._file.exists()
                else {}
            )
        except (ValidationError, OSError) as e:
            raise DataDirError(
                f"{self._file}: cannot read the topic list ({type(e).__name__})"
            ) from None
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._appended = asyncio.Event()
        self.version = 0  # moves at each change of the topics: the group coordinator's image

    def __contains__(self, topic: str) -> bool:
        return topic in self._topics

    def names(self) -> list[str]:
        return sorted(self._topics)

    def entry(self, topic: str) -> TopicEntry:
        return self._topics[topic]

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, e in self._topics.items() if e.topic_id == topic_id), None)

    def partition_count(self, topic: str) -> int | None:
        entry = self._topics.get(topic)
        return entry.partitions if entry else None

    def create(self, topic: str, partitions: int, internal: bool = False) -> TopicEntry:
        entry = TopicEntry(partitions=partitions, topic_id=uuid.uuid4(), internal=internal)
        self._topics[topic] = entry
        self._save()
        return entry

    def grow(self, topic: str, partitions: int) -> None:
        """More partitions for ``topic``; their logs start empty on first use."""
        self._topics[topic] = self._topics[topic].model_copy(update={"partitions": partitions})
        self._save()

    def delete(self, topic: str) -> None:
        """The topic and its partition logs. The logs go first: a crash in between leaves
        the topic with empty logs, never a later topic of that name with the old records."""
        for partition in range(self._topics[topic].partitions):
            log = self._logs.pop((topic, partition), None)
            if log is not None:
                log.close()
            shutil.rmtree(self.data_dir / f"{topic}-{partition}", ignore_errors=True)
        del self._topics[topic]
        self._save()

    def _save(self) -> None:
        self.version += 1
        temporary = self._file.with_suffix(".tmp")
        temporary.write_text(TopicsFile(topics=self._topics).model_dump_json(indent=1))
        temporary.replace(self._file)

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        entry = self._topics.get(topic)
        if entry is None or not 0 <= partition < entry.partitions:
            return None
        key = (topic, partition)
        if key not in self._logs:
            # __consumer_offsets is synced to disk on every append: a commit is
            # acknowledged only once it would survive a crash.
            self._logs[key] = PartitionLog(
                self.data_dir / f"{topic}-{partition}", fsync=entry.internal
            )
        return self._logs[key]

    def notify_appended(self) -> None:
        """Wake every Fetch waiting for data."""
        self._appended.set()
        self._appended = asyncio.Event()

    async def wait_for_append(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._appended.wait(), timeout_s)

    def close(self) -> None:
        for log in self._logs.values():
            log.close()
