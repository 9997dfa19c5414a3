"""One broker's replica of one partition: its log, and its role (leader or follower at a
leader epoch) as the last LeaderAndIsr it applied, or its own step-down, set it.

A leader keeps what it knows of each follower (the LEO its last fetch reported, when it
last caught up), advances the high watermark to the smallest LEO over the ISR it holds,
acknowledges acks=all produces below the HW, and proposes ISR changes that the broker
writes to ZooKeeper (:mod:`coordspec.reference.replication.broker`). Methods return notices
(:mod:`coordspec.reference.replication.effects`) in the order they happened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from coordspec.reference.replication.effects import (
    BecameFollower,
    BecameLeader,
    Effect,
    HighWatermarkMoved,
    LeadershipLost,
    ProduceAccepted,
    ProduceAcked,
    ProduceFailed,
)
from coordspec.reference.replication.events import Fetch, FetchResponse
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.messages import LeaderAndIsrPartition
from coordspec.reference.replication.znodes import NO_LEADER, PartitionState, TopicPartition
from coordspec.reference.substeps import UNOBSERVED, SubStepObserver


class Role(StrEnum):
    NONE = "none"  # no LeaderAndIsr applied yet, or stepped down with no leader to follow
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's remote ``Replica``)."""

    log_end_offset: int = -1  # -1: not fetched since this leadership began
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    leader_end_at_last_fetch: int = 0


@dataclass(frozen=True, slots=True)
class PendingAck:
    offset: int
    payload_id: int


@dataclass(slots=True)
class Partition:
    tp: TopicPartition
    broker_id: int
    log: ReplicaLog
    role: Role = Role.NONE
    leader: int = NO_LEADER
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    zk_version: int = -1
    controller_epoch: int = -1
    # leader only
    followers: dict[int, FollowerState] = field(default_factory=dict)
    epoch_start_offset: int = 0
    pending_isr: tuple[int, ...] | None = None  # an ISR write in flight
    pending_acks: list[PendingAck] = field(default_factory=list)
    # told of AdvanceHighWatermark (see reference/substeps.py)
    substeps: SubStepObserver = field(default=UNOBSERVED, compare=False, repr=False)

    # -- roles (LeaderAndIsr, ISR-11) ----------------------------------------------------

    def apply(self, now_ms: int, decision: LeaderAndIsrPartition, min_insync: int) -> list[Effect]:
        """Apply a controller's decision newer than the one held. A leader that stays
        leader keeps its appends waiting for their ack and what its followers' fetches
        told it (Kafka resets a follower's LEO only for a new leader)."""
        staying = self.role == Role.LEADER and decision.leader == self.broker_id
        effects = self._lose_leadership() if self.role == Role.LEADER and not staying else []
        self.leader, self.leader_epoch = decision.leader, decision.leader_epoch
        self.isr, self.replicas = decision.isr, decision.replicas
        self.zk_version, self.controller_epoch = decision.zk_version, decision.controller_epoch
        self.pending_isr = None
        if decision.leader == self.broker_id:
            self.role = Role.LEADER
            self.epoch_start_offset = self.log.log_end_offset
            known = self.followers if staying else {}
            self.followers = {
                r: FollowerState(
                    log_end_offset=known[r].log_end_offset if r in known else -1,
                    last_caught_up_ms=now_ms if r in decision.isr else 0,
                    last_fetch_ms=now_ms,
                    leader_end_at_last_fetch=self.epoch_start_offset,
                )
                for r in decision.replicas
                if r != self.broker_id
            }
            effects.append(BecameLeader(self.tp.topic, self.tp.partition, self.leader_epoch))
            effects += self.advance_high_watermark(min_insync)  # the ISR may be this broker alone
        else:
            self.become_follower(decision.leader, decision.leader_epoch)
            effects.append(
                BecameFollower(self.tp.topic, self.tp.partition, self.leader_epoch, self.leader)
            )
        return effects

    def become_follower(self, leader: int, leader_epoch: int) -> None:
        self.role = Role.FOLLOWER if leader != NO_LEADER else Role.NONE
        self.leader, self.leader_epoch = leader, leader_epoch
        self.followers = {}

    def stop(self) -> list[Effect]:
        effects = self._lose_leadership() if self.role == Role.LEADER else []
        self.role, self.followers, self.pending_isr = Role.NONE, {}, None
        return effects

    def _lose_leadership(self) -> list[Effect]:
        effects: list[Effect] = [
            LeadershipLost(self.tp.topic, self.tp.partition, self.leader_epoch)
        ]
        effects += [
            ProduceFailed(self.tp.topic, self.tp.partition, a.payload_id, "NOT_LEADER_OR_FOLLOWER")
            for a in self.pending_acks
        ]
        self.pending_acks = []
        self.role = Role.NONE
        return effects

    # -- produce (ISR-12, ISR-13) ----------------------------------------------------------------

    def append(self, payload_id: int, value: object, min_insync: int) -> list[Effect]:
        topic, number = self.tp
        if self.role != Role.LEADER:
            return [ProduceFailed(topic, number, payload_id, "NOT_LEADER_OR_FOLLOWER")]
        if len(self.isr) < min_insync:
            return [ProduceFailed(topic, number, payload_id, "NOT_ENOUGH_REPLICAS")]
        offset = self.log.append(Record(self.leader_epoch, payload_id, value))
        self.pending_acks.append(PendingAck(offset, payload_id))
        return [
            ProduceAccepted(topic, number, payload_id, self.leader_epoch, offset),
            *self.advance_high_watermark(min_insync),
        ]

    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR the HW must wait for: while an ISR write is in flight, the union of the
        ISR held and the one proposed (a member being added counts already, one being
        removed still counts). In Kafka 2.6 the write and the cache update happen under one
        lock that HW updates also take; KIP-497 (2.7) names this union."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    def advance_high_watermark(self, min_insync: int) -> list[Effect]:
        self.substeps.started("AdvanceHighWatermark", self)
        effects = self._advance_high_watermark(min_insync)
        self.substeps.ended("AdvanceHighWatermark", self, effects)
        return effects

    def _advance_high_watermark(self, min_insync: int) -> list[Effect]:
        """HW = the smallest LEO over the maximal ISR (the leader's own included)."""
        ends = [self.log.log_end_offset]
        for replica in self.maximal_isr():
            if replica != self.broker_id:
                follower = self.followers.get(replica)
                ends.append(follower.log_end_offset if follower else -1)
        candidate = min(ends)
        if candidate <= self.log.high_watermark:
            return []
        self.log.high_watermark = candidate
        topic, number = self.tp
        effects: list[Effect] = [HighWatermarkMoved(topic, number, self.leader_epoch, candidate)]
        while self.pending_acks and self.pending_acks[0].offset < candidate:
            ack = self.pending_acks.pop(0)
            if len(self.isr) >= min_insync:
                effects.append(
                    ProduceAcked(topic, number, ack.payload_id, self.leader_epoch, ack.offset)
                )
            else:
                effects.append(
                    ProduceFailed(topic, number, ack.payload_id, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")
                )
        return effects

    # -- replication (ISR-13, ISR-14) ----------------------------------------------------

    def fetch_request(self, now_ms: int) -> Fetch | None:
        if self.role != Role.FOLLOWER:
            return None
        return Fetch(
            now_ms,
            self.broker_id,
            self.tp.topic,
            self.tp.partition,
            self.leader_epoch,
            self.log.log_end_offset,
            self.log.last_epoch,
        )

    def serve_fetch(self, fetch: Fetch, min_insync: int) -> tuple[FetchResponse, list[Effect]]:
        """The leader's side of a follower's fetch."""

        def answer(
            error: str | None,
            diverging: tuple[int, int] | None = None,
            records: Iterable[Record] = (),
        ) -> FetchResponse:
            return FetchResponse(
                fetch.now_ms,
                self.broker_id,
                fetch.topic,
                fetch.partition,
                fetch.leader_epoch,
                error,
                diverging,
                fetch.fetch_offset,
                tuple(records),
                self.log.high_watermark,
            )

        if self.role != Role.LEADER or fetch.replica_id not in self.followers:
            return answer("NOT_LEADER_OR_FOLLOWER"), []
        if fetch.leader_epoch != self.leader_epoch:
            return answer(
                "FENCED_LEADER_EPOCH"
                if fetch.leader_epoch < self.leader_epoch
                else "UNKNOWN_LEADER_EPOCH"
            ), []
        epoch, end = self.log.end_offset_for_epoch(fetch.last_fetched_epoch)
        if epoch != fetch.last_fetched_epoch or end < fetch.fetch_offset:
            return answer(None, diverging=(epoch, end)), []
        follower = self.followers[fetch.replica_id]
        leader_end = self.log.log_end_offset
        if fetch.fetch_offset >= leader_end:
            follower.last_caught_up_ms = fetch.now_ms
        elif fetch.fetch_offset >= follower.leader_end_at_last_fetch:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch.fetch_offset
        follower.last_fetch_ms, follower.leader_end_at_last_fetch = fetch.now_ms, leader_end
        effects = self.advance_high_watermark(min_insync)
        return answer(None, records=self.log.records[fetch.fetch_offset :]), effects

    def apply_fetch_response(self, response: FetchResponse) -> list[Effect]:
        """The follower's side: truncate where the logs diverge, or append and take the HW."""
        if (
            self.role != Role.FOLLOWER
            or response.leader_id != self.leader
            or response.leader_epoch != self.leader_epoch
            or response.error
        ):
            return []
        if response.diverging is not None:
            epoch, leader_end = response.diverging
            _, own_end = self.log.end_offset_for_epoch(epoch)
            self.log.truncate_to(min(leader_end, own_end))
            return []
        if response.base_offset != self.log.log_end_offset:
            return []  # the log moved since the fetch was made
        for record in response.records:
            self.log.append(record)
        hw = min(response.high_watermark, self.log.log_end_offset)
        if hw <= self.log.high_watermark:
            return []
        self.log.high_watermark = hw
        return [HighWatermarkMoved(self.tp.topic, self.tp.partition, self.leader_epoch, hw)]

    # -- ISR changes (ISR-15, ISR-16) -------------------------------------------------------

    def isr_to_shrink(self, now_ms: int, lag_max_ms: int) -> tuple[int, ...] | None:
        if self.role != Role.LEADER or self.pending_isr is not None:
            return None
        keep = tuple(
            r
            for r in self.isr
            if r == self.broker_id or now_ms - self.followers[r].last_caught_up_ms <= lag_max_ms
        )
        return keep if keep != self.isr else None

    def isr_to_expand(self, replica_id: int) -> tuple[int, ...] | None:
        """A follower joins when its LEO reached the HW and the start of this leader epoch."""
        if self.role != Role.LEADER or self.pending_isr is not None or replica_id in self.isr:
            return None
        follower = self.followers.get(replica_id)
        if follower is None or follower.log_end_offset < max(
            self.log.high_watermark, self.epoch_start_offset
        ):
            return None
        return (*self.isr, replica_id)

    def isr_written(self, isr: tuple[int, ...], zk_version: int) -> None:
        self.isr, self.zk_version, self.pending_isr = isr, zk_version, None

    def resolve_conflict(
        self, published: PartitionState | None, zk_version: int, min_insync: int
    ) -> list[Effect]:
        """StepDown (ISR-17): an ISR write failed; ``published`` is the state re-read from
        ZooKeeper (None: the znode is gone, the topic was deleted). A leader still named at
        its own epoch adopts the published ISR and version; otherwise it stops leading, and
        follows the published leader if that is another broker."""
        self.pending_isr = None
        if (
            published is not None
            and published.leader == self.broker_id
            and published.leader_epoch == self.leader_epoch
        ):
            self.isr_written(published.isr, zk_version)
            return self.advance_high_watermark(min_insync)
        effects = self._lose_leadership()
        if published is not None and published.leader not in (NO_LEADER, self.broker_id):
            self.become_follower(published.leader, published.leader_epoch)
            self.isr, self.zk_version, self.controller_epoch = (
                published.isr,
                zk_version,
                published.controller_epoch,
            )
            effects.append(
                BecameFollower(self.tp.topic, self.tp.partition, self.leader_epoch, self.leader)
            )
        return effects

    def next_shrink_deadline_ms(self, lag_max_ms: int) -> int | None:
        if self.role != Role.LEADER:
            return None
        times = [
            self.followers[r].last_caught_up_ms + lag_max_ms + 1
            for r in self.isr
            if r != self.broker_id
        ]
        return min(times) if times else None
