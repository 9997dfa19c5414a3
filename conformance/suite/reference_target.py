"""The ``reference`` target: the reference coordinator in-process, on virtual time.

Each session is one coordinator of its own, so runs never see each other's groups. Open
choices (member ids, the next leader, a protocol tie) are drawn from a seed derived from
the group id with ``arbitrary=True``, so the catalog also checks that scenarios and the
oracle accept every choice Kafka leaves open, not just the first. The invariant Monitor
watches every step.

Fault hooks: a restart (or a coordinator kill, which this single-coordinator target
treats the same) drops the requests in flight, as their connections would be, and a new
coordinator loads the group's records from the log at the same instant. The ``coordinator:``
steps go through what clients see meanwhile (CF-2, CF-5, CF-7): ResignCoordinator unloads the
group, and until LoadGroup reloads it from the log the broker answers as a coordinator host
that does not lead, or is loading, the group's partition (:mod:`unserved`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import deque
from collections.abc import Mapping
from typing import ClassVar, Literal

from coordspec.conformance.suite.target import CATALOG_TOPICS
from coordspec.conformance.suite.unserved import Unserved
from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import (
    FailNextWrite,
    GroupConfig,
    GroupCoordinator,
    LoadGroups,
    Tick,
    UnloadGroups,
    WriteTxnMarker,
)
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.invariants import Monitor
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import (
    VERSIONS,
    NewMetadataImage,
    Request,
    ResolveRegularExpressions,
)
from coordspec.reference.group.responses import Response


class ReferenceTarget:
    name = "reference"
    clock: Literal["virtual", "real"] = "virtual"
    configurable = True
    versions: ClassVar[dict[str, range]] = dict(VERSIONS)
    answer_ms = 0
    settle_ms = 0
    latency_ms = 0
    supports_faults = True
    fails_writes = True
    completes_transactions = True
    moves_coordinator = True
    drives_metadata = True
    shows_records = True  # the log of its AppendRecords
    faults_are_shared = False  # each session has a coordinator of its own
    partitions = CATALOG_TOPICS

    def __init__(self, config: GroupConfig | None = None, seed: int = 0) -> None:
        self.config = config or GroupConfig()
        self.seed = seed

    async def open(
        self, group_id: str, config: GroupConfig, *, faults: bool = False
    ) -> ReferenceSession:
        digest = hashlib.blake2b(f"{self.seed}/{group_id}".encode(), digest_size=8).digest()
        return ReferenceSession(
            config, SeededChoices(int.from_bytes(digest, "big"), arbitrary=True), CATALOG_TOPICS
        )


class ReferenceSession:
    def __init__(
        self, config: GroupConfig, choices: SeededChoices, topics: Mapping[str, int] | None = None
    ) -> None:
        """``topics``: the broker's (GroupCoordinator); the simulator's broker, like the trace
        check that reads its traces, knows none."""
        self.config = config
        self.choices = choices
        self.topics = topics
        self.topic_ids: Mapping[str, str] = {}  # by name, when not the name (CG-70)
        self.monitor = Monitor()
        self.coordinator = GroupCoordinator(config, choices, observer=self.monitor, topics=topics)
        self.log: list[Record] = []
        self.shown = 0  # of the log, by written()
        self.inbox: dict[str, deque[tuple[Response, int]]] = {}
        self.owner: dict[int | str, str] = {}  # request id -> client
        self.faults = self
        self.unserved: Unserved | None = None  # from ResignCoordinator until LoadGroup

    def now_ms(self) -> int:
        return self.coordinator.now_ms

    def _handle(self, event) -> None:
        for effect in self.coordinator.handle(event):
            if isinstance(effect, Reply):
                client = self.owner.pop(effect.request_id)
                self.inbox.setdefault(client, deque()).append((effect.response, event.now_ms))
            elif isinstance(effect, AppendRecords):
                self.log.extend(effect.records)

    def _advance_to(self, until_ms: int) -> None:
        """Fire each timer due by ``until_ms`` at its own deadline, so replies carry their time."""
        while (
            deadline := self.coordinator.next_deadline_ms()
        ) is not None and deadline <= until_ms:
            self._handle(Tick(max(deadline, self.now_ms())))
        if until_ms > self.now_ms():
            self._handle(Tick(until_ms))

    async def send(self, client: str, request: Request) -> None:
        request = dataclasses.replace(request, now_ms=self.now_ms())  # the target's clock
        if self.unserved is not None:
            answer = self.unserved.answer(request)
            self.inbox.setdefault(client, deque()).append((answer, request.now_ms))
            return
        self.owner[request.request_id] = client
        self._handle(request)

    async def receive(self, client: str, within_ms: int) -> tuple[Response, int] | None:
        until = self.now_ms() + within_ms
        inbox = self.inbox.setdefault(client, deque())
        while not inbox:
            deadline = self.coordinator.next_deadline_ms()
            if deadline is None or deadline > until:
                self._advance_to(until)
                break
            self._handle(Tick(max(deadline, self.now_ms())))
        return inbox.popleft() if inbox else None

    async def sleep(self, ms: int) -> None:
        self._advance_to(self.now_ms() + ms)

    async def written(self) -> list[Record]:
        new, self.shown = self.log[self.shown :], len(self.log)
        return new

    async def close(self) -> None:
        pass

    # -- fault hooks ----------------------------------------------------------------------

    async def restart(self) -> None:
        now = self.now_ms()
        self.owner.clear()
        self.inbox.clear()
        self.monitor = Monitor()
        self.unserved = None
        self.coordinator = GroupCoordinator(
            self.config,
            self.choices,
            now_ms=now,
            observer=self.monitor,
            topics=self.topics,
            topic_ids=self.topic_ids,
        )
        self._handle(LoadGroups(tuple(self.log), now))

    async def kill_coordinator(self) -> None:
        await self.restart()

    async def fail_next_write(self, error: ErrorCode) -> None:
        self._handle(FailNextWrite(error, self.now_ms()))

    async def write_txn_marker(self, group_id: str, producer_id: int, result: str) -> None:
        self._handle(WriteTxnMarker(group_id, producer_id, result, self.now_ms()))

    async def resign_coordinator(self) -> None:
        self._handle(UnloadGroups(self.now_ms()))  # answers the parked requests (GM-43)
        self.unserved = Unserved(self.config, self.now_ms(), loading=False, topics=self.topics)

    async def become_coordinator(self) -> None:
        self.unserved = Unserved(self.config, self.now_ms(), loading=True, topics=self.topics)

    async def load_group(self) -> None:
        await self.restart()

    async def resolve_regular_expressions(self, group_id: str) -> None:
        self._handle(ResolveRegularExpressions(group_id, self.now_ms()))

    async def new_metadata_image(
        self, topics: Mapping[str, int], topic_ids: Mapping[str, str]
    ) -> None:
        self.topics, self.topic_ids = dict(topics), dict(topic_ids)  # a restart keeps them
        self._handle(NewMetadataImage(topics, self.now_ms(), topic_ids))
