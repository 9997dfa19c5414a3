"""What a handler may use of the coordinator that runs it.

The handlers (membership, rebalance, offsets, lifecycle, loader) are the coordinator's
steps, kept in modules of their own; this is the whole of what they reach for.
:class:`~coordspec.reference.group.coordinator.GroupCoordinator` provides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from coordspec.reference.choices import Choices
from coordspec.reference.group.after_write import AfterWrite, Deletion
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.consumer.state import ConsumerGroup
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import Request
from coordspec.reference.group.responses import Response
from coordspec.reference.group.state import Group, Parked
from coordspec.reference.group.timers import Timers
from coordspec.reference.substeps import SubStepObserver


class Context(Protocol):
    config: GroupConfig
    choices: Choices
    timers: Timers
    now_ms: int  # the time of the step (of the timer, while one fires)
    groups: dict[str, Group]
    consumer_groups: dict[str, ConsumerGroup]  # KIP-848 groups, by id apart from classic ones
    appends_issued: int  # how many writes so far: a handler sees whether it wrote
    deletions: dict[int | str, Deletion]  # DeleteGroups requests awaiting their writes
    substeps: SubStepObserver  # told of CompleteJoin and of every change of a group's state
    metadata_version: int  # how many metadata images came since the start (CG-68, CG-70)

    @property
    def topics(self) -> Mapping[str, int] | None:
        """The broker's topics and partition counts, when the model knows them."""

    @property
    def topic_ids(self) -> Mapping[str, str]:
        """CG-70: the id of each of ``topics``, by name."""

    def reply(self, req: Request, response: Response) -> None:
        """Answer the request being handled."""

    def reply_parked(self, parked: Parked, api: str, response: Response) -> None:
        """Answer a request held earlier."""

    def abandon(self, parked: Parked) -> None:
        """Drop a held request that gets no answer."""

    def write(self, group_id: str, records: tuple[Record, ...], after: AfterWrite | None) -> None:
        """Append records to the group's partition; ``after`` follows their outcome."""

    def next_position(self) -> int:
        """The log position of the next record applied (Kafka's record offset): it orders
        plain and transactional commits of a partition (GM-58)."""

    def pending_writes(self) -> list[AfterWrite]:
        """What follows each write not yet answered, in the order they were issued."""

    def create_group(self, group_id: str) -> Group: ...

    def drop_group(self, group_id: str) -> None: ...
