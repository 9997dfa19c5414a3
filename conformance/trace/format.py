"""The JSONL trace of a run: one JSON object per line, one line per request, response,
time step and fault. The format is specified in spec/trace-format.md; these models are its
definition, and ``validate_file`` checks a file against them.

The conformance runner writes it; the recording proxy and the trace pipeline read and write
the same records (``source`` says who wrote a line).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.requests import API_KEYS, VERSIONS

FORMAT_VERSION = 1


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = FORMAT_VERSION  # the trace format's version; a reader refuses others
    source: str  # who wrote it: "conformance:<target>", "proxy", "broker", "simulate"
    run: str  # one run of one scenario at one version plan (or one proxied session)
    scenario: str | None = None
    ts_ms: float  # wall-clock time it was written, Unix epoch ms
    t_ms: int = Field(
        ge=0
    )  # session time: virtual for the reference target, real ms since the run began otherwise


class _Record(_Envelope):
    group_id: str  # any string, as Kafka takes any


class _Message(_Record):
    client: str  # the simulated client (one connection set each)
    api: str
    api_key: int
    api_version: int = Field(ge=0)
    correlation_id: int
    fields: dict[str, Any]  # Kafka's field names; bytes base64, error codes as numbers

    @model_validator(mode="after")
    def _known_api(self):
        if self.api not in API_KEYS:
            raise ValueError(f"unknown api {self.api!r}")
        if API_KEYS[self.api] != self.api_key:
            raise ValueError(f"{self.api} has api_key {API_KEYS[self.api]}, not {self.api_key}")
        if self.api_version not in VERSIONS[self.api]:
            raise ValueError(
                f"{self.api} v{self.api_version} is not a version the reference models"
            )
        return self


class RequestRecord(_Message):
    kind: Literal["request"]


class ResponseRecord(_Message):
    kind: Literal["response"]


class TimeRecord(_Record):
    kind: Literal["time"]
    advance_ms: int = Field(ge=0)


class FaultRecord(_Record):
    kind: Literal["fault"]
    # restart, kill_coordinator: the runner's faults; load_group: a cluster broker became the
    # group's coordinator and loaded it from its log; pause: the coordinator did nothing from
    # down_ms to t_ms, and kept its state; fail_next_write: from t_ms the coordinator's log
    # refuses its next write with ``error``; resign_coordinator, become_coordinator: the broker
    # stops leading the group's partition, then leads and loads it, until a load_group
    # (spec/trace-format.md)
    fault: Literal[
        "kill_coordinator",
        "restart",
        "load_group",
        "pause",
        "fail_next_write",
        "resign_coordinator",
        "become_coordinator",
    ]
    # When the coordinator stopped; ``t_ms`` is when the group was loaded again (when the
    # coordinator resumed, for a pause). Absent: the same.
    down_ms: int | None = Field(default=None, ge=0)
    error: str | None = None  # fail_next_write: the error's name (NOT_ENOUGH_REPLICAS, ...)

    @model_validator(mode="after")
    def _error_of_a_failed_write(self):
        if (self.fault == "fail_next_write") != (self.error is not None):
            raise ValueError("error is given with fault fail_next_write, and only with it")
        if self.error is not None and self.error not in ErrorCode.__members__:
            raise ValueError(f"unknown error {self.error!r}")
        return self


class TxnMarkerRecord(_Record):
    kind: Literal["txn_marker"]
    # The transaction coordinator ended producer ``producer_id``'s transaction on the partition
    # of ``group_id`` at ``t_ms``: the marker the broker then writes (GM-58).
    producer_id: int = Field(ge=0)
    result: Literal["COMMIT", "ABORT"]


class ResolveRegularExpressionsRecord(_Record):
    kind: Literal["resolve_regular_expressions"]
    # At ``t_ms`` the coordinator resolved the regexes of ``group_id``'s members (CG-68).


class MetadataImageRecord(_Record):
    kind: Literal["metadata_image"]
    # From ``t_ms`` the broker's topics are these, with their partition counts, known by the
    # ids ``topic_ids`` gives (a topic it leaves out by its name) (CG-70).
    topics: dict[str, Annotated[int, Field(ge=0)]]
    topic_ids: dict[str, str] = Field(default_factory=dict)


class TopicsRecord(_Record):
    kind: Literal["topics"]
    # The broker's topics a run's commits may name, with their partition counts: a commit to
    # any other partition is answered UNKNOWN_TOPIC_OR_PARTITION (GM-56). A run without this
    # record is checked as if every partition existed.
    topics: dict[str, Annotated[int, Field(ge=0)]]


# The events of one partition (spec/isr-versioned-writes.md's names): conditional writes of
# its state in ZooKeeper, and what one replica did (its state after the event).
WRITE_EVENTS = ("InitLeaders", "ElectLeader", "ShrinkIsr", "ExpandIsr")
REPLICA_EVENTS = (
    "LeaderAndIsr",
    "StepDown",
    "IsrUpdated",
    "Produce",
    "Replicate",
    "AdvanceHighWatermark",
    "StartBroker",
    "CrashBroker",
    "PauseBroker",
    "ResumeBroker",
    "ExpireSession",
)


class PartitionRecord(_Envelope):
    kind: Literal["partition"]
    topic: str
    partition: int = Field(ge=0)
    event: Literal[WRITE_EVENTS + REPLICA_EVENTS]
    broker: int  # the writer of a write; the replica's broker otherwise
    step: int | None = Field(
        default=None, ge=0
    )  # records of one step of the writer share it; null: a step alone
    # a write of the state znode: what it expected, what ZooKeeper held, and what became of it
    expected_zk_version: int | None = Field(default=None, ge=-1)  # -1: unconditional
    zk_version_before: int | None = None  # null: no znode yet
    outcome: str | None = (
        None  # writes: "ok" or ZooKeeper's code (BADVERSION ...); Produce: appended, acknowledged or Kafka's error
    )
    zk_controller_epoch: int | None = None  # /controller_epoch when the write was made
    # the written state (writes) or the replica's view (replica events)
    leader: int | None = None
    leader_epoch: int | None = None
    isr: list[int] | None = None
    controller_epoch: int | None = None  # the state's controller_epoch
    zk_version: int | None = None  # after an accepted write; the version a replica holds
    role: Literal["leader", "follower", "none"] | None = None  # null: the broker is down
    high_watermark: int | None = Field(default=None, ge=0)
    log_end_offset: int | None = Field(default=None, ge=0)
    log: list[tuple[int, int]] | None = (
        None  # the replica's whole log as [leader_epoch, payload_id], when it changed
    )
    truncated_to: int | None = Field(
        default=None, ge=0
    )  # Replicate: the follower cut its log here first
    offset: int | None = Field(default=None, ge=0)  # Produce
    payload_id: int | None = None
    acks: Literal["all"] | None = None

    @model_validator(mode="after")
    def _complete(self):
        needed = (
            (
                "expected_zk_version",
                "outcome",
                "zk_controller_epoch",
                "leader",
                "leader_epoch",
                "isr",
            )
            if self.event in WRITE_EVENTS
            else ("offset", "outcome")
            if self.event == "Produce"
            else ()
        )
        missing = [name for name in needed if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.event} record needs {', '.join(missing)}")
        return self


AnyRecord = (
    RequestRecord
    | ResponseRecord
    | TimeRecord
    | FaultRecord
    | TxnMarkerRecord
    | ResolveRegularExpressionsRecord
    | MetadataImageRecord
    | TopicsRecord
    | PartitionRecord
)
TraceRecord = Annotated[AnyRecord, Field(discriminator="kind")]
_ADAPTER: TypeAdapter = TypeAdapter(TraceRecord)


class TraceError(ValueError):
    """A trace line that is not a valid record; ``str()`` is ``file:line: what``."""


def parse_line(line: str) -> AnyRecord:
    return _ADAPTER.validate_json(line)


def validate_file(path: Path) -> int:
    """The number of records in a valid trace file; raises TraceError on the first bad line."""
    count = 0
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                parse_line(line)
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(p) for p in error["loc"])
                raise TraceError(
                    f"{path}:{number}: {where + ': ' if where else ''}{error['msg']}"
                ) from None
            count += 1
    return count


class TraceWriter:
    """Appends records to a stream, one line each, with the run's constant fields."""

    def __init__(self, stream: TextIO | None, source: str) -> None:
        self.stream = stream
        self.source = source

    def write(self, run: str, scenario: str, group_id: str, t_ms: int, **record) -> None:
        if self.stream is None:
            return
        line = {
            "v": FORMAT_VERSION,
            "source": self.source,
            "run": run,
            "scenario": scenario,
            "group_id": group_id,
            "ts_ms": round(time.time() * 1000, 3),
            "t_ms": t_ms,
            **record,
        }
        self.stream.write(json.dumps(line, separators=(",", ":")) + "\n")
