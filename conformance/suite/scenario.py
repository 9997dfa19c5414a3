"""The scenario format, as pydantic models. The format is documented for authors in
conformance/scenarios/README.md; this module is its definition.

A file holds one scenario: what it checks (one sentence), the spec rules it checks, the
API versions it applies to, the broker settings it assumes, its clients, and its steps.
A step is one of

* a request: ``- c1: JoinGroup`` followed by the request's fields and ``expect``;
* ``- await: c1``: the reply to c1's parked request arrives, ``within`` some time (or,
  with ``expect: parked``, does not arrive within that time);
* ``- sleep: 3000``: time passes (virtual for the reference target, real for a broker);
* ``- fault: restart``: a fault, run through the target's fault hooks.

Values may be symbols: ``$group`` (this run's group id), ``$m1`` (the member id the broker
gave client c1), ``$gen`` (the generation the broker last returned), ``$gen1`` (c1's), or a
name of the author's choosing bound by an expectation (``member_id: $old``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from coordspec.conformance.suite.versions import VersionError, parse_range
from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.transitions import GroupState

SYMBOL = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*$")
CLIENT = re.compile(r"^c[1-9][0-9]*$")
RULE = re.compile(r"^(GM|CF|CG)-[0-9]+$")
PARTITION = re.compile(r"^(?P<topic>.+)-(?P<partition>[0-9]+)$")
ERRORS = {e.name: e for e in ErrorCode}
# A classic group's states, and a consumer group's (CG-30) besides Empty and Stable.
STATES = {str(s) for s in GroupState} | {"Assigning", "Reconciling"}
UNCHANGED = "unchanged"  # a ConsumerGroupHeartbeat answer that carries no assignment


class Invalid(ValueError):
    """A value of the wrong kind or form; the message says what was expected."""


def is_symbol(value: object) -> bool:
    return isinstance(value, str) and (bool(SYMBOL.match(value)) or value.startswith("$group"))


def _int_or_symbol(value: object) -> object:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if is_symbol(value):
        return value
    raise Invalid(f"expected an integer or a $symbol, got {value!r}")


def _partition(value: object) -> str:
    if not isinstance(value, str) or not PARTITION.match(value):
        raise Invalid(f"expected a partition as topic-N (foo-0), got {value!r}")
    return value


IntOrSymbol = Annotated[int | str, BeforeValidator(_int_or_symbol)]
PartitionName = Annotated[str, BeforeValidator(_partition)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- expectations --------------------------------------------------------------------------


@dataclass(frozen=True)
class Matcher:
    """An expected value: ``equal`` to a value (a bound symbol resolves first; an unbound
    name binds), ``one_of`` several, or ``not`` a value."""

    kind: Literal["equal", "one_of", "not"]
    value: Any


def _matcher(value: object, check) -> Matcher:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("one_of", "not"):
        kind, inner = next(iter(value.items()))
        if kind == "one_of":
            if not isinstance(inner, list) or not inner:
                raise Invalid("one_of takes a non-empty list")
            return Matcher("one_of", tuple(_plain(v, check) for v in inner))
        return Matcher("not", _plain(inner, check))
    return Matcher("equal", _plain(value, check))


def _plain(value: object, check) -> object:
    return value if is_symbol(value) else check(value)


def _error_name(value: object) -> str:
    if value not in ERRORS:
        raise Invalid(f"{value!r} is not an error name such as NONE or ILLEGAL_GENERATION")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Invalid(f"expected an integer, got {value!r}")
    return value


def _str_or_null(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise Invalid(f"expected a string or null, got {value!r}")
    return value


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {value!r}")
    return value


def _assignment(value: object) -> tuple | str:
    return value if value == UNCHANGED else _list_of(_partition)(value)


def _state(value: object) -> str:
    if value not in STATES:
        raise Invalid(f"{value!r} is not a group state ({', '.join(sorted(STATES))})")
    return value


def _list_of(check):
    def checked(value: object) -> tuple:
        if not isinstance(value, list):
            raise Invalid(f"expected a list, got {value!r}")
        return tuple(_plain(v, check) for v in value)

    return checked


class Pairs(tuple):
    """An expected mapping, as (key, value) pairs whose keys may be symbols."""

    __slots__ = ()


def _map_of(key_check, value_check):
    def checked(value: object) -> Pairs:
        if not isinstance(value, dict):
            raise Invalid(f"expected a mapping, got {value!r}")
        return Pairs((_plain(k, key_check), _plain(v, value_check)) for k, v in value.items())

    return checked


def _member(value: object) -> str:
    if not isinstance(value, str):
        raise Invalid(f"expected a member id or $symbol, got {value!r}")
    return value


def _topic(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid(f"expected a topic name, got {value!r}")
    return value


def _group_answers(value: object) -> Pairs:
    """OffsetFetch v8+: each named group's own expectations, by group id."""
    if not isinstance(value, dict) or not value:
        raise Invalid(f"expected a mapping of group ids to their expectations, got {value!r}")
    answers = []
    for group, expected in value.items():
        if not isinstance(group, str) or not isinstance(expected, dict):
            raise Invalid(f"expected a group id and a mapping of expectations, got {group!r}")
        try:
            parsed = parse_expectation("OffsetFetch", expected, _FETCHED_GROUP)
        except ExpectationError as exc:
            raise Invalid(f"{group}: {exc}") from None
        answers.append((group, parsed))
    return Pairs(answers)


# What each expectation key means is in conformance/scenarios/README.md; ``expect.py`` reads it.
EXPECTATIONS = {
    "error": _error_name,
    "member_id": _member,
    "generation_id": _int,
    "leader": _member,
    "protocol_name": _str_or_null,
    "protocol_type": _str_or_null,
    "skip_assignment": _bool,
    "members": _list_of(_member),
    "instances": _map_of(_member, _str_or_null),
    "subscriptions": _map_of(_member, _list_of(_topic)),
    "assignment": _assignment,
    "assignment_encoded": _bool,
    "offsets": _map_of(_partition, _int),
    "leader_epochs": _map_of(_partition, _int),
    "metadata": _map_of(_partition, _str_or_null),
    "partitions": _map_of(_partition, _error_name),
    "leave": _map_of(_member, _error_name),
    "state": _state,
    "protocol": _str_or_null,
    "listed": _bool,
    "groups": _group_answers,
    "group_type": _str_or_null,
    "member_epoch": _int,
    "heartbeat_interval_ms": _int,
    "group_epoch": _int,
    "assignment_epoch": _int,
}
_FETCHED_GROUP = ("error", "offsets", "leader_epochs", "metadata", "partitions")  # a group's

EXPECTATIONS_BY_API = {
    "JoinGroup": (
        "error",
        "member_id",
        "generation_id",
        "leader",
        "protocol_name",
        "protocol_type",
        "skip_assignment",
        "members",
        "instances",
        "subscriptions",
    ),
    "SyncGroup": ("error", "assignment", "assignment_encoded", "protocol_name", "protocol_type"),
    "Heartbeat": ("error",),
    "LeaveGroup": ("error", "leave"),
    "OffsetCommit": ("error", "partitions"),
    "OffsetFetch": (*_FETCHED_GROUP, "groups"),
    "DescribeGroups": ("error", "state", "protocol", "protocol_type", "members"),
    "ListGroups": ("error", "listed", "state", "protocol_type", "group_type"),
    "DeleteGroups": ("error",),
    "OffsetDelete": ("error", "partitions"),
    "TxnOffsetCommit": ("error", "partitions"),
    "ConsumerGroupHeartbeat": (
        "error",
        "member_id",
        "member_epoch",
        "heartbeat_interval_ms",
        "assignment",
    ),
    "ConsumerGroupDescribe": ("error", "state", "group_epoch", "assignment_epoch", "members"),
}


def parse_expectation(
    api: str, raw: object, keys: tuple[str, ...] | None = None
) -> dict[str, Matcher] | Literal["parked"]:
    """``parked`` or a mapping of expectation keys (``keys``, by default the API's) to
    matchers; raises ExpectationError(key, message)."""
    if raw == "parked":
        return "parked"
    if not isinstance(raw, dict):
        raise ExpectationError(None, f"expect must be 'parked' or a mapping, got {raw!r}")
    keys = EXPECTATIONS_BY_API[api] if keys is None else keys
    parsed = {}
    for key, value in raw.items():
        if key not in keys:
            raise ExpectationError(
                key, f"{api} has no expectation {key!r} (it has: {', '.join(keys)})"
            )
        try:
            parsed[key] = _matcher(value, EXPECTATIONS[key])
        except ValueError as exc:
            raise ExpectationError(key, f"expect.{key}: {exc}") from None
        if key == "groups" and parsed[key].kind != "equal":
            raise ExpectationError(key, "expect.groups: a mapping of group ids, not one_of or not")
        if key == "assignment" and value == UNCHANGED and api != "ConsumerGroupHeartbeat":
            raise ExpectationError(key, f"expect.assignment: {api} has no '{UNCHANGED}' answer")
    return parsed


class ExpectationError(ValueError):
    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key


# -- request fields, per API ---------------------------------------------------------------
# None means "what the client would send": its member id, generation, instance id ...


class ProtocolSpec(_Strict):
    name: str
    topics: list[str] | None = None  # the consumer subscription; default the join's topics
    metadata: str | None = None  # raw metadata bytes (UTF-8), instead of a subscription


class StepCommon(_Strict):
    v: int | None = None  # pins this step's API version; otherwise the run's plan decides
    expect: Any = None
    rule: str | None = None  # the spec rule this step checks, when narrower than the scenario's

    @field_validator("rule")
    @classmethod
    def _rule(cls, value):
        if value is not None and not RULE.match(value):
            raise Invalid(f"{value!r} is not a spec rule such as GM-3")
        return value


class JoinGroupStep(StepCommon):
    group_id: str = "$group"
    member_id: str | None = None
    group_instance_id: str | None = None
    session_timeout_ms: IntOrSymbol = 10_000
    rebalance_timeout_ms: IntOrSymbol = 10_000
    protocol_type: str = "consumer"
    protocols: list[str | ProtocolSpec] = Field(default_factory=lambda: ["range"])
    topics: list[str] = Field(default_factory=lambda: ["foo"])
    reason: str | None = None
    client_id: str | None = None  # the client id in the request header; default the client's name


class SyncGroupStep(StepCommon):
    group_id: str = "$group"
    generation_id: IntOrSymbol | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    protocol_type: str | None = "consumer"
    protocol_name: str | None = None
    assignments: dict[str, list[PartitionName]] | None = None


class HeartbeatStep(StepCommon):
    group_id: str = "$group"
    generation_id: IntOrSymbol | None = None
    member_id: str | None = None
    group_instance_id: str | None = None


class LeaveMember(_Strict):
    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None


class LeaveGroupStep(StepCommon):
    group_id: str = "$group"
    members: list[LeaveMember] | None = None


class CommitOffset(_Strict):
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


class OffsetCommitStep(StepCommon):
    group_id: str | None = "$group"
    generation_id: IntOrSymbol | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    offsets: dict[PartitionName, int | CommitOffset]


class TxnOffsetCommitStep(StepCommon):
    # The harness acts as the transaction coordinator: the producer is its own (GM-57).
    producer_id: int = Field(default=1000, ge=0)
    producer_epoch: int = 0
    transactional_id: str = "txn"
    group_id: str | None = "$group"
    generation_id: IntOrSymbol | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    offsets: dict[PartitionName, int | CommitOffset]


class FetchGroupSpec(_Strict):
    group_id: str = "$group"
    partitions: list[PartitionName] | Literal["all"]
    member_id: str | None = None  # v9+
    member_epoch: int = -1  # v9+


class OffsetFetchStep(StepCommon):
    group_id: str | None = "$group"
    partitions: list[PartitionName] | Literal["all"] | None = None
    groups: list[FetchGroupSpec] | None = None  # v8+: several groups, instead of the two above
    require_stable: bool = False

    @model_validator(mode="after")
    def _one_form(self):
        if self.groups is None and self.partitions is None:
            raise Invalid("missing field 'partitions' (or 'groups', v8+, for several groups)")
        if self.groups is not None and {"group_id", "partitions"} & self.model_fields_set:
            raise Invalid("give 'groups' or 'group_id' and 'partitions', not both")
        if self.groups == []:
            raise Invalid("groups: name one group at least")
        return self


class DescribeGroupsStep(StepCommon):
    groups: list[str | None] = Field(default_factory=lambda: ["$group"])


class ListGroupsStep(StepCommon):
    states_filter: list[str] = Field(default_factory=list)
    types_filter: list[str] = Field(default_factory=list)  # v5+


class DeleteGroupsStep(StepCommon):
    groups: list[str | None] = Field(default_factory=lambda: ["$group"])


class OffsetDeleteStep(StepCommon):
    group_id: str = "$group"
    partitions: list[PartitionName]


class ConsumerGroupHeartbeatStep(StepCommon):
    # None: what a consumer sends (build.py): its member id and the epoch it learned; on a
    # join (epoch 0) a rebalance timeout, its topics and no partitions, later -1, nothing
    # (unchanged) and the partitions it was last assigned. A field given null is not sent.
    group_id: str = "$group"
    member_id: str | None = None
    member_epoch: IntOrSymbol | None = None
    instance_id: str | None = None
    rebalance_timeout_ms: int | None = None
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None  # v1+; a join with it sends no names
    server_assignor: str | None = None
    topic_partitions: list[PartitionName] | None = None
    client_id: str | None = None  # the client id in the request header; default the client's name


class ConsumerGroupDescribeStep(StepCommon):
    group_ids: list[str] = Field(default_factory=lambda: ["$group"])


REQUEST_STEPS: dict[str, type[StepCommon]] = {
    "JoinGroup": JoinGroupStep,
    "SyncGroup": SyncGroupStep,
    "Heartbeat": HeartbeatStep,
    "LeaveGroup": LeaveGroupStep,
    "OffsetCommit": OffsetCommitStep,
    "OffsetFetch": OffsetFetchStep,
    "DescribeGroups": DescribeGroupsStep,
    "ListGroups": ListGroupsStep,
    "DeleteGroups": DeleteGroupsStep,
    "OffsetDelete": OffsetDeleteStep,
    "TxnOffsetCommit": TxnOffsetCommitStep,
    "ConsumerGroupHeartbeat": ConsumerGroupHeartbeatStep,
    "ConsumerGroupDescribe": ConsumerGroupDescribeStep,
}


class RecordSpec(_Strict):
    """A record a step writes to ``__consumer_offsets`` (``expect.records``); ``offset`` and
    ``generation`` are compared only when given."""

    kind: Literal["offset_commit", "offset_tombstone", "group_metadata", "group_tombstone"]
    group: str = "$group"
    partition: PartitionName | None = None  # the offset records'
    offset: int | None = None  # offset_commit
    generation: int | None = None  # group_metadata

    @model_validator(mode="after")
    def _fields_of_kind(self):
        of_offsets = self.kind.startswith("offset_")
        if of_offsets != (self.partition is not None):
            needs = "needs a partition (topic-N)" if of_offsets else "has no partition"
            raise Invalid(f"{self.kind} {needs}")
        if self.offset is not None and self.kind != "offset_commit":
            raise Invalid(f"{self.kind} has no offset")
        if self.generation is not None and self.kind != "group_metadata":
            raise Invalid(f"{self.kind} has no generation")
        return self


class AwaitStep(_Strict):
    await_: str = Field(alias="await")
    within: int = Field(ge=0)  # ms the reply may take; the run fails if it takes longer
    expect: Any = None
    rule: str | None = None


class SleepStep(_Strict):
    sleep: int = Field(ge=0)


class FaultStep(_Strict):
    fault: Literal["kill_coordinator", "restart"]


class FailNextWriteStep(_Strict):
    # The log refuses the coordinator's next write with this error (GM-23, GM-44).
    fail_next_write: Annotated[str, BeforeValidator(_error_name)]


class TxnMarkerSpec(_Strict):
    # The marker goes to the partition of the run's group.
    producer_id: int = Field(default=1000, ge=0)
    result: Literal["COMMIT", "ABORT"]


class WriteTxnMarkerStep(_Strict):
    # The transaction coordinator ends the producer's transaction (GM-58).
    write_txn_marker: TxnMarkerSpec


# The broker's events as the coordinator of the group's offsets partition (CF-3, CF-4, CF-7),
# named as CoordinatorHost's.
CoordinatorEventName = Literal["ResignCoordinator", "BecomeCoordinator", "LoadGroup"]


class CoordinatorStep(_Strict):
    coordinator: CoordinatorEventName


class ResolveRegularExpressionsStep(_Strict):
    # CG-68: the coordinator resolves the run's group's regexes now (Kafka does on its own).
    resolve_regular_expressions: Literal["$group"]


class NewMetadataImageStep(_Strict):
    # CG-70: the broker's topics are now these, with their partition counts.
    new_metadata_image: dict[str, Annotated[int, Field(ge=1)]]


# -- the scenario ---------------------------------------------------------------------------


class Header(_Strict):
    """Everything but the steps, which the loader validates one by one."""

    checks: str = Field(min_length=10)
    rules: list[str] = Field(min_length=1)
    versions: dict[str, str | int] = Field(default_factory=dict)
    broker: dict[str, int] = Field(default_factory=dict)
    clients: list[str] = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    steps: list[Any] = Field(min_length=1)

    @field_validator("rules")
    @classmethod
    def _rules(cls, value):
        for rule in value:
            if not RULE.match(rule):
                raise Invalid(f"{rule!r} is not a spec rule such as GM-3")
        return value

    @field_validator("clients")
    @classmethod
    def _clients(cls, value):
        for name in value:
            if not CLIENT.match(name):
                raise Invalid(f"client {name!r} must be named c1, c2, ...")
        if len(set(value)) != len(value):
            raise Invalid("client names repeat")
        return value

    @field_validator("versions")
    @classmethod
    def _versions(cls, value):
        for api, spec in value.items():
            try:
                parse_range(api, spec)
            except VersionError as exc:
                raise Invalid(str(exc)) from None
        return value

    @field_validator("broker")
    @classmethod
    def _broker(cls, value):
        known = GroupConfig.__dataclass_fields__
        for name in value:
            if name not in known:
                raise Invalid(f"unknown broker setting {name!r} (known: {', '.join(known)})")
        try:
            GroupConfig(**value)
        except UsageError as exc:
            raise Invalid(str(exc)) from None
        return value


@dataclass(frozen=True)
class RequestStep:
    client: str
    api: str
    fields: StepCommon
    expect: dict[str, Matcher] | Literal["parked"] | None
    records: tuple[RecordSpec, ...] | None = None  # expect.records: what the step writes


@dataclass(frozen=True)
class Await:
    client: str
    api: str  # of the request it waits for
    within_ms: int
    expect: dict[str, Matcher] | Literal["parked"] | None  # parked: still no reply after within_ms
    rule: str | None
    records: tuple[RecordSpec, ...] | None = None


@dataclass(frozen=True)
class Sleep:
    ms: int


@dataclass(frozen=True)
class Fault:
    fault: str


@dataclass(frozen=True)
class FailNextWrite:
    error: ErrorCode


@dataclass(frozen=True)
class WriteTxnMarker:
    producer_id: int
    result: str


@dataclass(frozen=True)
class CoordinatorEvent:
    event: CoordinatorEventName

    @property
    def fault(self) -> str:
        """Its name as a fault hook and in a trace's fault record."""
        return _FAULT_NAMES[self.event]


_FAULT_NAMES = {
    "ResignCoordinator": "resign_coordinator",
    "BecomeCoordinator": "become_coordinator",
    "LoadGroup": "load_group",
}


@dataclass(frozen=True)
class ResolveRegularExpressions:
    """The reference's event of that name, for the run's group (CG-68)."""


@dataclass(frozen=True)
class NewMetadataImage:
    """The reference's event of that name (CG-70). The loader gives the ids: a topic keeps its
    id while it exists; one created again under a name a deleted topic had gets a new one."""

    topics: Mapping[str, int]
    topic_ids: Mapping[str, str]


Step = (
    RequestStep
    | Await
    | Sleep
    | Fault
    | FailNextWrite
    | WriteTxnMarker
    | CoordinatorEvent
    | ResolveRegularExpressions
    | NewMetadataImage
)


@dataclass(frozen=True)
class Scenario:
    name: str  # the file name without .yaml
    path: Path
    checks: str
    rules: tuple[str, ...]
    versions: dict[str, range]  # every API the scenario uses
    broker: dict[str, int]
    clients: tuple[str, ...]
    tags: tuple[str, ...]
    steps: tuple[Step, ...]
    lines: tuple[int, ...]  # the line of each step

    def step_rules(self, index: int) -> tuple[str, ...]:
        step = self.steps[index]
        rule = getattr(step, "rule", None) or getattr(getattr(step, "fields", None), "rule", None)
        return (rule,) if rule else self.rules

    @property
    def uses_faults(self) -> bool:
        return any(isinstance(s, Fault) for s in self.steps)

    @property
    def fails_writes(self) -> bool:
        return any(isinstance(s, FailNextWrite) for s in self.steps)

    @property
    def uses_transactions(self) -> bool:
        """Whether the harness acts as a transaction coordinator (GM-57, GM-58)."""
        return any(
            isinstance(s, WriteTxnMarker)
            or (isinstance(s, RequestStep) and s.api == "TxnOffsetCommit")
            for s in self.steps
        )

    @property
    def moves_coordinator(self) -> bool:
        return any(isinstance(s, CoordinatorEvent) for s in self.steps)

    @property
    def drives_metadata(self) -> bool:
        """Whether the harness changes the broker's topics or runs the regex resolution."""
        return any(isinstance(s, (ResolveRegularExpressions, NewMetadataImage)) for s in self.steps)

    @property
    def expects_records(self) -> bool:
        return any(getattr(s, "records", None) is not None for s in self.steps)
