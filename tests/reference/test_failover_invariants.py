"""Each failover invariant can fail: a mutant of the host (or of the leadership it is told)
breaks exactly the property named, and the Monitor reports it (CF-20 … CF-23).

Two ``OneBroker`` drivers share one Monitor; a test copies log prefixes between them to play
replication, so each scenario states exactly what the followers had when leadership moved.
"""

from __future__ import annotations

import pytest
from test_failover_host import GROUP, PARTITIONS, OneBroker

from coordspec.reference.errors import ErrorCode, InvariantViolation
from coordspec.reference.failover import host as host_module
from coordspec.reference.failover.events import HighWatermarkUpdated, LoadGroup
from coordspec.reference.failover.invariants import INVARIANTS, Monitor
from coordspec.reference.failover.partition import HostedPartition, PartitionState
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.requests import AppendCompleted


def two_brokers() -> tuple[OneBroker, OneBroker]:
    monitor = Monitor(PARTITIONS)
    return OneBroker(1, monitor), OneBroker(2, monitor)


def move_leadership(
    old: OneBroker, new: OneBroker, *, replicated: int, epoch: int, follower_hw: int | None = None
) -> None:
    """``new`` had replicated ``replicated`` batches of ``old``'s log, and learnt the high
    watermark ``follower_hw``, when it was elected at ``epoch``."""
    new.logs[0] = list(old.logs[0][:replicated])
    new.hw[0] = min(old.hw[0], replicated) if follower_hw is None else follower_hw
    new.now_ms = old.now_ms
    new.lead(epoch=epoch)
    old.resign(epoch=epoch)


def test_clean_failover_keeps_every_invariant():
    old, new = two_brokers()
    old.lead()
    member_id, generation = old.stable_group()
    commit = old.commit(5, generation_id=generation, member_id=member_id)
    old.replicate()
    assert old.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NONE
    move_leadership(old, new, replicated=len(old.logs[0]), epoch=2)
    fetched = new.reply(new.fetch())
    assert fetched.topics[0].partitions[0].committed_offset == 5
    assert new.host.serving(0).group(GROUP).generation_id == generation


# -- LoadBeforeServe ---------------------------------------------------------------------


def serve_without_loading(self, event) -> None:
    """Mutant: a new leader serves at once, with whatever (nothing) it has in memory."""
    hosted = HostedPartition(event.partition, event.leader_epoch, PartitionState.SERVING)
    hosted.coordinator = GroupCoordinator(
        self.config, self.choices, now_ms=self.now_ms, complete_appends=False
    )
    self.hosted[event.partition] = hosted


def test_serving_before_loading_breaks_load_before_serve(monkeypatch):
    monkeypatch.setattr(host_module.CoordinatorHost, "_become", serve_without_loading)
    broker = OneBroker()
    with pytest.raises(InvariantViolation, match="LoadBeforeServe") as caught:
        broker.become()
    assert "broker 1 serves offsets partition 0 without having loaded it" in str(caught.value)


def test_answering_while_loading_breaks_load_before_serve(monkeypatch):
    """Mutant: a loading partition already has a coordinator, and requests reach it."""
    original_route = host_module.CoordinatorHost._route

    def become_with_a_coordinator(self, event):
        serve_without_loading(self, event)
        self.hosted[event.partition].state = PartitionState.LOADING

    def route_to_any_coordinator(self, request):
        hosted = self.hosted.get(self.partition_for(request.group_id))
        if hosted is not None and hosted.coordinator is not None:
            self._forward(hosted, request)
        else:
            original_route(self, request)

    monkeypatch.setattr(host_module.CoordinatorHost, "_become", become_with_a_coordinator)
    monkeypatch.setattr(host_module.CoordinatorHost, "_route", route_to_any_coordinator)
    broker = OneBroker()
    broker.become()
    with pytest.raises(InvariantViolation, match="LoadBeforeServe") as caught:
        broker.fetch()
    assert (
        "answered OffsetFetch for group 'group-id' with NONE while still loading offsets partition 0"
        in str(caught.value)
    )


# -- NoCommittedOffsetLost ----------------------------------------------------------------


def acknowledge_on_local_append(monkeypatch) -> None:
    """Mutant: a write is answered once it is in the leader's own log, before any follower has it."""
    original = host_module.CoordinatorHost._drive

    def drive(self, hosted, event, *, deferring=None):
        original(self, hosted, event, deferring=deferring)
        while hosted.appends and hosted.partition not in self._closing:
            offset = min(hosted.appends)
            append_id, _ = hosted.appends.pop(offset)
            original(self, hosted, AppendCompleted(append_id, self.now_ms))

    monkeypatch.setattr(host_module.CoordinatorHost, "_drive", drive)


def test_acknowledging_before_replication_breaks_no_committed_offset_lost(monkeypatch):
    old, new = two_brokers()
    old.lead()
    move = len(old.logs[0])
    acknowledge_on_local_append(monkeypatch)
    commit = old.commit(77)
    assert (
        old.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NONE
    )  # acknowledged, yet not replicated
    with pytest.raises(InvariantViolation, match="NoCommittedOffsetLost") as caught:
        move_leadership(old, new, replicated=move, epoch=2)
    assert "commit of offset 77 was acknowledged, the serving coordinator holds nothing" in str(
        caught.value
    )


# -- NoStaleGenerationAfterFailover ----------------------------------------------------------


def load_to_high_watermark(self, event) -> None:
    """Mutant: a new leader loads only what it knows is committed, up to its high watermark."""
    original_load(
        self,
        LoadGroup(
            event.partition,
            event.leader_epoch,
            event.batches[: event.high_watermark],
            event.high_watermark,
            event.now_ms,
        ),
    )


original_load = host_module.CoordinatorHost._load


def test_loading_only_to_the_high_watermark_breaks_no_stale_generation(monkeypatch):
    """The old leader saw its followers fetch the group record, so the record is committed. The
    new leader has the record but not yet the news (the high watermark reaches a follower
    with its next fetch). Loading to its high watermark misses the committed generation."""
    monkeypatch.setattr(host_module.CoordinatorHost, "_load", load_to_high_watermark)
    old, new = two_brokers()
    old.lead()
    _, generation = old.stable_group()
    with pytest.raises(InvariantViolation, match="NoStaleGenerationAfterFailover") as caught:
        move_leadership(old, new, replicated=len(old.logs[0]), epoch=2, follower_hw=0)
    assert (
        f"generation {generation} was committed, the serving coordinator is at no group at all"
        in str(caught.value)
    )


# -- SingleActiveCoordinator -----------------------------------------------------------------


def test_two_leaders_at_one_epoch_break_single_active_coordinator():
    """A controller that elects without bumping the leader epoch: two brokers serve epoch 1."""
    first, second = two_brokers()
    first.lead(epoch=1)
    with pytest.raises(InvariantViolation, match="SingleActiveCoordinator") as caught:
        second.lead(epoch=1)
    assert "brokers 1 and 2 both serve offsets partition 0 at leader epoch 1" in str(caught.value)


def test_zombie_committing_after_the_new_leader_breaks_single_active_coordinator():
    """A paused old leader whose high watermark still moves (its cached ISR is itself alone,
    an unclean election happened meanwhile) gets a write committed after the new leader did."""
    zombie, leader = two_brokers()
    zombie.lead(epoch=1)
    leader.lead(epoch=2)  # the zombie is never told
    leader.commit(1)
    leader.replicate()
    zombie.commit(2)
    with pytest.raises(InvariantViolation, match="SingleActiveCoordinator") as caught:
        zombie.step(HighWatermarkUpdated(0, len(zombie.logs[0]), zombie.now_ms))
    assert "committed at leader epoch 1 after broker 2 did at leader epoch 2" in str(caught.value)


def test_zombie_whose_high_watermark_is_stuck_never_acknowledges():
    """The clean case: the new leader's followers no longer fetch from the zombie, so its high
    watermark stays, its commit is never acknowledged, and it fails once the zombie learns."""
    zombie, leader = two_brokers()
    zombie.lead(epoch=1)
    leader.lead(epoch=2)
    commit = zombie.commit(9)
    zombie.replicate(upto=zombie.hw[0])  # nobody fetches the new batch
    assert commit not in zombie.replies
    zombie.resign(epoch=2)
    assert zombie.reply(commit).topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR


MUTANTS = {
    "SingleActiveCoordinator": test_two_leaders_at_one_epoch_break_single_active_coordinator,
    "NoCommittedOffsetLost": test_acknowledging_before_replication_breaks_no_committed_offset_lost,
    "LoadBeforeServe": test_serving_before_loading_breaks_load_before_serve,
    "NoStaleGenerationAfterFailover": test_loading_only_to_the_high_watermark_breaks_no_stale_generation,
}


def test_every_invariant_has_a_test_here():
    assert MUTANTS.keys() == INVARIANTS.keys()
