"""The classic group coordinator of one broker, as a sans-IO state machine.

    coordinator = GroupCoordinator(GroupConfig(), SeededChoices(seed=1))
    effects = coordinator.handle(JoinGroup(request_id=1, api_version=9, now_ms=0, ...))
    coordinator.next_deadline_ms()   # when to send Tick(now_ms=...) if nothing else arrives

``handle`` takes one event and returns the effects it caused, in order: ``Reply`` to a
request (possibly one parked earlier) and ``AppendRecords`` to the group's offsets
partition. Timers due by the event's ``now_ms`` fire first, each at its own deadline,
and timers due at ``now_ms`` fire again after the event, so a driver never needs a
separate step for a zero delay.

By default the coordinator completes its own appends, as if every write succeeded at
once. A driver that owns a log (the failover model, the broker) passes
``complete_appends=False`` and answers each ``AppendRecords`` with ``AppendCompleted``;
replies that wait on a write (SyncGroup of the leader, OffsetCommit, OffsetDelete,
DeleteGroups, a static member's rejoin) come only then, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Protocol

from coordspec.reference.choices import Choices, SeededChoices
from coordspec.reference.errors import ErrorCode, InvariantViolation, UsageError
from coordspec.reference.group import (
    lifecycle,
    loader,
    membership,
    offsets,
    rebalance,
    txn_offsets,
)
from coordspec.reference.group.after_write import (
    AfterWrite,
    ConsumerGroupWritten,
    Deletion,
    GroupsDeleted,
    LeaderAssignmentWritten,
    MarkerWritten,
    NewGroupWritten,
    OffsetsDeleted,
    OffsetsExpired,
    OffsetsWritten,
    StaticReplacementWritten,
)
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.consumer import classic_requests, describe, heartbeat
from coordspec.reference.group.consumer.assignor import take_subscription_metadata
from coordspec.reference.group.consumer.replay import replay_consumer_groups
from coordspec.reference.group.consumer.state import UNREVOKED_PARTITIONS, ConsumerGroup
from coordspec.reference.group.effects import AppendRecords, Effect, Reply
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import (
    AppendCompleted,
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    DeleteGroups,
    DescribeGroups,
    Event,
    FailNextWrite,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    LoadGroups,
    NewMetadataImage,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
    Request,
    ResolveRegularExpressions,
    SyncGroup,
    Tick,
    TxnOffsetCommit,
    UnloadGroups,
    WriteTxnMarker,
)
from coordspec.reference.group.responses import (
    JoinGroupResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    Response,
    SyncGroupResponse,
    TxnOffsetCommitResponse,
)
from coordspec.reference.group.state import Group, Parked
from coordspec.reference.group.timers import TimerKey, Timers
from coordspec.reference.group.topics import Refused, merged, reaching_coordinator
from coordspec.reference.group.transitions import DEAD
from coordspec.reference.substeps import UNOBSERVED, SubStepObserver


class Observer(Protocol):
    """Sees every event just before it is handled (after due timers) and its effects after."""

    def before(self, coordinator: GroupCoordinator, event: Event) -> None: ...

    def after(self, coordinator: GroupCoordinator, event: Event, effects: list[Effect]) -> None: ...


_HANDLERS: dict[type[object], Callable[..., None]] = {
    JoinGroup: membership.join_group,
    SyncGroup: membership.sync_group,
    Heartbeat: membership.heartbeat,
    LeaveGroup: membership.leave_group,
    OffsetCommit: offsets.commit_offsets,
    OffsetFetch: offsets.fetch_offsets,
    OffsetDelete: offsets.delete_offsets,
    TxnOffsetCommit: txn_offsets.commit_txn_offsets,
    DescribeGroups: lifecycle.describe_groups,
    ListGroups: lifecycle.list_groups,
    DeleteGroups: lifecycle.delete_groups,
    ConsumerGroupHeartbeat: heartbeat.consumer_group_heartbeat,
    ConsumerGroupDescribe: describe.consumer_group_describe,
}

# The events that are not requests.
_OTHER_EVENTS = (
    Tick,
    AppendCompleted,
    FailNextWrite,
    WriteTxnMarker,
    LoadGroups,
    UnloadGroups,
    ResolveRegularExpressions,
    NewMetadataImage,
)

# What follows a completed write, by the kind of write (see after_write).
_AFTER_WRITE: dict[type, Callable[..., None]] = {
    NewGroupWritten: membership.new_group_written,
    LeaderAssignmentWritten: membership.leader_assignment_written,
    StaticReplacementWritten: membership.static_replacement_written,
    OffsetsWritten: offsets.offsets_written,
    MarkerWritten: txn_offsets.marker_written,
    OffsetsDeleted: offsets.offsets_deleted,
    GroupsDeleted: lifecycle.groups_deleted,
    OffsetsExpired: lifecycle.offsets_expired,
    ConsumerGroupWritten: heartbeat.consumer_group_written,
}


# What a coordinator is told with, not what it is (see same_state); touched_groups is
# reset by every step, and the timers compare themselves.
_NOT_STATE = frozenset({"choices", "observer", "substeps", "touched_groups", "timers"})


class GroupCoordinator:
    def __init__(
        self,
        config: GroupConfig | None = None,
        choices: Choices | None = None,
        *,
        now_ms: int = 0,
        complete_appends: bool = True,
        observer: Observer | None = None,
        substeps: SubStepObserver = UNOBSERVED,
        topics: Mapping[str, int] | None = None,
        topic_ids: Mapping[str, str] | None = None,
    ) -> None:
        """``topics``: the broker's topics and their partition counts, when the model knows
        them: a commit to any other partition is refused as Kafka's request layer refuses it
        (GM-56). None: every partition exists (a driver with a request layer of its own).
        ``topic_ids``: their ids, by name (CG-70); a topic left out is known by its name."""
        self.config = config or GroupConfig()
        self.topics = None if topics is None else MappingProxyType(dict(topics))
        self.topic_ids = _ids(topics or {}, topic_ids or {})
        self.metadata_version = 0  # NewMetadataImage events so far (CG-70)
        self.choices: Choices = choices or SeededChoices()
        self.groups: dict[str, Group] = {}
        self.consumer_groups: dict[str, ConsumerGroup] = {}  # KIP-848 groups (CG-3)
        self.timers = Timers()
        self.now_ms = now_ms
        self.complete_appends = complete_appends
        self.appends_issued = 0
        self.log_end = 0  # the position the next record applied takes (next_position)
        self.groups_created = 0  # numbers each group's incarnation (Group.incarnation)
        self.deletions: dict[int | str, Deletion] = {}  # DeleteGroups awaiting their writes
        self.observer = observer  # see Observer; a reloaded coordinator is given the same one
        # told of CompleteJoin and of state changes within a step (reference/substeps.py)
        self.substeps = substeps
        self._pending_appends: dict[int, tuple[str, AfterWrite | None]] = {}
        self._unwritten: list[int] = []  # appends to complete at the end of this step
        self.failing_writes: list[ErrorCode] = []  # how the next own appends fail (FailNextWrite)
        self._completing: int | None = (
            None  # the append whose successful completion is being handled
        )
        self._effects: list[Effect] = []
        self._open_requests: set[int | str] = set()
        # OffsetCommits and OffsetDeletes that named partitions that do not exist: those
        # partitions, answered in the coordinator's reply (GM-56).
        self._refused: dict[int | str, Refused] = {}
        # Groups the current step may have changed, for observers that check invariants.
        self.touched_groups: set[str] = set()
        self.timers.schedule(
            lifecycle.RETENTION_TIMER, now_ms + self.config.offsets_retention_check_interval_ms
        )

    def copy(self, choices: Choices, observer: Observer | None) -> GroupCoordinator:
        """An independent copy of this coordinator's state, between steps, that asks
        ``choices`` and tells ``observer`` (the caller's copies of its own). What is immutable
        (the config, records, requests) is shared. Cheaper than ``copy.deepcopy``, which the
        oracle's hypotheses paid at every step."""
        other = object.__new__(GroupCoordinator)
        other.__dict__.update(self.__dict__)
        other.choices, other.observer = choices, observer
        other.groups = {k: g.copy() for k, g in self.groups.items()}
        other.consumer_groups = {k: g.copy() for k, g in self.consumer_groups.items()}
        other.timers = self.timers.copy()
        other.deletions = {k: d.copy() for k, d in self.deletions.items()}
        other.topic_ids = dict(self.topic_ids)
        other._pending_appends = dict(self._pending_appends)
        other._unwritten = list(self._unwritten)
        other.failing_writes = list(self.failing_writes)
        other._effects = list(self._effects)
        other._open_requests = set(self._open_requests)
        other._refused = dict(self._refused)
        other.touched_groups = set(self.touched_groups)
        return other

    def same_state(self, other: GroupCoordinator) -> bool:
        """Whether ``other`` is this coordinator as data: given the same events and choices,
        both take the same steps. Who they ask and tell (choices, observer) is not state."""
        mine, theirs = self.__dict__, other.__dict__
        return self.timers.same(other.timers) and all(
            mine[name] is theirs[name] or mine[name] == theirs[name]
            for name in mine
            if name not in _NOT_STATE
        )

    # -- driving -------------------------------------------------------------------

    def handle(self, event: Event) -> list[Effect]:
        """Apply one event; return the effects it caused, in order."""
        handler = _HANDLERS.get(type(event))  # every request's type, and only those
        if handler is None and not isinstance(event, _OTHER_EVENTS):
            raise UsageError(
                f"GroupCoordinator.handle: {type(event).__name__} is not a coordinator event"
            )
        now_ms = event.now_ms
        if now_ms < self.now_ms:
            raise UsageError(
                f"{type(event).__name__}: now_ms {now_ms} is before the coordinator's time {self.now_ms}"
            )
        req: Request | None = None
        if handler is not None:
            assert isinstance(event, Request)
            req = event
            if req.request_id in self._open_requests:
                raise UsageError(
                    f"{req.api}: request_id {req.request_id!r} is still awaiting its reply"
                )
        self._effects = []
        self.touched_groups = set()
        if self.timers.first_deadline_ms <= now_ms:
            self._fire_timers(now_ms)
        self.now_ms = now_ms
        if self.observer is not None:
            self.observer.before(self, event)
        if req is not None:
            self._open_requests.add(req.request_id)
            self.touched_groups.update(req.group_ids)
            # each check skipped, call and all, where it cannot apply
            request = req if self.topics is None else self._known_partitions(req)
            consumer_group = self._consumer_group_named(req) if self.consumer_groups else None
            if consumer_group is not None:
                classic_requests.answer(self, req, consumer_group)
                self._complete_own_appends()
            elif request is not None:
                _HANDLERS[type(request)](self, request)
                self._complete_own_appends()
        else:
            match event:
                case Tick():
                    pass  # only the timers due by now, fired above
                case AppendCompleted():
                    self._complete_append(event.append_id, event.error)
                case FailNextWrite():
                    if not self.complete_appends:
                        raise UsageError(
                            "FailNextWrite: this coordinator's driver completes its appends; "
                            "answer AppendCompleted with the error instead"
                        )
                    self.failing_writes.append(event.error)
                case WriteTxnMarker():
                    self.touched_groups.update(self.groups)
                    txn_offsets.write_txn_marker(self, event)
                    self._complete_own_appends()
                case LoadGroups():
                    self._load(event.records)
                    self.touched_groups.update(self.groups)
                case UnloadGroups():
                    self._unload()
                    self.touched_groups.update(self.groups)
                case ResolveRegularExpressions():
                    self.touched_groups.add(event.group_id)
                    heartbeat.resolve_regular_expressions(self, event.group_id)
                    self._complete_own_appends()
                case NewMetadataImage():
                    self.topics = MappingProxyType(dict(event.topics))
                    self.topic_ids = _ids(event.topics, event.topic_ids)
                    self.metadata_version += 1
        if self.timers.first_deadline_ms <= now_ms:
            self._fire_timers(now_ms)
        effects, self._effects = self._effects, []
        if self.observer is not None:
            self.observer.after(self, event, effects)
        return effects

    def next_deadline_ms(self) -> int | None:
        """The earliest time at which a timer is due; ``Tick`` then to let it fire."""
        return self.timers.next_deadline_ms()

    def pending_appends(self) -> list[int]:
        """Appends issued and not yet answered with ``AppendCompleted``."""
        return list(self._pending_appends)

    def _fire_timers(self, now_ms: int) -> None:
        while (due := self.timers.pop_due(now_ms)) is not None:
            key, deadline = due
            self.now_ms = deadline
            self._fire(key)
            self._complete_own_appends()

    def _fire(self, key: TimerKey) -> None:
        kind = key[0]
        if kind == "ExpireOffsets":
            self.touched_groups.update(self.groups)
            lifecycle.sweep_expired_offsets(self)
            return
        self.touched_groups.add(key[1])
        if kind == heartbeat.SESSION_TIMER:
            heartbeat.on_session_timeout(self, key[1], key[2])
            return
        if kind == heartbeat.REBALANCE_TIMER:
            heartbeat.on_rebalance_timeout(self, key[1], key[2])
            return
        group = self.groups.get(key[1])
        if group is None:
            return
        if kind == "CompleteJoin":
            rebalance.on_join_timer(self, group)
        elif kind == "ExpirePendingSync":
            rebalance.on_pending_sync_timer(self, group)
        elif kind == "ExpireSession":
            rebalance.on_session_timer(self, group, key[2])
        else:
            # The coordinator sets no other timer: a caller put this one in its Timers.
            raise UsageError(f"GroupCoordinator: unknown timer {key!r} in its timers")

    def _load(self, records: tuple[Record, ...]) -> None:
        if self.timers.deadline(lifecycle.RETENTION_TIMER) is None:
            self.timers.schedule(
                lifecycle.RETENTION_TIMER,
                self.now_ms + self.config.offsets_retention_check_interval_ms,
            )
        self.log_end = max(self.log_end, len(records))  # positions go on after the loaded ones
        for group_id, group in loader.replay(records).items():
            if group_id in self.groups:
                raise UsageError(f"LoadGroups: group {group_id!r} is already loaded")
            self._number(group)
            self.groups[group_id] = group
            loader.on_loaded(self, group)
        for group_id, consumer_group in replay_consumer_groups(records).items():
            if group_id in self.consumer_groups:
                raise UsageError(f"LoadGroups: group {group_id!r} is already loaded")
            offsets = self.groups.pop(group_id, None)  # the loader reads its offsets as a group's
            if offsets is not None:
                consumer_group.offset_store = offsets
            self.consumer_groups[group_id] = consumer_group
            self._consumer_group_loaded(consumer_group)

    def _consumer_group_loaded(self, group: ConsumerGroup) -> None:
        """CG-41: sessions restart from the load; a member revoking gets its rebalance timeout.
        CG-70: the subscription metadata is taken to be the topics' as they are now."""
        take_subscription_metadata(self, group)
        for member in group.members.values():
            self.timers.schedule(
                (heartbeat.SESSION_TIMER, group.group_id, member.member_id),
                self.now_ms + self.config.consumer_session_timeout_ms,
            )
            if member.state == UNREVOKED_PARTITIONS:
                heartbeat.schedule_rebalance_timeout(
                    self, group, member.member_id, member.member_epoch, member.rebalance_timeout_ms
                )

    def _unload(self) -> None:
        """GM-43: parked requests learn that this broker is no longer the coordinator."""
        self.timers.cancel(lifecycle.RETENTION_TIMER)
        for group in self.groups.values():
            for member in group.members.values():
                if member.awaiting_join is not None:
                    self.reply_parked(
                        member.awaiting_join,
                        "JoinGroup",
                        JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=member.member_id),
                    )
                    member.awaiting_join = None
                if member.awaiting_sync is not None:
                    self.reply_parked(
                        member.awaiting_sync,
                        "SyncGroup",
                        SyncGroupResponse(ErrorCode.NOT_COORDINATOR),
                    )
                    member.awaiting_sync = None
            self._cancel_timers(group)
            if group.state != DEAD:
                rebalance.move(self, group, DEAD, "UnloadGroups")
        for consumer_group in self.consumer_groups.values():
            for member_id in consumer_group.members:
                self.timers.cancel((heartbeat.SESSION_TIMER, consumer_group.group_id, member_id))
                heartbeat.cancel_rebalance_timeout(self, consumer_group, member_id)
        self.consumer_groups.clear()

    # -- services for the handlers ---------------------------------------------------

    def reply(self, req: Request, response: Response) -> None:
        self._emit_reply(req.request_id, req.api, req.api_version, response)

    def reply_parked(self, parked: Parked, api: str, response: Response) -> None:
        self._emit_reply(parked.request_id, api, parked.api_version, response)

    def abandon(self, parked: Parked) -> None:
        """A parked request Kafka never answers (GM-35): it is no longer awaiting a reply."""
        self._open_requests.discard(parked.request_id)
        self._refused.pop(parked.request_id, None)

    def _consumer_group_named(self, req: Request) -> ConsumerGroup | None:
        """CG-36..CG-38: a classic membership request naming a consumer group's id."""
        if not isinstance(req, (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)):
            return None
        return next(
            (self.consumer_groups[g] for g in req.group_ids if g in self.consumer_groups), None
        )

    def _known_partitions(self, req: Request) -> Request | None:
        """GM-56: what of ``req`` reaches the coordinator (None: nothing, it is answered)."""
        assert self.topics is not None
        kept, refused, answer = reaching_coordinator(req, self.topics)
        if answer is not None:
            self.reply(req, answer)
        elif refused:
            self._refused[req.request_id] = refused
        return kept

    def _emit_reply(
        self, request_id: int | str, api: str, version: int, response: Response
    ) -> None:
        if request_id not in self._open_requests:
            raise InvariantViolation(
                "AtMostOneReply",
                f"{api} reply to request {request_id!r}, which is not awaiting one",
            )
        self._open_requests.discard(request_id)
        refused = self._refused.pop(request_id, None)
        if refused is not None:
            assert isinstance(
                response, (OffsetCommitResponse, TxnOffsetCommitResponse, OffsetDeleteResponse)
            )
            response = merged(refused, response)
        at_version = getattr(response, "at_version", None)
        self._effects.append(
            Reply(
                request_id,
                api,
                version,
                at_version(version) if at_version else response,
                self._completing,
            )
        )

    def write(self, group_id: str, records: tuple[Record, ...], after: AfterWrite | None) -> None:
        """Append records; ``after`` is dispatched when the driver (or we) report the outcome."""
        self.appends_issued += 1
        append_id = self.appends_issued
        self._pending_appends[append_id] = (group_id, after)
        self._effects.append(AppendRecords(append_id, group_id, records))
        if self.complete_appends:
            self._unwritten.append(append_id)

    def next_position(self) -> int:
        p = self.log_end
        self.log_end += 1
        return p

    def pending_writes(self) -> list[AfterWrite]:
        return [after for _, after in self._pending_appends.values() if after is not None]

    def _complete_own_appends(self) -> None:
        while self._unwritten:
            append_id = self._unwritten.pop(0)
            error = self.failing_writes.pop(0) if self.failing_writes else ErrorCode.NONE
            if error != ErrorCode.NONE:  # refused before any of it was written: not in the log
                self._effects = [
                    e
                    for e in self._effects
                    if not (isinstance(e, AppendRecords) and e.append_id == append_id)
                ]
            self._complete_append(append_id, error)

    def _complete_append(self, append_id: int, error: ErrorCode) -> None:
        if append_id not in self._pending_appends:
            raise UsageError(
                f"AppendCompleted: append {append_id} is not pending (pending: {sorted(self._pending_appends)})"
            )
        group_id, after = self._pending_appends.pop(append_id)
        self.touched_groups.add(group_id)
        group = self.groups.get(group_id)
        if error == ErrorCode.NONE and group is not None:
            group.in_log = True
        if after is not None:
            completing, self._completing = (
                self._completing,
                append_id if error == ErrorCode.NONE else None,
            )
            try:
                _AFTER_WRITE[type(after)](self, after, error)
            finally:
                self._completing = completing
        self._complete_own_appends()

    def create_group(self, group_id: str) -> Group:
        group = Group(group_id, state_timestamp_ms=self.now_ms)
        self._number(group)
        self.groups[group_id] = group
        return group

    def _number(self, group: Group) -> None:
        self.groups_created += 1
        group.incarnation = self.groups_created

    def drop_group(self, group_id: str) -> None:
        """Forget a group. Requests still parked in it are orphaned, as when Kafka reverts
        a group whose creating write failed: they get no reply."""
        group = self.groups.pop(group_id)
        for member in group.members.values():
            for parked in (member.awaiting_join, member.awaiting_sync):
                if parked is not None:
                    self.abandon(parked)
            member.awaiting_join = member.awaiting_sync = None
        self._cancel_timers(group)

    def _cancel_timers(self, group: Group) -> None:
        for member_id in list(group.members) + list(group.pending_members):
            self.timers.cancel(rebalance.session_key(group.group_id, member_id))
        self.timers.cancel(rebalance.join_key(group.group_id))
        self.timers.cancel(rebalance.sync_key(group.group_id))

    # -- inspection ----------------------------------------------------------------

    def group(self, group_id: str) -> Group:
        try:
            return self.groups[group_id]
        except KeyError:
            raise UsageError(f"no group {group_id!r} (groups: {sorted(self.groups)})") from None

    def open_requests(self) -> Iterable[int | str]:
        """Requests parked or waiting on a write: not yet answered."""
        return set(self._open_requests)


def _ids(topics: Mapping[str, int], ids: Mapping[str, str]) -> dict[str, str]:
    return {name: ids.get(name, name) for name in topics}
