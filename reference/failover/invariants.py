"""The safety properties of coordinator failover, each under one name (CF-20 … CF-23).

The names are the contract's, shared with ``tla/CoordinatorFailover.tla`` and
spec/coordinator-failover.md. A :class:`Monitor` watches every broker's
:class:`~coordspec.reference.failover.host.CoordinatorHost` of a cluster, checks all four after each
step of any of them, and raises :class:`~coordspec.reference.errors.InvariantViolation` on the first
that fails.

The Monitor judges the hosts by what it saw, not by what they say about themselves: it
keeps its own record of which leadership and load events each broker received, of every
batch appended (numbered in the order appended, cluster-wide), and of what was
acknowledged to clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordspec.reference.errors import ErrorCode, Invariant, InvariantViolation, registry
from coordspec.reference.failover.effects import AppendToPartition, HostEffect
from coordspec.reference.failover.events import (
    BecomeCoordinator,
    HighWatermarkUpdated,
    HostEvent,
    LoadGroup,
    ResignCoordinator,
)
from coordspec.reference.failover.placement import partition_for
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from coordspec.reference.group.requests import (
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    DeleteGroups,
    DescribeGroups,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
    Request,
    SyncGroup,
)
from coordspec.reference.group.responses import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    Response,
    SyncGroupResponse,
)

if TYPE_CHECKING:
    from coordspec.reference.failover.host import CoordinatorHost

INVARIANTS: dict[str, Invariant] = registry(
    Invariant(
        "SingleActiveCoordinator",
        "CF-20",
        "per offsets partition and leader epoch at most one broker serves; and writes are "
        "committed by one broker per epoch, epochs never going back",
        tla=True,
    ),
    Invariant(
        "NoCommittedOffsetLost",
        "CF-21",
        "an acknowledged offset commit is what the serving coordinator holds, or a commit "
        "(or deletion) of that partition written after it",
        tla=True,
    ),
    Invariant(
        "LoadBeforeServe",
        "CF-22",
        "a broker answers for a group (other than NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS) "
        "only after loading the group's partition since it last became its leader",
        tla=True,
    ),
    Invariant(
        "NoStaleGenerationAfterFailover",
        "CF-23",
        "the serving coordinator's generation of a group is never below a generation committed "
        "to the log before, unless the group was deleted since",
        tla=True,
    ),
)

# Answers that say nothing about a group's state: refusals, and the service's own checks.
_STATELESS_ERRORS = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.INVALID_SESSION_TIMEOUT,
    }
)

OffsetKey = tuple[str, str, int]  # group, topic, partition


@dataclass(slots=True)
class _Leadership:
    """What the Monitor saw one broker told about one partition."""

    leader_epoch: int
    loaded: bool = False


class Monitor:
    """Checks every invariant after each step of the hosts it watches.

    ``watch(host)`` when a broker starts, ``forget(host)`` when its process dies."""

    def __init__(self, offsets_partitions: int) -> None:
        self.offsets_partitions = offsets_partitions
        self.hosts: dict[int, CoordinatorHost] = {}
        self.steps = 0
        self._leadership: dict[tuple[int, int], _Leadership] = {}  # (broker, partition)
        self._newest_epoch: dict[
            int, int
        ] = {}  # partition -> newest leader epoch any broker was told
        self._last_commit: dict[
            int, tuple[int, int]
        ] = {}  # partition -> (leader epoch, broker) of the last commit
        self._seq = 0  # appended batches, cluster-wide
        self._offset_writes: dict[OffsetKey, list[tuple[int, OffsetCommitValue | None]]] = {}
        self._group_tombstones: dict[str, list[int]] = {}
        self._acked_offsets: dict[OffsetKey, int] = {}  # -> seq of the acknowledged write
        # group -> (generation, seq of the batch) of the newest group record committed
        self._acked_generations: dict[str, tuple[int, int]] = {}
        # (partition, offset) -> [(seq, records)]
        self._batches: dict[tuple[int, int], list[tuple[int, tuple[Record, ...]]]] = {}
        # (broker, partition) -> loaded batches past the HW
        self._tails: dict[tuple[int, int], dict[int, tuple[Record, ...]]] = {}
        self._requests: dict[tuple[int, int | str], Request] = {}
        self._commit_writes: dict[tuple[int, int | str], dict[OffsetKey, int]] = {}

    def watch(self, host: CoordinatorHost) -> None:
        host.observer = self
        self.hosts[host.broker_id] = host

    def forget(self, host: CoordinatorHost) -> None:
        """The broker's process died: its leadership and open requests die with it."""
        if self.hosts.get(host.broker_id) is host:
            del self.hosts[host.broker_id]
        for key in [k for k in self._leadership if k[0] == host.broker_id]:
            del self._leadership[key]
        for request_key in [k for k in self._requests if k[0] == host.broker_id]:
            del self._requests[request_key]
        for key in [k for k in self._tails if k[0] == host.broker_id]:
            del self._tails[key]

    # -- observing -----------------------------------------------------------------

    def before(self, host: CoordinatorHost, event: HostEvent) -> None:
        broker = host.broker_id
        if isinstance(event, Request):
            self._requests[(broker, event.request_id)] = event
        elif isinstance(event, BecomeCoordinator):
            seen = self._leadership.get((broker, event.partition))
            if seen is None:
                self._leadership[(broker, event.partition)] = _Leadership(event.leader_epoch)
            else:
                seen.leader_epoch = max(seen.leader_epoch, event.leader_epoch)
            self._newest_epoch[event.partition] = max(
                self._newest_epoch.get(event.partition, -1), event.leader_epoch
            )
        elif isinstance(event, LoadGroup):
            seen = self._leadership.get((broker, event.partition))
            if seen is not None and not seen.loaded:
                seen.loaded = True
                tail = range(event.high_watermark, len(event.batches))
                self._tails[(broker, event.partition)] = {o: event.batches[o] for o in tail}
        elif isinstance(event, ResignCoordinator):
            seen = self._leadership.get((broker, event.partition))
            if seen is not None and (
                event.leader_epoch is None or event.leader_epoch > seen.leader_epoch
            ):
                del self._leadership[(broker, event.partition)]
                self._tails.pop((broker, event.partition), None)

    def after(self, host: CoordinatorHost, event: HostEvent, effects: list[HostEffect]) -> None:
        self.steps += 1
        for effect in effects:
            if isinstance(effect, AppendToPartition):
                self._appended(host, event, effect)
        for batch in host.committed:
            self._check_commit_order(host, batch.partition, batch.leader_epoch)
            self._committed(batch.partition, batch.offset, batch.records)
        if isinstance(event, HighWatermarkUpdated) and host.serving(event.partition) is not None:
            tail = self._tails.get((host.broker_id, event.partition), {})
            for offset in sorted(o for o in tail if o < event.high_watermark):
                self._committed(event.partition, offset, tail.pop(offset))
        for effect in effects:
            if isinstance(effect, Reply):
                request = self._requests.pop((host.broker_id, effect.request_id), None)
                if request is not None:
                    self._check_load_before_serve(host, request, effect)
                    self._acknowledged(host, request, effect)
        self.check_all()

    def _appended(self, host: CoordinatorHost, event: HostEvent, append: AppendToPartition) -> None:
        self._seq += 1
        self._batches.setdefault((append.partition, append.offset), []).append(
            (self._seq, append.records)
        )
        for record in append.records:
            key = record.key
            if isinstance(key, OffsetCommitKey):
                offset_key = (key.group, key.topic, key.partition)
                value = record.value
                assert value is None or isinstance(value, OffsetCommitValue), f"{key}: {value!r}"
                self._offset_writes.setdefault(offset_key, []).append((self._seq, value))
                if isinstance(event, OffsetCommit) and event.group_id == key.group:
                    self._commit_writes.setdefault((host.broker_id, event.request_id), {})[
                        offset_key
                    ] = self._seq
            elif isinstance(key, GroupMetadataKey) and record.value is None:
                self._group_tombstones.setdefault(key.group, []).append(self._seq)

    def _acknowledged(self, host: CoordinatorHost, request: Request, reply: Reply) -> None:
        response = reply.response
        if isinstance(request, OffsetCommit) and isinstance(response, OffsetCommitResponse):
            written = self._commit_writes.pop((host.broker_id, request.request_id), {})
            for topic in response.topics:
                for p in topic.partitions:
                    key = (request.group_id, topic.name, p.partition_index)
                    if p.error_code == ErrorCode.NONE and key in written:
                        self._acked_offsets[key] = max(
                            self._acked_offsets.get(key, 0), written[key]
                        )

    def _committed(self, partition: int, offset: int, records: tuple[Record, ...]) -> None:
        """A batch passed the high watermark: its group records' generations are acknowledged.

        Where the batch was appended (found by its content at that offset) orders it against
        tombstones; a batch the Monitor never saw appended counts as the oldest."""
        seq = max(
            (s for s, r in self._batches.get((partition, offset), ()) if r == records), default=0
        )
        for record in records:
            if isinstance(record.key, GroupMetadataKey) and isinstance(
                record.value, GroupMetadataValue
            ):
                group_id, generation = record.key.group, record.value.generation
                known = self._acked_generations.get(group_id)
                if (
                    known is None
                    or self._deleted_since(group_id, known[1])
                    or known[0] < generation
                ):
                    self._acked_generations[group_id] = (generation, seq)

    # -- the state checks, also run on their own by Hypothesis @invariant rules ---------

    def check_all(self) -> None:
        self.check_single_active_coordinator()
        self.check_load_before_serve()
        self.check_no_committed_offset_lost()
        self.check_no_stale_generation_after_failover()

    # -- SingleActiveCoordinator -----------------------------------------------------

    def check_single_active_coordinator(self) -> None:
        serving: dict[tuple[int, int], int] = {}
        for broker, host in self.hosts.items():
            for partition, hosted in host.hosted.items():
                if not hosted.serving:
                    continue
                other = serving.setdefault((partition, hosted.leader_epoch), broker)
                if other != broker:
                    raise InvariantViolation(
                        "SingleActiveCoordinator",
                        f"brokers {other} and {broker} both serve offsets partition {partition} at leader epoch "
                        f"{hosted.leader_epoch}",
                    )

    def _check_commit_order(self, host: CoordinatorHost, partition: int, leader_epoch: int) -> None:
        last = self._last_commit.get(partition)
        if last is not None and (
            leader_epoch < last[0] or (leader_epoch == last[0] and host.broker_id != last[1])
        ):
            raise InvariantViolation(
                "SingleActiveCoordinator",
                f"broker {host.broker_id} got a write to offsets partition {partition} committed at leader epoch "
                f"{leader_epoch} after broker {last[1]} did at leader epoch {last[0]}",
            )
        self._last_commit[partition] = (leader_epoch, host.broker_id)

    # -- LoadBeforeServe ---------------------------------------------------------------

    def check_load_before_serve(self) -> None:
        """A partition a host calls serving is one the Monitor saw it load since it became leader."""
        for broker, host in self.hosts.items():
            for partition, hosted in host.hosted.items():
                seen = self._leadership.get((broker, partition))
                if hosted.serving and (seen is None or not seen.loaded):
                    raise InvariantViolation(
                        "LoadBeforeServe",
                        f"broker {broker} serves offsets partition {partition} without having loaded it",
                    )

    def _check_load_before_serve(
        self, host: CoordinatorHost, request: Request, reply: Reply
    ) -> None:
        for group_id, error in _answers(request, reply.response):
            if group_id is None or error in _STATELESS_ERRORS:
                continue
            partition = partition_for(group_id, self.offsets_partitions)
            seen = self._leadership.get((host.broker_id, partition))
            if (
                isinstance(request, Heartbeat)
                and seen is not None
                and not seen.loaded
                and error == ErrorCode.NONE
            ):
                continue  # Kafka's blind answer to a heartbeat while loading (CF-5)
            if seen is None or not seen.loaded:
                doing = "still loading" if seen is not None else "not leading"
                raise InvariantViolation(
                    "LoadBeforeServe",
                    f"broker {host.broker_id} answered {request.api} for group {group_id!r} with {error.name} while "
                    f"{doing} offsets partition {partition}",
                )

    # -- NoCommittedOffsetLost and NoStaleGenerationAfterFailover ----------------------

    def serving_coordinator(self, partition: int) -> GroupCoordinator | None:
        """The coordinator that loaded ``partition`` at the newest leader epoch, if any."""
        newest = self._newest_epoch.get(partition)
        for broker, host in self.hosts.items():
            seen = self._leadership.get((broker, partition))
            coordinator = host.serving(partition)
            if (
                seen is not None
                and seen.loaded
                and seen.leader_epoch == newest
                and coordinator is not None
            ):
                return coordinator
        return None

    def _deleted_since(self, group_id: str, seq: int) -> bool:
        return any(s > seq for s in self._group_tombstones.get(group_id, ()))

    def check_no_committed_offset_lost(self) -> None:
        for key, acked_seq in self._acked_offsets.items():
            group_id, topic, partition_index = key
            coordinator = self.serving_coordinator(partition_for(group_id, self.offsets_partitions))
            if coordinator is None:
                continue
            group = coordinator.groups.get(group_id)
            held = group.offsets.get((topic, partition_index)) if group is not None else None
            later = [value for seq, value in self._offset_writes[key] if seq >= acked_seq]
            if held in later or (held is None and self._deleted_since(group_id, acked_seq - 1)):
                continue
            acked = next(value for seq, value in self._offset_writes[key] if seq == acked_seq)
            raise InvariantViolation(
                "NoCommittedOffsetLost",
                f"group {group_id!r} {topic}-{partition_index}: commit of offset "
                f"{acked.offset if acked is not None else 'nothing'} was acknowledged, "
                f"the serving coordinator holds {held.offset if held is not None else 'nothing'}",
            )

    def check_no_stale_generation_after_failover(self) -> None:
        for group_id, (generation, seq) in self._acked_generations.items():
            if self._deleted_since(group_id, seq):
                continue
            coordinator = self.serving_coordinator(partition_for(group_id, self.offsets_partitions))
            if coordinator is None:
                continue
            group = coordinator.groups.get(group_id)
            current = group.generation_id if group is not None else -1
            if current < generation:
                raise InvariantViolation(
                    "NoStaleGenerationAfterFailover",
                    f"group {group_id!r}: generation {generation} was committed, the serving coordinator is at "
                    f"{current if group is not None else 'no group at all'}",
                )


def _answers(request: Request, response: Response) -> list[tuple[str | None, ErrorCode]]:
    """(group id, error) for each group a reply speaks for."""
    if isinstance(request, DescribeGroups):
        assert isinstance(response, DescribeGroupsResponse)
        return [(e.group_id, e.error_code) for e in response.groups]
    if isinstance(request, DeleteGroups):
        assert isinstance(response, DeleteGroupsResponse)
        return [(e.group_id, e.error_code) for e in response.results]
    if isinstance(request, ConsumerGroupDescribe):
        assert isinstance(response, ConsumerGroupDescribeResponse)
        return [(e.group_id, e.error_code) for e in response.groups]
    if isinstance(request, ListGroups):
        assert isinstance(response, ListGroupsResponse)
        return [(g.group_id, response.error_code) for g in response.groups]
    if isinstance(request, OffsetCommit):
        assert isinstance(response, OffsetCommitResponse)
        errors = {p.error_code for t in response.topics for p in t.partitions}
        if not errors:
            return []  # an empty commit: a refusal and an answer look the same
        served = errors - _STATELESS_ERRORS
        return [(request.group_id, min(served) if served else min(errors))]
    if isinstance(request, OffsetDelete):
        assert isinstance(response, OffsetDeleteResponse)
        return [(request.group_id, response.error_code)]
    if isinstance(request, OffsetFetch):
        assert isinstance(response, OffsetFetchResponse)
        if request.api_version < 2 and request.topics and not response.topics:
            return []  # below v2 a group error leaves only an empty answer
        return [(request.group_id, response.error_code)]
    assert isinstance(
        request, (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat)
    )
    assert isinstance(
        response,
        (
            JoinGroupResponse,
            SyncGroupResponse,
            HeartbeatResponse,
            LeaveGroupResponse,
            ConsumerGroupHeartbeatResponse,
        ),
    )
    return [(request.group_id, response.error_code)]
