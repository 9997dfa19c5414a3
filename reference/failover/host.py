"""The group coordinators of one broker: one per offsets partition it leads (CF-2 … CF-8).

    host = CoordinatorHost(broker_id=1, offsets_partitions=3)
    host.handle(BecomeCoordinator(partition=0, leader_epoch=4, now_ms=0))   # -> [LoadPartition(0, 4)]
    host.handle(LoadGroup(0, 4, batches=log, high_watermark=hw, now_ms=5))  # now serving
    host.handle(OffsetCommit(...))                                          # -> [AppendToPartition(...)]
    host.handle(HighWatermarkUpdated(0, hw + 1, now_ms=9))                  # -> [Reply(...)]
    host.handle(NewMetadataImage(topics, now_ms=10, topic_ids=ids))         # every coordinator

The host routes each group request to the partition ``partition_for(group_id)``. A partition
it does not lead answers NOT_COORDINATOR, one it is loading COORDINATOR_LOAD_IN_PROGRESS,
and a loaded one hands the request to its own
:class:`~coordspec.reference.group.coordinator.GroupCoordinator` (``complete_appends=False``), whose
writes become :class:`~coordspec.reference.failover.effects.AppendToPartition` effects and complete
only when the partition's high watermark passes them. The broker's topics reach every
coordinator as the reference's ``NewMetadataImage`` (a coordinator loaded later starts with
the last one), and ``ResolveRegularExpressions`` goes to its group's coordinator. This
follows Kafka 4.0's ``CoordinatorRuntime``; spec/coordinator-failover.md states the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeAlias

from coordspec.reference.choices import Choices, SeededChoices
from coordspec.reference.errors import ErrorCode, UsageError, append_error_to_response_error
from coordspec.reference.failover.effects import AppendToPartition, HostEffect, LoadPartition
from coordspec.reference.failover.events import (
    AppendFailed,
    BecomeCoordinator,
    HighWatermarkUpdated,
    HostEvent,
    LoadGroup,
    ResignCoordinator,
)
from coordspec.reference.failover.partition import DeferredReply, HostedPartition, PartitionState
from coordspec.reference.failover.placement import DEFAULT_OFFSETS_PARTITIONS, partition_for
from coordspec.reference.failover.refusals import is_deferred_write, refusal, service_check
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.coordinator import Observer as GroupObserver
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import (
    GROUP_REQUESTS,
    AppendCompleted,
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    DeleteGroups,
    DescribeGroups,
    ListGroups,
    LoadGroups,
    NewMetadataImage,
    OffsetFetch,
    Request,
    ResolveRegularExpressions,
    Tick,
    UnloadGroups,
)
from coordspec.reference.group.requests import Event as GroupEvent
from coordspec.reference.group.responses import (
    ConsumerGroupDescribeResponse,
    DeleteGroupsResponse,
    DescribedConsumerGroup,
    DescribeGroupsResponse,
    ListGroupsResponse,
    Response,
)

MultiGroupRequest = DescribeGroups | DeleteGroups | ListGroups | ConsumerGroupDescribe
# The entries of a multi-group response: DescribedGroup, DeletableGroupResult, ListedGroup or
# DescribedConsumerGroup,
# one kind per request (its type says which, which mypy cannot follow).
Entries: TypeAlias = tuple[Any, ...]
_HOST_EVENTS = (
    Request,
    Tick,
    BecomeCoordinator,
    LoadGroup,
    ResignCoordinator,
    HighWatermarkUpdated,
    AppendFailed,
    NewMetadataImage,
    ResolveRegularExpressions,
)


class HostObserver(Protocol):
    """Sees every event before the host handles it and the effects after (the failover Monitor)."""

    def before(self, host: CoordinatorHost, event: HostEvent) -> None: ...

    def after(self, host: CoordinatorHost, event: HostEvent, effects: list[HostEffect]) -> None: ...


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """A batch this host wrote whose offset the high watermark passed in the last step."""

    partition: int
    leader_epoch: int
    offset: int
    records: tuple[Record, ...]


@dataclass(slots=True)
class _FanOut:
    """A request for several groups, split by partition as Kafka's service splits it."""

    request: MultiGroupRequest
    parts: list[Entries | None] = field(default_factory=list)  # per partition, None while awaited
    slots: dict[int | str, int] = field(default_factory=dict)  # sub-request id -> index in parts


class CoordinatorHost:
    def __init__(
        self,
        broker_id: int,
        offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
        config: GroupConfig | None = None,
        choices: Choices | None = None,
        *,
        now_ms: int = 0,
        observer: HostObserver | None = None,
        group_observer: Callable[[], GroupObserver] | None = None,
    ) -> None:
        partition_for("", offsets_partitions)  # validates the partition count
        self.broker_id = broker_id
        self.offsets_partitions = offsets_partitions
        self.config = config or GroupConfig()
        self.choices: Choices = choices or SeededChoices(broker_id)
        self.now_ms = now_ms
        self.observer = observer
        self.group_observer = group_observer  # a fresh one watches each partition's coordinator
        self.hosted: dict[int, HostedPartition] = {}
        self.committed: list[CommittedBatch] = []  # batches the last step saw committed
        self._requests: dict[
            int | str, Request
        ] = {}  # forwarded to a coordinator, awaiting its reply
        self._fan_outs: dict[int | str, _FanOut] = {}  # sub-request id -> the request it is part of
        self._closing: set[int] = set()  # partitions being unloaded: their new writes fail at once
        self._effects: list[HostEffect] = []
        self.image: NewMetadataImage | None = None  # the broker's topics, once given

    # -- driving -------------------------------------------------------------------

    def handle(self, event: HostEvent) -> list[HostEffect]:
        """Apply one event; return the effects it caused, in order."""
        if not isinstance(event, _HOST_EVENTS):
            raise UsageError(f"CoordinatorHost.handle: {type(event).__name__} is not a host event")
        now_ms = event.now_ms
        if now_ms < self.now_ms:
            raise UsageError(
                f"{type(event).__name__}: now_ms {now_ms} is before broker {self.broker_id}'s time {self.now_ms}"
            )
        if isinstance(event, Request) and (
            event.request_id in self._requests or event.request_id in self._fan_outs
        ):
            raise UsageError(
                f"{event.api}: request_id {event.request_id!r} is still awaiting its reply"
            )
        self.now_ms = now_ms
        self._effects = []
        self.committed = []
        if self.observer is not None:
            self.observer.before(self, event)
        if not isinstance(event, ResignCoordinator):
            self._fire_due_timers()
        if isinstance(event, (DescribeGroups, DeleteGroups, ListGroups, ConsumerGroupDescribe)):
            self._fan_out(event)
        elif isinstance(event, Request):
            self._route(event)
        elif isinstance(event, Tick):
            pass  # the due timers fired above
        elif isinstance(event, BecomeCoordinator):
            self._become(event)
        elif isinstance(event, LoadGroup):
            self._load(event)
        elif isinstance(event, ResignCoordinator):
            self._resign(event)
        elif isinstance(event, HighWatermarkUpdated):
            self._advance(event)
        elif isinstance(event, NewMetadataImage):
            self._new_image(event)
        elif isinstance(event, ResolveRegularExpressions):
            self._resolve(event)
        else:
            self._append_failed(event)
        effects, self._effects = self._effects, []
        if self.observer is not None:
            self.observer.after(self, event, effects)
        return effects

    def _fire_due_timers(self) -> None:
        """CF-13: timers due by now fire before the event, each at its own deadline, on
        every partition served (a resignation cancels them instead)."""
        for hosted in list(self.hosted.values()):
            deadline = (
                hosted.coordinator.next_deadline_ms() if hosted.coordinator is not None else None
            )
            if deadline is not None and deadline <= self.now_ms:
                self._drive(hosted, Tick(self.now_ms))

    def next_deadline_ms(self) -> int | None:
        """The earliest timer of any partition this broker serves; ``Tick`` then."""
        deadlines = [
            h.coordinator.next_deadline_ms()
            for h in self.hosted.values()
            if h.coordinator is not None
        ]
        return min((d for d in deadlines if d is not None), default=None)

    # -- inspection ----------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.offsets_partitions)

    def state(self, partition: int) -> PartitionState | None:
        """``None`` when this broker does not coordinate ``partition``."""
        hosted = self.hosted.get(partition)
        return hosted.state if hosted is not None else None

    def serving(self, partition: int) -> GroupCoordinator | None:
        """The group coordinator of a partition this broker serves, else ``None``."""
        hosted = self.hosted.get(partition)
        return hosted.coordinator if hosted is not None and hosted.serving else None

    # -- leadership (CF-3, CF-4, CF-7) -----------------------------------------------

    def _become(self, event: BecomeCoordinator) -> None:
        """Kafka's scheduleLoadOperation: load unless an equal or newer epoch is known."""
        hosted = self.hosted.get(event.partition)
        if hosted is None:
            self.hosted[event.partition] = HostedPartition(event.partition, event.leader_epoch)
            self._effects.append(LoadPartition(event.partition, event.leader_epoch))
        elif event.leader_epoch > hosted.leader_epoch:
            hosted.leader_epoch = event.leader_epoch  # still leader: loading or serving goes on

    def _load(self, event: LoadGroup) -> None:
        hosted = self.hosted.get(event.partition)
        if hosted is None or hosted.serving:
            return  # Kafka ignores a load completion for a context gone or already active
        if event.leader_epoch > hosted.leader_epoch:
            raise UsageError(
                f"LoadGroup: partition {event.partition} loaded at leader epoch {event.leader_epoch}, "
                f"but broker {self.broker_id} leads it at {hosted.leader_epoch}"
            )
        observer = self.group_observer() if self.group_observer is not None else None
        image = self.image  # CF-14: the new coordinator knows the broker's topics
        hosted.coordinator = GroupCoordinator(
            self.config,
            self.choices,
            now_ms=self.now_ms,
            complete_appends=False,
            observer=observer,
            topics=None if image is None else image.topics,
            topic_ids=None if image is None else image.topic_ids,
        )
        hosted.state = PartitionState.SERVING
        hosted.next_offset = len(event.batches)
        hosted.high_watermark = event.high_watermark
        self._drive(
            hosted, LoadGroups(tuple(r for batch in event.batches for r in batch), self.now_ms)
        )

    def _resign(self, event: ResignCoordinator) -> None:
        """Kafka's scheduleUnloadOperation: unload unless this epoch is not newer than ours.

        Timers are cancelled first: the partition's coordinator sees no time pass, so none
        of them fires. Pending writes and deferred replies fail with NOT_COORDINATOR (the
        deferred event queue's ``failAll``), then the groups unload, answering parked joins
        and syncs."""
        hosted = self.hosted.get(event.partition)
        if hosted is None or (
            event.leader_epoch is not None and event.leader_epoch <= hosted.leader_epoch
        ):
            return
        if hosted.serving:
            self._closing.add(hosted.partition)
            frozen = _coordinator(hosted).now_ms
            pending = [hosted.appends.pop(offset)[0] for offset in sorted(hosted.appends)]
            for append_id in pending:
                self._drive(hosted, AppendCompleted(append_id, frozen, ErrorCode.NOT_COORDINATOR))
            deferred, hosted.deferred = hosted.deferred, []
            for reply in deferred:
                self._deliver(reply.request, refusal(reply.request, ErrorCode.NOT_COORDINATOR))
            self._drive(hosted, UnloadGroups(frozen))
            self._closing.discard(hosted.partition)
        del self.hosted[event.partition]

    # -- the broker's topics (CF-14) -------------------------------------------------------

    def _new_image(self, event: NewMetadataImage) -> None:
        """Kafka's runtime keeps the image and hands it to every active coordinator."""
        self.image = event
        for hosted in self.hosted.values():
            if hosted.serving:
                self._drive(hosted, event)

    def _resolve(self, event: ResolveRegularExpressions) -> None:
        """The group's coordinator resolves its regexes; a group not served here has none."""
        hosted = self.hosted.get(self.partition_for(event.group_id))
        if hosted is not None and hosted.serving:
            self._drive(hosted, event)

    # -- the log (CF-6) ----------------------------------------------------------------

    def _append(self, hosted: HostedPartition, append: AppendRecords) -> None:
        offset = hosted.next_offset
        hosted.next_offset += 1
        hosted.appends[offset] = (append.append_id, append.records)
        self._effects.append(
            AppendToPartition(hosted.partition, hosted.leader_epoch, offset, append.records)
        )

    def _advance(self, event: HighWatermarkUpdated) -> None:
        hosted = self.hosted.get(event.partition)
        if hosted is None or not hosted.serving:
            return  # Kafka applies a high watermark only to an active coordinator
        if not hosted.high_watermark <= event.high_watermark <= hosted.next_offset:
            raise UsageError(
                f"HighWatermarkUpdated: partition {event.partition} high watermark {event.high_watermark} outside "
                f"[{hosted.high_watermark}, {hosted.next_offset}] (the last one and the log end offset broker "
                f"{self.broker_id} expects)"
            )
        hosted.high_watermark = event.high_watermark
        for offset in sorted(o for o in hosted.appends if o < event.high_watermark):
            append_id, records = hosted.appends.pop(offset)
            self.committed.append(
                CommittedBatch(hosted.partition, hosted.leader_epoch, offset, records)
            )
            self._drive(hosted, AppendCompleted(append_id, self.now_ms))
        due = [d for d in hosted.deferred if d.end_offset <= event.high_watermark]
        hosted.deferred = [d for d in hosted.deferred if d.end_offset > event.high_watermark]
        for reply in due:
            if reply.response is None:
                # A stable OffsetFetch reads now, at this event's time, not when it came.
                request = replace(reply.request, now_ms=self.now_ms)
                self._requests[request.request_id] = request
                self._drive(hosted, request)
            else:
                self._deliver(reply.request, reply.response)

    def _append_failed(self, event: AppendFailed) -> None:
        """The batch failed, and with it every later write (Kafka's failCurrentBatch)."""
        hosted = self.hosted.get(event.partition)
        if hosted is None or event.offset not in hosted.appends:
            raise UsageError(
                f"AppendFailed: broker {self.broker_id} has no pending append at offset {event.offset} "
                f"of partition {event.partition}"
            )
        failed = [hosted.appends.pop(o)[0] for o in sorted(hosted.appends) if o >= event.offset]
        hosted.next_offset = event.offset
        for append_id in failed:
            self._drive(hosted, AppendCompleted(append_id, self.now_ms, event.error))
        mapped = append_error_to_response_error(event.error)
        waiting = [d for d in hosted.deferred if d.end_offset > event.offset]
        hosted.deferred = [d for d in hosted.deferred if d.end_offset <= event.offset]
        for reply in waiting:
            self._deliver(reply.request, refusal(reply.request, mapped))

    # -- requests (CF-2, CF-5) ---------------------------------------------------------

    def _route(self, request: Request) -> None:
        if isinstance(request, OffsetFetch) and request.other_groups:
            # Its groups may live on other partitions: Kafka asks each group's on its own.
            raise UsageError(
                f"CoordinatorHost: OffsetFetch {request.request_id!r} names several groups; "
                "the driver sends one request per group, as the brokers do"
            )
        answer = service_check(request, self.config)
        if answer is not None:
            self._emit(request, answer)
            return
        hosted = self.hosted.get(self.partition_for(_group_of(request)))
        if hosted is None:
            self._emit(request, refusal(request, ErrorCode.NOT_COORDINATOR))
        elif not hosted.serving:
            self._emit(request, refusal(request, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
        else:
            self._forward(hosted, request)

    def _forward(self, hosted: HostedPartition, request: Request) -> None:
        if isinstance(request, OffsetFetch) and request.require_stable and hosted.uncommitted():
            # Kafka reads the latest offsets, pending commits included, and answers once
            # they are committed: the same as reading them then (CF-6).
            hosted.deferred.append(DeferredReply(hosted.next_offset, request, None))
            return
        self._requests[request.request_id] = request
        self._drive(hosted, request, deferring=request if is_deferred_write(request) else None)

    def _fan_out(self, request: MultiGroupRequest) -> None:
        """Kafka's service splits DescribeGroups and DeleteGroups by partition (a null id is
        answered INVALID_GROUP_ID first) and asks every partition for ListGroups."""
        fan = _FanOut(request)
        self._fan_outs[request.request_id] = fan
        batches: dict[int, tuple[str, ...]]
        if isinstance(request, ListGroups):
            if any(not h.serving for h in self.hosted.values()):
                del self._fan_outs[request.request_id]
                self._emit(request, refusal(request, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
                return
            batches = {p: () for p in sorted(self.hosted)}
        else:
            ids = _named(request)
            invalid = tuple(g for g in ids if not _valid(request, g))
            if isinstance(request, ConsumerGroupDescribe):
                # Kafka answers each blank id on its own, with no id
                fan.parts.extend(
                    (DescribedConsumerGroup(ErrorCode.INVALID_GROUP_ID, None),) for _ in invalid
                )
            elif invalid:
                fan.parts.append(
                    _entries(refusal(_sub(request, "", invalid), ErrorCode.INVALID_GROUP_ID))
                )
            batches = {}
            for group_id in ids:
                if group_id is not None and _valid(request, group_id):
                    partition = self.partition_for(group_id)
                    batches[partition] = (*batches.get(partition, ()), group_id)
        forwards = []
        for partition, group_ids in batches.items():
            sub = _sub(request, f"{request.request_id}/{partition}", group_ids)
            hosted = self.hosted.get(partition)
            if hosted is None or not hosted.serving:
                error = (
                    ErrorCode.NOT_COORDINATOR
                    if hosted is None
                    else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                )
                fan.parts.append(_entries(refusal(sub, error)))
                continue
            fan.slots[sub.request_id] = len(fan.parts)
            fan.parts.append(None)
            self._fan_outs[sub.request_id] = fan
            forwards.append((hosted, sub))
        # Every slot exists before the first part is asked for: parts may answer at once.
        for hosted, sub in forwards:
            self._forward(hosted, sub)
        self._finish_if_done(fan)

    def _finish_if_done(self, fan: _FanOut) -> None:
        if any(part is None for part in fan.parts) or fan.request.request_id not in self._fan_outs:
            return
        del self._fan_outs[fan.request.request_id]
        # Every part has come (checked above): none is None.
        entries = tuple(entry for part in fan.parts if part is not None for entry in part)
        request = fan.request
        if isinstance(request, DescribeGroups):
            self._emit(request, DescribeGroupsResponse(entries))
        elif isinstance(request, DeleteGroups):
            self._emit(request, DeleteGroupsResponse(entries))
        elif isinstance(request, ConsumerGroupDescribe):
            self._emit(request, ConsumerGroupDescribeResponse(entries))
        else:
            self._emit(request, ListGroupsResponse(ErrorCode.NONE, entries))

    # -- the partitions' coordinators ---------------------------------------------------

    def _drive(
        self, hosted: HostedPartition, event: GroupEvent, *, deferring: Request | None = None
    ) -> None:
        """Hand ``event`` to the partition's coordinator and route what it does."""
        coordinator = _coordinator(hosted)
        effects = coordinator.handle(event)
        refused: list[int] = []
        for effect in effects:
            if isinstance(effect, AppendRecords):
                if hosted.partition in self._closing:
                    refused.append(effect.append_id)
                else:
                    self._append(hosted, effect)
        for effect in effects:
            if isinstance(effect, Reply):
                request = self._requests.pop(effect.request_id)
                if (
                    deferring is not None
                    and effect.request_id == deferring.request_id
                    and hosted.uncommitted()
                ):
                    hosted.deferred.append(
                        DeferredReply(hosted.next_offset, request, effect.response)
                    )
                else:
                    self._deliver(request, effect.response)
        for append_id in refused:
            self._drive(
                hosted,
                AppendCompleted(append_id, coordinator.now_ms, ErrorCode.NOT_COORDINATOR),
            )

    def _deliver(self, request: Request, response: Response) -> None:
        fan = self._fan_outs.pop(request.request_id, None)
        if fan is None:
            self._emit(request, response)
            return
        fan.parts[fan.slots[request.request_id]] = _entries(response)
        self._finish_if_done(fan)

    def _emit(self, request: Request, response: Response) -> None:
        at_version = getattr(response, "at_version", None)
        shaped = at_version(request.api_version) if at_version else response
        self._effects.append(Reply(request.request_id, request.api, request.api_version, shaped))


def _coordinator(hosted: HostedPartition) -> GroupCoordinator:
    """The coordinator of a partition the host serves: a loaded one has it."""
    assert hosted.coordinator is not None, f"partition {hosted.partition} is not loaded"
    return hosted.coordinator


def _group_of(request: Request) -> str:
    """The group of a single-group request that passed ``service_check`` (which answers a
    missing group id)."""
    group_id = (
        request.group_id if isinstance(request, (*GROUP_REQUESTS, ConsumerGroupHeartbeat)) else None
    )
    if group_id is None:
        raise UsageError(f"{type(request).__name__} names no group to route by")
    return group_id


def _sub(
    request: MultiGroupRequest, request_id: str, group_ids: tuple[str | None, ...]
) -> MultiGroupRequest:
    """The part of ``request`` for one partition."""
    if isinstance(request, DescribeGroups):
        return DescribeGroups(request_id, request.api_version, request.now_ms, groups=group_ids)
    if isinstance(request, DeleteGroups):
        return DeleteGroups(request_id, request.api_version, request.now_ms, groups_names=group_ids)
    if isinstance(request, ConsumerGroupDescribe):
        return ConsumerGroupDescribe(
            request_id,
            request.api_version,
            request.now_ms,
            group_ids=tuple(g for g in group_ids if g is not None),
            include_authorized_operations=request.include_authorized_operations,
        )
    return ListGroups(
        request_id,
        request.api_version,
        request.now_ms,
        states_filter=request.states_filter,
        types_filter=request.types_filter,
    )


def _named(
    request: DescribeGroups | DeleteGroups | ConsumerGroupDescribe,
) -> tuple[str | None, ...]:
    if isinstance(request, DescribeGroups):
        return request.groups
    if isinstance(request, DeleteGroups):
        return request.groups_names
    return request.group_ids


def _valid(request: MultiGroupRequest, group_id: str | None) -> bool:
    """A null id is invalid; for ConsumerGroupDescribe a blank one too (Kafka's isGroupIdNotEmpty)."""
    return group_id is not None and (
        group_id != "" or not isinstance(request, ConsumerGroupDescribe)
    )


def _entries(response: Response) -> Entries:
    if isinstance(response, (DescribeGroupsResponse, ConsumerGroupDescribeResponse)):
        return response.groups
    if isinstance(response, DeleteGroupsResponse):
        return response.results
    assert isinstance(response, ListGroupsResponse)
    return response.groups
