"""The replication model's safety properties, each under one name.

The same names are the TLA+ operators of ``tla/IsrVersionedWrites.tla`` and the rules of
spec/isr-versioned-writes.md. :class:`Monitor` checks all of them on a
:class:`~coordspec.reference.replication.cluster.Cluster` after every step
(``Cluster(..., monitor=Monitor())``) and raises
:class:`~coordspec.reference.errors.InvariantViolation` on the first one that fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordspec.reference.errors import Invariant, InvariantViolation, registry
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import NO_LEADER, TopicPartition

if TYPE_CHECKING:
    from coordspec.reference.replication.cluster import Cluster, StateWrite

INVARIANTS: dict[str, Invariant] = registry(
    Invariant(
        "NoWriteWithStaleVersion",
        "ISR-4",
        "every partition-state write ZooKeeper accepted was conditional on the version current "
        "at that moment",
        tla=True,
    ),
    Invariant(
        "LeaderInIsr",
        "ISR-6",
        "a published leader (not -1) is a member of the published ISR",
        tla=True,
    ),
    Invariant(
        "AtMostOneLeaderCanCommit",
        "ISR-7",
        "per partition at most one broker can commit: running, leading, and followed at its "
        "leader epoch by every other member of the ISR it holds",
        tla=True,
    ),
    Invariant(
        "NoCommittedRecordLost",
        "ISR-13",
        "every acknowledged record is in the log, at its offset, of the published leader once "
        "it has taken up leadership at the published leader epoch",
        tla=True,
    ),
    Invariant(
        "ControllerEpochMonotonic",
        "ISR-3",
        "/controller_epoch never decreases, and no partition state carries a larger controller "
        "epoch",
        tla=True,
    ),
)


def check_no_write_with_stale_version(writes: list[StateWrite]) -> None:
    for write in writes:
        if write.expected_version != write.version_before:
            raise InvariantViolation(
                "NoWriteWithStaleVersion",
                f"{write.path} was written expecting version {write.expected_version} while it was at {write.version_before}",
            )


def check_leader_in_isr(cluster: Cluster) -> None:
    for tp, (state, _) in cluster.published().items():
        if state.leader != NO_LEADER and state.leader not in state.isr:
            raise InvariantViolation(
                "LeaderInIsr", f"{tp}: leader {state.leader} is not in the ISR {list(state.isr)}"
            )


def can_commit(cluster: Cluster, broker_id: int, tp: TopicPartition) -> bool:
    """Running, leading ``tp``, and every other member of the ISR it holds follows it at
    its leader epoch (so its high watermark can advance)."""
    slot = cluster.slots[broker_id]
    broker = slot.broker  # a running slot has one; said again for the type checker
    if not slot.running or broker is None or not broker.leads(tp):
        return False
    partition = broker.partitions[tp]
    for member in partition.isr:
        if member == broker_id:
            continue
        other = cluster.slots.get(member)
        replica = (
            other.broker.partitions.get(tp)
            if other is not None and other.broker is not None
            else None
        )
        if (
            replica is None
            or replica.role != Role.FOLLOWER
            or replica.leader != broker_id
            or replica.leader_epoch != partition.leader_epoch
        ):
            return False
    return True


def check_at_most_one_leader_can_commit(cluster: Cluster) -> None:
    partitions = {
        tp
        for slot in cluster.slots.values()
        if slot.broker is not None
        for tp in slot.broker.partitions
    }
    for tp in sorted(partitions):
        able = [b for b in cluster.leaders(tp) if can_commit(cluster, b, tp)]
        if len(able) > 1:
            raise InvariantViolation(
                "AtMostOneLeaderCanCommit", f"{tp}: brokers {able} can all commit"
            )


def check_no_committed_record_lost(cluster: Cluster) -> None:
    published = cluster.published()
    for tp, records in cluster.committed.items():
        if tp not in published:
            continue
        state, _ = published[tp]
        slot = cluster.slots.get(state.leader)
        if slot is None or slot.broker is None:
            continue
        partition = slot.broker.partitions.get(tp)
        if (
            partition is None
            or partition.role != Role.LEADER
            or partition.leader_epoch != state.leader_epoch
        ):
            continue  # not yet leading at the published epoch
        log = partition.log.records
        for offset, record in sorted(records.items()):
            if offset >= len(log) or log[offset] != record:
                held = log[offset] if offset < len(log) else None
                raise InvariantViolation(
                    "NoCommittedRecordLost",
                    f"{tp}: committed {record} at offset {offset}; leader {state.leader} at epoch {state.leader_epoch} holds {held}",
                )


def check_controller_epoch_monotonic(cluster: Cluster, previous: int | None) -> int | None:
    """Check against the epoch seen before (``previous``); return the epoch now."""
    epoch = cluster.controller_epoch()
    if epoch is None:
        return previous
    if previous is not None and epoch < previous:
        raise InvariantViolation(
            "ControllerEpochMonotonic", f"/controller_epoch went from {previous} to {epoch}"
        )
    for tp, (state, _) in cluster.published().items():
        if state.controller_epoch > epoch:
            raise InvariantViolation(
                "ControllerEpochMonotonic",
                f"{tp} carries controller epoch {state.controller_epoch} > /controller_epoch {epoch}",
            )
    return epoch


def forget_deleted_topics(cluster: Cluster) -> None:
    """A deleted topic's committed records are gone on purpose (topic names are not reused)."""
    topics = {tp.topic for tp in cluster.published()}
    for tp in [tp for tp in cluster.committed if tp.topic not in topics]:
        del cluster.committed[tp]


class Monitor:
    """Checks every invariant after each step of a cluster; keeps what they need across steps."""

    def __init__(self) -> None:
        self.controller_epoch: int | None = None
        self._writes_seen = 0
        self.steps = 0

    def check(self, cluster: Cluster) -> None:
        self.steps += 1
        check_no_write_with_stale_version(cluster.state_writes[self._writes_seen :])
        self._writes_seen = len(cluster.state_writes)
        check_leader_in_isr(cluster)
        check_at_most_one_leader_can_commit(cluster)
        forget_deleted_topics(cluster)
        check_no_committed_record_lost(cluster)
        self.controller_epoch = check_controller_epoch_monotonic(cluster, self.controller_epoch)
