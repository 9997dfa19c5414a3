"""The inputs of the group coordinator: requests, time steps and append completions.

Every input carries ``now_ms``; requests also carry ``request_id`` (the driver's handle
for matching a reply, which may come later: JoinGroup and SyncGroup park) and
``api_version``. Field names follow Kafka's request schemas. Constructing an input
with a version the reference does not model, or a malformed field type, raises
:class:`UsageError`; invalid *values* a client may send (an empty group id, a negative
timeout) are accepted here and answered with Kafka's error codes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.frozen import quicken
from coordspec.reference.group.records import TRANSACTION_RESULTS, Record, TopicPartitions

# API keys and the versions the reference answers (Kafka 4.x classic groups).
VERSIONS: dict[str, range] = {
    "JoinGroup": range(10),
    "SyncGroup": range(6),
    "Heartbeat": range(5),
    "LeaveGroup": range(6),
    "OffsetCommit": range(2, 10),
    "OffsetFetch": range(1, 10),
    "DescribeGroups": range(6),
    "ListGroups": range(6),
    "DeleteGroups": range(3),
    "OffsetDelete": range(1),
    "TxnOffsetCommit": range(6),
    "ConsumerGroupHeartbeat": range(2),
    "ConsumerGroupDescribe": range(1),
}

API_KEYS: dict[str, int] = {
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "TxnOffsetCommit": 28,
    "DeleteGroups": 42,
    "OffsetDelete": 47,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
}


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)


def _check_time(name: str, now_ms: object) -> None:
    if not (isinstance(now_ms, int) and not isinstance(now_ms, bool) and now_ms >= 0):
        raise UsageError(f"{name}: now_ms must be a non-negative int, got {now_ms!r}")


@dataclass(frozen=True, slots=True)
class Request:
    """Fields every request has; subclasses add Kafka's fields."""

    request_id: int | str
    api_version: int
    now_ms: int

    @property
    def api(self) -> str:
        return type(self).__name__

    @property
    def group_ids(self) -> tuple[str, ...]:
        """The groups this request is about: its group, the groups it names (DescribeGroups,
        DeleteGroups; null names are no group), or none (ListGroups)."""
        group_id: str | None = getattr(self, "group_id", None)
        if group_id is not None:
            return (group_id,)
        named: tuple[str | None, ...] = getattr(self, "groups", ()) or getattr(
            self, "groups_names", ()
        )
        return tuple(g for g in named if g is not None)

    @property
    def trace_group(self) -> str:
        """The group a trace files this request under: the first it is about, or "" for
        ListGroups (spec/trace-format.md)."""
        return next(iter(self.group_ids), "")

    def __post_init__(self) -> None:
        _check_time(self.api, self.now_ms)
        versions = VERSIONS[self.api]
        if not (isinstance(self.api_version, int) and self.api_version in versions):
            raise UsageError(
                f"{self.api}: version {self.api_version!r} is not modelled "
                f"(the reference answers v{versions.start}-v{versions.stop - 1})"
            )


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    metadata: bytes = b""

    def __deepcopy__(self, memo: dict[int, object]) -> Protocol:
        return self  # immutable: copies of a coordinator (the oracle's hypotheses) share it


@dataclass(frozen=True, slots=True)
class JoinGroup(Request):
    group_id: str = ""
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = -1  # v1+; v0 uses the session timeout
    member_id: str = ""
    group_instance_id: str | None = None  # v5+
    protocol_type: str = "consumer"
    protocols: tuple[Protocol, ...] = ()
    reason: str | None = None  # v8+
    client_id: str = "client"
    client_host: str = "/127.0.0.1"

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            all(isinstance(p, Protocol) for p in self.protocols),
            "JoinGroup: protocols must be Protocol values",
        )
        if not (self.group_instance_id is None or self.api_version >= 5):
            raise UsageError(f"JoinGroup: group_instance_id needs v5+, got v{self.api_version}")

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        # Kafka's JoinGroupRequest copies the session timeout into v0 requests.
        return self.session_timeout_ms if self.api_version == 0 else self.rebalance_timeout_ms

    @property
    def requires_known_member_id(self) -> bool:
        """v4+ (KIP-394): a dynamic member first receives its id via MEMBER_ID_REQUIRED."""
        return self.api_version >= 4


@dataclass(frozen=True, slots=True)
class Assignment:
    member_id: str
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class SyncGroup(Request):
    group_id: str = ""
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None  # v3+
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+
    assignments: tuple[Assignment, ...] = ()

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            all(isinstance(a, Assignment) for a in self.assignments),
            "SyncGroup: assignments must be Assignment values",
        )
        if not (self.group_instance_id is None or self.api_version >= 3):
            raise UsageError(f"SyncGroup: group_instance_id needs v3+, got v{self.api_version}")


@dataclass(frozen=True, slots=True)
class Heartbeat(Request):
    group_id: str = ""
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None  # v3+

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        if not (self.group_instance_id is None or self.api_version >= 3):
            raise UsageError(f"Heartbeat: group_instance_id needs v3+, got v{self.api_version}")


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroup(Request):
    group_id: str = ""
    members: tuple[MemberIdentity, ...] = ()

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            all(isinstance(m, MemberIdentity) for m in self.members),
            "LeaveGroup: members must be MemberIdentity values",
        )
        if self.api_version < 3 and not (
            len(self.members) == 1 and self.members[0].group_instance_id is None
        ):
            raise UsageError(
                f"LeaveGroup v{self.api_version} carries exactly one member id and no instance id"
            )


@dataclass(frozen=True, slots=True)
class CommitPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1  # v6+
    committed_metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class CommitTopic:
    name: str
    partitions: tuple[CommitPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommit(Request):
    group_id: str | None = ""
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None  # v7+
    retention_time_ms: int = -1  # v2-v4
    topics: tuple[CommitTopic, ...] = ()

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            all(isinstance(t, CommitTopic) for t in self.topics),
            "OffsetCommit: topics must be CommitTopic values",
        )
        if not (self.group_instance_id is None or self.api_version >= 7):
            raise UsageError(f"OffsetCommit: group_instance_id needs v7+, got v{self.api_version}")
        if not (self.retention_time_ms == -1 or self.api_version <= 4):
            raise UsageError(
                f"OffsetCommit: retention_time_ms exists only in v2-v4, got v{self.api_version}"
            )


@dataclass(frozen=True, slots=True)
class TxnOffsetCommit(Request):
    """GM-57: offsets committed by producer ``producer_id``'s transaction, pending until the
    transaction's marker (WriteTxnMarker). The transaction coordinator's own checks (the
    producer's epoch, whether the group was added to the transaction) are not the group
    coordinator's: a driver that models them answers before this request reaches it."""

    transactional_id: str = ""
    group_id: str | None = ""
    producer_id: int = 0
    producer_epoch: int = 0
    generation_id: int = -1  # v3+
    member_id: str = ""  # v3+
    group_instance_id: str | None = None  # v3+
    topics: tuple[CommitTopic, ...] = ()

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            all(isinstance(t, CommitTopic) for t in self.topics),
            "TxnOffsetCommit: topics must be CommitTopic values",
        )
        _require(
            isinstance(self.producer_id, int) and self.producer_id >= 0,
            f"TxnOffsetCommit: producer_id must be a producer's id (>= 0), got {self.producer_id!r}",
        )
        if self.api_version < 3 and (
            self.generation_id != -1 or self.member_id or self.group_instance_id is not None
        ):
            raise UsageError(
                "TxnOffsetCommit: generation_id, member_id and group_instance_id need v3+, "
                f"got v{self.api_version}"
            )


@dataclass(frozen=True, slots=True)
class FetchTopic:
    name: str
    partition_indexes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FetchGroup:
    """A group an OffsetFetch v8+ names after its first (Kafka's OffsetFetchRequestGroup)."""

    group_id: str
    topics: tuple[FetchTopic, ...] | None = ()  # None = every committed partition
    member_id: str | None = None  # v9+
    member_epoch: int = -1  # v9+


@dataclass(frozen=True, slots=True)
class OffsetFetch(Request):
    """The first group's fields at the top, as v0-7 carry it; from v8 the request may name
    more groups (``other_groups``), each answered on its own (GM-54)."""

    group_id: str | None = ""
    topics: tuple[FetchTopic, ...] | None = ()  # None (v2+) = every committed partition
    require_stable: bool = False  # v7+, for every group
    member_id: str | None = None  # v9+ (KIP-848): a classic group does not read it
    member_epoch: int = -1  # v9+
    other_groups: tuple[FetchGroup, ...] = ()  # v8+

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            self.topics is not None or self.api_version >= 2,
            "OffsetFetch: all-partitions fetch (topics=None) needs v2+",
        )
        _require(
            all(isinstance(g, FetchGroup) for g in self.other_groups),
            "OffsetFetch: other_groups must be FetchGroup values",
        )
        if self.other_groups and self.api_version < 8:
            raise UsageError(f"OffsetFetch: several groups need v8+, got v{self.api_version}")
        members = (
            (self.member_id, self.member_epoch),
            *((g.member_id, g.member_epoch) for g in self.other_groups),
        )
        if self.api_version < 9 and members != ((None, -1),) * len(members):
            raise UsageError(
                f"OffsetFetch: member_id and member_epoch need v9+, got v{self.api_version}"
            )

    @property
    def group_ids(self) -> tuple[str, ...]:
        first = () if self.group_id is None else (self.group_id,)
        return (*first, *(g.group_id for g in self.other_groups))

    def each_group(self) -> tuple[OffsetFetch, ...]:
        """The request as one per group it names, in order, each with this one's envelope."""
        others = tuple(
            OffsetFetch(
                self.request_id,
                self.api_version,
                self.now_ms,
                group_id=g.group_id,
                topics=g.topics,
                require_stable=self.require_stable,
                member_id=g.member_id,
                member_epoch=g.member_epoch,
            )
            for g in self.other_groups
        )
        first = dataclasses.replace(self, other_groups=()) if others else self
        return (first, *others)


@dataclass(frozen=True, slots=True)
class DescribeGroups(Request):
    groups: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class ListGroups(Request):
    states_filter: tuple[str, ...] = ()  # v4+
    types_filter: tuple[str, ...] = ()  # v5+

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        if self.types_filter and self.api_version < 5:
            raise UsageError(f"ListGroups: types_filter needs v5+, got v{self.api_version}")


@dataclass(frozen=True, slots=True)
class DeleteGroups(Request):
    groups_names: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeletePartition:
    partition_index: int


@dataclass(frozen=True, slots=True)
class OffsetDeleteTopic:
    name: str
    partitions: tuple[OffsetDeletePartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetDelete(Request):
    group_id: str = ""
    topics: tuple[OffsetDeleteTopic, ...] = ()

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            all(isinstance(t, OffsetDeleteTopic) for t in self.topics),
            "OffsetDelete: topics must be OffsetDeleteTopic values",
        )


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeat(Request):
    """KIP-848's one request of a consumer group member (CG-1..CG-38). ``member_epoch``: 0 to
    join, -1 to leave, -2 for a static member leaving for a while. Fields left None did not
    change since the member's last heartbeat. ``client_id`` and ``client_host`` come from the
    request's header and connection."""

    group_id: str = ""
    member_id: str = ""
    member_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None  # v1+
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    client_id: str = "client"
    client_host: str = "/127.0.0.1"

    def __post_init__(self) -> None:
        Request.__post_init__(self)
        _require(
            self.topic_partitions is None
            or all(isinstance(t, TopicPartitions) for t in self.topic_partitions),
            "ConsumerGroupHeartbeat: topic_partitions must be TopicPartitions values",
        )
        if not (self.subscribed_topic_regex is None or self.api_version >= 1):
            raise UsageError(
                f"ConsumerGroupHeartbeat: subscribed_topic_regex needs v1+, got v{self.api_version}"
            )


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribe(Request):
    """CG-50: the consumer groups ``group_ids`` names, in full."""

    group_ids: tuple[str, ...] = ()
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class Tick:
    """Time moves to ``now_ms``; timers due by then fire."""

    now_ms: int

    def __post_init__(self) -> None:
        _check_time("Tick", self.now_ms)


@dataclass(frozen=True, slots=True)
class AppendCompleted:
    """The driver's answer to an :class:`~coordspec.reference.group.effects.AppendRecords` effect."""

    append_id: int
    now_ms: int
    error: ErrorCode = ErrorCode.NONE

    def __post_init__(self) -> None:
        _check_time("AppendCompleted", self.now_ms)


@dataclass(frozen=True, slots=True)
class FailNextWrite:
    """The log will refuse this coordinator's next append with ``error``, before any of it
    is written (GM-23, GM-44): for a coordinator that completes its own appends; a driver
    that owns its log answers ``AppendCompleted`` with the error instead."""

    error: ErrorCode
    now_ms: int

    def __post_init__(self) -> None:
        _check_time("FailNextWrite", self.now_ms)
        _require(
            isinstance(self.error, ErrorCode) and self.error != ErrorCode.NONE,
            f"FailNextWrite: error must be an ErrorCode other than NONE, got {self.error!r}",
        )


@dataclass(frozen=True, slots=True)
class WriteTxnMarker:
    """GM-58: the transaction coordinator ends producer ``producer_id``'s transaction on the
    partition of ``group_id`` (WriteTxnMarkers): the marker is written to the log, and once
    it is, the producer's pending offsets are committed or dropped in every group there."""

    group_id: str
    producer_id: int
    result: str  # "COMMIT" or "ABORT"
    now_ms: int

    def __post_init__(self) -> None:
        _check_time("WriteTxnMarker", self.now_ms)
        _require(
            self.result in TRANSACTION_RESULTS,
            f"WriteTxnMarker: result must be COMMIT or ABORT, got {self.result!r}",
        )
        _require(
            isinstance(self.producer_id, int) and self.producer_id >= 0,
            f"WriteTxnMarker: producer_id must be a producer's id (>= 0), got {self.producer_id!r}",
        )


@dataclass(frozen=True, slots=True)
class LoadGroups:
    """This coordinator now leads the partition holding ``records`` (read from its start)."""

    records: tuple[Record, ...]
    now_ms: int

    def __post_init__(self) -> None:
        _check_time("LoadGroups", self.now_ms)


@dataclass(frozen=True, slots=True)
class UnloadGroups:
    """This coordinator no longer leads the partition: its groups become Dead."""

    now_ms: int

    def __post_init__(self) -> None:
        _check_time("UnloadGroups", self.now_ms)


@dataclass(frozen=True, slots=True)
class ResolveRegularExpressions:
    """CG-68: the coordinator resolves the regular expressions ``group_id``'s members
    subscribe to, against the topics it knows now. Kafka does so asynchronously after a
    heartbeat brings a new regex, and every refresh interval; the driver says when."""

    group_id: str
    now_ms: int

    def __post_init__(self) -> None:
        _check_time("ResolveRegularExpressions", self.now_ms)


@dataclass(frozen=True, slots=True)
class NewMetadataImage:
    """CG-70: the broker's topics and their partition counts are now ``topics`` (Kafka's
    onNewMetadataImage), known by the ids ``topic_ids`` gives (a topic it leaves out is known
    by its name). A topic deleted and created again is a new topic: give it a new id."""

    topics: Mapping[str, int]
    now_ms: int
    topic_ids: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_time("NewMetadataImage", self.now_ms)


Event = (
    Request
    | Tick
    | AppendCompleted
    | FailNextWrite
    | WriteTxnMarker
    | LoadGroups
    | UnloadGroups
    | ResolveRegularExpressions
    | NewMetadataImage
)
GROUP_REQUESTS = (
    JoinGroup,
    SyncGroup,
    Heartbeat,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    OffsetDelete,
)


quicken(globals())  # cheaper constructors (reference/frozen.py)
