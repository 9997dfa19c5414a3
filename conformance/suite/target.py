"""What a target is: something that answers group requests for named clients.

A target opens one session per scenario run, on that run's group id. The session takes
requests in the reference's vocabulary (``coordspec.reference.group.requests``: the API is the
class, ``api_version`` the version, the rest Kafka's fields) for a named client and hands
back responses in the same vocabulary (``coordspec.reference.group.responses``, shaped for the
request's version). A networked target encodes them on the wire (kio), sends each client's
requests over that client's own connections, and decodes the answers; ``request_id`` is
the correlation id, ``now_ms`` is ignored.

Time is the session's: virtual for the reference (``sleep`` and ``receive`` move it to the
next timer), real for a broker (``sleep`` sleeps). A client has at most one request in
flight, as on one Kafka connection, where the broker answers requests in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Literal, Protocol

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import Request
from coordspec.reference.group.responses import Response

# The topics scenarios commit offsets to, and the partitions they use (0-2): the wire targets
# create them if missing; the reference target's broker has exactly these.
CATALOG_TOPICS: Mapping[str, int] = MappingProxyType({"foo": 3, "bar": 3, "baz": 3})


class FaultHooks(Protocol):
    """Faults a target can inject. A target without them runs no scenario that has fault
    steps. Requests in flight when a fault hits are lost, as their connections are: the
    runner expects no reply to them."""

    async def kill_coordinator(self) -> None:
        """The group's coordinator dies; another broker takes over the group."""

    async def restart(self) -> None:
        """The coordinator restarts and reloads its groups from the log."""

    async def fail_next_write(self, error: ErrorCode) -> None:
        """The coordinator's log refuses its next write with ``error`` (only on a target whose
        ``fails_writes`` is True)."""

    async def write_txn_marker(self, group_id: str, producer_id: int, result: str) -> None:
        """As the transaction coordinator, end ``producer_id``'s transaction on the partition
        of ``group_id`` (only on a target whose ``completes_transactions`` is True)."""

    # Only on a target whose ``moves_coordinator`` is True: the broker's events as the
    # coordinator of the group's offsets partition (scenario steps ``coordinator:``).
    async def resign_coordinator(self) -> None:
        """It no longer leads the partition: parked JoinGroup and SyncGroup requests are
        answered NOT_COORDINATOR, and every request after them."""

    async def become_coordinator(self) -> None:
        """It leads the partition again and loads it: COORDINATOR_LOAD_IN_PROGRESS meanwhile."""

    async def load_group(self) -> None:
        """The load is done: it serves the group as the log holds it."""

    # Only on a target whose ``drives_metadata`` is True.
    async def resolve_regular_expressions(self, group_id: str) -> None:
        """The coordinator resolves the regexes ``group_id``'s members subscribe to, now."""

    async def new_metadata_image(
        self, topics: Mapping[str, int], topic_ids: Mapping[str, str]
    ) -> None:
        """The broker's topics are now ``topics``, known by ``topic_ids``."""


class Session(Protocol):
    faults: FaultHooks | None  # None when the target cannot inject faults

    def now_ms(self) -> int:
        """Time since the session opened (virtual or real), in ms."""

    async def send(self, client: str, request: Request) -> None:
        """Send ``request`` for ``client``, which has no other request in flight."""

    async def receive(self, client: str, within_ms: int) -> tuple[Response, int] | None:
        """The reply to ``client``'s request and the time it arrived, waiting at most
        ``within_ms``; None if it has not come by then (it is kept for a later call)."""

    async def sleep(self, ms: int) -> None:
        """Let ``ms`` pass."""

    async def written(self) -> Sequence[Record]:
        """The records the coordinator wrote to ``__consumer_offsets`` for the session's groups
        since the previous call; the first call starts the count (only on a target whose
        ``shows_records`` is True)."""

    async def close(self) -> None: ...


class Target(Protocol):
    name: str
    clock: Literal["virtual", "real"]
    # The broker's group settings: the base the oracle uses (Kafka's defaults, or what the
    # user declared with --broker-setting). A configurable target applies a scenario's
    # ``broker:`` settings per session (the reference in-process, the embedded target on a
    # cluster started with them); on any other the scenario runs only when its settings
    # equal these.
    config: GroupConfig
    configurable: bool
    versions: dict[str, range]  # the API versions the target supports
    # The catalog's topics (by the catalog's names) and their partition counts on the
    # target: the oracle answers a commit to any other partition as Kafka does (GM-56).
    partitions: Mapping[str, int]
    answer_ms: int  # how long a reply that comes at once may take to arrive
    settle_ms: int  # how long a request must stay unanswered to count as parked
    # The most a request may take to reach the broker: a timer due that soon after a request
    # was sent may fire before or after it (the oracle allows both), and an awaited reply
    # may come this much later than ``within``.
    latency_ms: int
    supports_faults: bool  # whether sessions have fault hooks
    fails_writes: bool  # whether their hooks can make the coordinator's next write fail
    # Whether the harness can act as the transaction coordinator: send TxnOffsetCommit for a
    # producer of its own and write the transaction's markers (GM-57, GM-58).
    completes_transactions: bool
    moves_coordinator: bool  # whether their hooks can resign, become and load the coordinator
    # Whether their hooks can change the broker's topics and run the coordinator's resolution
    # of a group's regexes when a scenario says (CG-68, CG-70).
    drives_metadata: bool
    shows_records: bool  # whether sessions show the records the coordinator writes
    # A fault hits every session at once (one real broker or cluster holds every group): the
    # suite runs the scenarios with faults alone, one at a time, after the others. A target
    # that gives a session opened with ``faults`` brokers no other session uses meanwhile
    # sets it False.
    faults_are_shared: bool

    async def open(self, group_id: str, config: GroupConfig, *, faults: bool = False) -> Session:
        """A session on ``group_id`` whose broker has ``config``; ``faults``: it will inject
        faults. It may wait for the target to have room (brokers to start or to free up)."""


class TargetError(RuntimeError):
    """The target failed in a way that is not a protocol answer (unreachable, not Kafka,
    a request timed out). ``str()`` is one line for the report.

    ``kind``: ``undecodable`` (an answer that does not decode: ``raw_response`` is its hex
    dump, ``decode_offset`` where decoding stopped), ``connection`` (the broker closed or
    reset a connection), ``hook`` (a fault hook failed: an error of the harness, not of the
    target), ``target`` (anything else). ``request``: the one it concerns.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: Literal["undecodable", "connection", "hook", "target"] = "target",
        request: Request | None = None,
        raw_response: str | None = None,
        decode_offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.request = kind, request
        self.raw_response, self.decode_offset = raw_response, decode_offset
