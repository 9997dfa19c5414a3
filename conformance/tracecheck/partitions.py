"""Check the events of one partition (in one run) against the replication invariants: the
partition half of :func:`~coordspec.conformance.tracecheck.replay.check_key`.

The records (kind ``partition``, spec/trace-format.md) rebuild what the checker needs of the
cluster: the state ZooKeeper publishes (from the accepted writes), ``/controller_epoch``, each
broker's replica of the partition (role, leader, leader epoch, ISR, log, high watermark, as
the records report it after each event), which brokers run, and the records acknowledged
with acks=all. :class:`PartitionView` offers that as the replication reference's ``Cluster``
does, so the invariants of :mod:`coordspec.reference.replication.invariants` run on it unchanged.

A write is checked when it happens (``NoWriteWithStaleVersion``), an acknowledgement too (a
record acknowledged with acks=all must be below the leader's high watermark, ISR-12), and the
state invariants (``LeaderInIsr``, ``AtMostOneLeaderCanCommit``, ``NoCommittedRecordLost``,
``ControllerEpochMonotonic``) after each step: records of one step (same ``step``) are
applied together, as the reference's Monitor checks after each step of its cluster. The
first violation ends the key, as for groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordspec.conformance.trace.format import WRITE_EVENTS, PartitionRecord
from coordspec.reference.errors import InvariantViolation
from coordspec.reference.replication import invariants
from coordspec.reference.replication.cluster import StateWrite
from coordspec.reference.replication.log import Record, ReplicaLog
from coordspec.reference.replication.partition import Role
from coordspec.reference.replication.znodes import PartitionState, TopicPartition, state_path

# The rule (spec/isr-versioned-writes.md) each event belongs to; an invariant's is in
# invariants.INVARIANTS.
WRITE_RULES = {
    "InitLeaders": "ISR-8",
    "ElectLeader": "ISR-4",
    "ShrinkIsr": "ISR-15",
    "ExpandIsr": "ISR-16",
}
EVENT_RULES = {
    **WRITE_RULES,
    "LeaderAndIsr": "ISR-11",
    "Produce": "ISR-12",
    "AdvanceHighWatermark": "ISR-13",
    "Replicate": "ISR-14",
    "StepDown": "ISR-17",
    "ExpireSession": "ISR-18",
    "PauseBroker": "ISR-18",
    "ResumeBroker": "ISR-18",
    "CrashBroker": "ISR-18",
    "StartBroker": "ISR-18",
}


# The checkers' keys are strings: a group's is its id, a partition's begins with NUL and "p".
# Kafka takes any group id, so one that itself begins with NUL gets NUL and "g" in front.
_PARTITION, _ESCAPED_GROUP = "\x00p", "\x00g"


def key_of(topic: str, partition: int) -> str:
    """The key of a partition's records: no group's key can equal it."""
    return f"{_PARTITION}{topic}\x00{partition}"


def group_key(group_id: str) -> str:
    return _ESCAPED_GROUP + group_id if group_id.startswith("\x00") else group_id


def is_partition_key(key: str) -> bool:
    return key.startswith(_PARTITION)


def group_of(key: str) -> str:
    """The group id of a group's key."""
    return key.removeprefix(_ESCAPED_GROUP) if key.startswith(_ESCAPED_GROUP) else key


def shown(key: str) -> str:
    """``topic-partition`` for people."""
    topic, partition = key.removeprefix(_PARTITION).rsplit("\x00", 1)
    return f"{topic}-{partition}"


# -- the view the reference's invariants read -------------------------------------------------


@dataclass
class _Replica:
    """What the invariants read of a broker's replica (coordspec.reference.replication.partition.Partition)."""

    role: Role = Role.NONE
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    log: ReplicaLog = field(default_factory=ReplicaLog)


@dataclass
class _Broker:
    partitions: dict[TopicPartition, _Replica] = field(default_factory=dict)

    def leads(self, tp: TopicPartition) -> bool:
        replica = self.partitions.get(tp)
        return replica is not None and replica.role == Role.LEADER


@dataclass
class _Slot:
    broker: _Broker | None = None  # None: crashed or never started
    paused: bool = False
    disk: ReplicaLog = field(default_factory=ReplicaLog)  # the log outlives a crash

    @property
    def running(self) -> bool:
        return self.broker is not None and not self.paused


class PartitionView:
    """One partition's cluster as the trace tells it, read as the invariants read a ``Cluster``."""

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.slots: dict[int, _Slot] = {}
        self.state: tuple[PartitionState, int] | None = None  # published, with its zk_version
        self.zk_controller_epoch: int | None = None
        self.committed: dict[TopicPartition, dict[int, Record]] = {}

    def published(self) -> dict[TopicPartition, tuple[PartitionState, int]]:
        return {self.tp: self.state} if self.state is not None else {}

    def controller_epoch(self) -> int | None:
        return self.zk_controller_epoch

    def leaders(self, tp: TopicPartition) -> list[int]:
        return [b for b, s in self.slots.items() if s.broker is not None and s.broker.leads(tp)]

    def slot(self, broker_id: int) -> _Slot:
        return self.slots.setdefault(broker_id, _Slot(broker=_Broker()))

    def apply(self, record: PartitionRecord) -> None:
        """Take the record's news: a published state, a broker's lifecycle, a replica's state."""
        if record.event in WRITE_EVENTS:
            self.zk_controller_epoch = record.zk_controller_epoch
            if record.outcome == "ok":
                written = PartitionState(
                    record.leader, record.leader_epoch, tuple(record.isr), record.controller_epoch
                )
                self.state = (written, record.zk_version if record.zk_version is not None else -1)
            return
        slot = self.slot(record.broker)
        if record.event == "CrashBroker":
            slot.broker, slot.paused = None, False
        elif record.event == "StartBroker":
            slot.broker, slot.paused = _Broker(), False
        elif record.event == "PauseBroker":
            slot.paused = True
        elif record.event == "ResumeBroker":
            slot.paused = False
        if record.log is not None:
            slot.disk = ReplicaLog(
                [Record(epoch, payload) for epoch, payload in record.log], slot.disk.high_watermark
            )
        if record.high_watermark is not None:
            slot.disk.high_watermark = record.high_watermark
        if record.role is not None and slot.broker is not None:
            replica = slot.broker.partitions.setdefault(self.tp, _Replica())
            replica.role = Role(record.role)
            replica.leader = record.leader if record.leader is not None else replica.leader
            replica.leader_epoch = (
                record.leader_epoch if record.leader_epoch is not None else replica.leader_epoch
            )
            replica.isr = tuple(record.isr) if record.isr is not None else replica.isr
        if slot.broker is not None and self.tp in slot.broker.partitions:
            slot.broker.partitions[self.tp].log = slot.disk

    def check_state(self, previous_epoch: int | None) -> int | None:
        """The state invariants, by the reference's own checks; the controller epoch now."""
        invariants.check_leader_in_isr(self)
        invariants.check_at_most_one_leader_can_commit(self)
        invariants.check_no_committed_record_lost(self)
        return invariants.check_controller_epoch_monotonic(self, previous_epoch)


# -- the replay -----------------------------------------------------------------------------


@dataclass
class Finding:
    index: int  # the record it is found at
    rule: str
    invariant: str
    message: str


def replay(records: list[PartitionRecord]) -> tuple[Finding | None, list[str]]:
    """Replay one partition's records (in order); the first violation, and the rules exercised."""
    if not records:
        return None, []
    first = records[0]
    view = PartitionView(TopicPartition(first.topic, first.partition))
    epoch: int | None = None
    exercised: list[str] = []
    for index, record in enumerate(records):
        if index and _new_step(records[index - 1], record):
            try:
                epoch = view.check_state(epoch)
            except InvariantViolation as exc:
                return Finding(
                    index - 1, invariants.INVARIANTS[exc.invariant].rule, exc.invariant, exc.detail
                ), exercised
        found = _check_event(view, record)
        if found is not None:
            rule, invariant, message = found
            return Finding(index, rule, invariant, message), exercised
        view.apply(record)
        if record.event in EVENT_RULES:
            exercised.append(EVENT_RULES[record.event])
        if record.event == "Produce" and record.outcome == "acknowledged":
            _acknowledge(view, record)
    try:
        view.check_state(epoch)
    except InvariantViolation as exc:
        return Finding(
            len(records) - 1, invariants.INVARIANTS[exc.invariant].rule, exc.invariant, exc.detail
        ), exercised
    return None, exercised


def _new_step(before: PartitionRecord, record: PartitionRecord) -> bool:
    return record.step is None or before.step != record.step


def _check_event(view: PartitionView, record: PartitionRecord) -> tuple[str, str, str] | None:
    """A violation the record shows by itself: an accepted stale write, an early ack."""
    if record.event in WRITE_EVENTS and record.outcome == "ok":
        path = state_path(view.tp)
        before = record.zk_version_before if record.zk_version_before is not None else -1
        try:
            invariants.check_no_write_with_stale_version(
                [StateWrite(path, record.expected_zk_version, before)]
            )
        except InvariantViolation as exc:
            return (
                WRITE_RULES[record.event],
                exc.invariant,
                f"broker {record.broker}'s {record.event}: {exc.detail}",
            )
    if record.event == "Produce" and record.outcome == "acknowledged":
        slot = view.slots.get(record.broker)
        hw = (
            record.high_watermark
            if record.high_watermark is not None
            else (slot.disk.high_watermark if slot else 0)
        )
        if record.offset >= hw:
            message = (
                f"broker {record.broker} acknowledged offset {record.offset} with acks=all while its high "
                f"watermark is {hw}: the ISR does not have the record yet"
            )
            return "ISR-12", "", message
    return None


def _acknowledge(view: PartitionView, record: PartitionRecord) -> None:
    log = view.slot(record.broker).disk.records
    appended = (
        log[record.offset]
        if record.offset < len(log)
        else Record(record.leader_epoch, record.payload_id)
    )
    view.committed.setdefault(view.tp, {})[record.offset] = appended


def describe(record: PartitionRecord) -> str:
    """One partition event in a few words, for a violation's context."""
    text = f"{record.event} by broker {record.broker}"
    if record.event in WRITE_EVENTS:
        text += (
            f" expecting zk_version {record.expected_zk_version} (was {record.zk_version_before}): {record.outcome}, "
            f"leader {record.leader} epoch {record.leader_epoch} isr {record.isr}"
        )
    elif record.event == "Produce":
        text += f" offset {record.offset} {record.outcome}"
    if record.event not in WRITE_EVENTS and record.role is not None:
        text += f" [{record.role} epoch {record.leader_epoch} isr {record.isr} hw {record.high_watermark} leo {record.log_end_offset}]"
    if record.truncated_to is not None:
        text += f" truncated to {record.truncated_to}"
    return text
