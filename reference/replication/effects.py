"""Outputs of the replication model: ZooKeeper operations to run, requests to send, and
notices for the layer above (a group coordinator riding on an offsets partition)."""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.frozen import quicken
from coordspec.reference.replication.events import FetchResponse
from coordspec.reference.replication.messages import ControllerRequest
from coordspec.reference.zookeeper import Op


@dataclass(frozen=True, slots=True)
class ZkCall:
    """Run ``op`` on this broker's ZooKeeper session; answer with ``ZkResult(call_id=...)``.
    Calls emitted together may go out pipelined, in the order emitted (ZooKeeper applies
    one session's requests in order)."""

    call_id: int
    op: Op


@dataclass(frozen=True, slots=True)
class SendRequest:
    """The controller sends ``request`` to broker ``broker_id``."""

    broker_id: int
    request: ControllerRequest


# -- controller notices --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BecameController:
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class ResignedController:
    controller_epoch: int
    reason: str


@dataclass(frozen=True, slots=True)
class LeadersChanged:
    """The controller finished a ChangeLeaders round: every partition-state write of it is
    done (acknowledged by ZooKeeper) and its LeaderAndIsr requests are emitted.
    ``written`` counts partition states written, ``multis`` the write requests it took."""

    reason: str
    written: int
    multis: int


# -- partition notices (the hooks a layer above uses) ------------------------------------


@dataclass(frozen=True, slots=True)
class BecameLeader:
    topic: str
    partition: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BecameFollower:
    topic: str
    partition: int
    leader_epoch: int
    leader: int  # -1: the published state names no leader


@dataclass(frozen=True, slots=True)
class LeadershipLost:
    """This broker led the partition at ``leader_epoch`` and no longer does (it became a
    follower, stepped down, or stopped the replica). Sent before BecameFollower."""

    topic: str
    partition: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class IsrUpdated:
    """This leader's ShrinkIsr or ExpandIsr was written: ZooKeeper holds ``isr`` at
    ``zk_version``, and the leader has adopted it."""

    topic: str
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int


@dataclass(frozen=True, slots=True)
class ReplicaStopped:
    topic: str
    partition: int
    deleted: bool


@dataclass(frozen=True, slots=True)
class HighWatermarkMoved:
    """The replica's HW rose to ``high_watermark``: on a leader, records below it are
    committed."""

    topic: str
    partition: int
    leader_epoch: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class ProduceAccepted:
    """The leader appended the record at ``offset``; the ack waits for the HW."""

    topic: str
    partition: int
    payload_id: int
    leader_epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class ProduceAcked:
    """acks=all: the HW passed the record with at least min.insync.replicas in the ISR."""

    topic: str
    partition: int
    payload_id: int
    leader_epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class ProduceFailed:
    topic: str
    partition: int
    payload_id: int
    error: str  # Kafka's error name: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND


Effect = (
    ZkCall
    | SendRequest
    | BecameController
    | ResignedController
    | LeadersChanged
    | BecameLeader
    | BecameFollower
    | LeadershipLost
    | IsrUpdated
    | ReplicaStopped
    | HighWatermarkMoved
    | ProduceAccepted
    | ProduceAcked
    | ProduceFailed
    | FetchResponse  # a leader's answer to a Fetch, an event of the follower it goes to
)


quicken(globals())  # cheaper constructors (reference/frozen.py)
