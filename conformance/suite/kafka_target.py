"""The ``kafka`` target: any broker that speaks Kafka's protocol, at ``--bootstrap host:port``
(or Kafka's list ``h1:p1,h2:p2``, tried in order until one answers).

Real time, real sockets. Each simulated client has its own connections, as a consumer
has: one per broker it talks to, the bootstrap broker for FindCoordinator and the
coordinator FindCoordinator names for a request's group. The run's own group is found,
and a connection per client opened to its coordinator, before the session's clock starts
(see ``KafkaSession.warm_up``). A response with
NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE is handed to the runner as it is (the oracle
judges it) and makes the client find the coordinator again before its next request, as a
client would.

Opening the target checks the broker once (a preflight, before any scenario): it answers
ApiVersions (the versions both sides support are what scenarios run at), Metadata and
FindCoordinator; every address it advertises (Metadata's brokers, the coordinator
FindCoordinator names) answers too, so that a wrong ``advertised.listeners`` is one line,
not an error per run; and the topics ``foo``, ``bar``, ``baz`` that scenarios commit
offsets to exist with 3 partitions (they are created if missing). ``topics`` renames them
(``--topics``): the sessions rename them in OffsetCommit and OffsetFetch and back in the
answers, so scenarios, the oracle and the trace keep the catalog's names (subscriptions
and assignments are bytes the coordinator does not read, and keep them too).

Where the broker lists ``__consumer_offsets`` and serves Fetch and ListOffsets, the sessions
show the records the coordinator writes for their groups (``written``, :mod:`offsets_log`),
for the scenarios that expect them.

On a broker it does not own, the target removes the run's groups afterwards
(:meth:`KafkaTarget.clean_up`, :mod:`cleanup`).

Fault hooks are shell commands (``--on-kill-coordinator``, ``--on-restart``); they run
with ``COORDSPEC_GROUP_ID`` and ``COORDSPEC_COORDINATOR`` (host:port) in the environment,
and the security settings (``COORDSPEC_SECURITY_PROTOCOL`` …, coordspec.conformance.security).
each in a process group of its own. A hook that fails or outlasts its timeout is an error
of the harness, not a conformance failure; on a timeout its whole process group is killed.
A secured broker's connections speak TLS and SASL as ``security`` says.
A fault hits every group on the broker, so the suite runs the scenarios that inject one
alone, after the others (``faults_are_shared``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from coordspec.conformance.security import PLAINTEXT, ClientSecurity
from coordspec.conformance.suite import cleanup, offsets_log
from coordspec.conformance.suite.kafka_wire import Connection, WireError, hex_dump
from coordspec.conformance.suite.target import CATALOG_TOPICS, TargetError
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.placement import OFFSETS_TOPIC
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.records import OffsetCommitKey, Record
from coordspec.reference.group.requests import API_KEYS, VERSIONS, Request
from coordspec.reference.group.responses import Response
from coordspec.reference.wire.entities import UnknownErrorCode
from coordspec.reference.wire.group_apis import (
    NO_TOPIC_IDS,
    TopicIds,
    request_to_kio,
    response_from_kio,
)

FIND_COORDINATOR, METADATA, CREATE_TOPICS = 10, 3, 19
TOPICS = tuple(CATALOG_TOPICS)
_REFIND = {int(ErrorCode.NOT_COORDINATOR), int(ErrorCode.COORDINATOR_NOT_AVAILABLE)}
_RETRIABLE_FIND = _REFIND | {int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)}
_LOG_READER = "__consumer_offsets"  # the session's reader of that topic, beside its clients

Hook = (
    str | Callable[[], Awaitable[None]]
)  # a shell command, or (embedded targets) a coroutine function


@dataclass(frozen=True)
class FaultCommands:
    kill_coordinator: Hook | None = None
    restart: Hook | None = None
    timeout_s: float = 60.0  # a shell hook's bound (--hook-timeout): a JVM restart is slow


PREFLIGHT_GROUP = "coordspec-preflight"  # FindCoordinator's key; no group is created


def parse_bootstrap(bootstrap: str | None) -> list[tuple[str, int]]:
    """Kafka's ``bootstrap.servers``: ``HOST:PORT`` or a comma-separated list of them."""
    addresses = []
    for item in (bootstrap or "").split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            raise TargetError(f"--bootstrap must be HOST:PORT[,HOST:PORT...], got {bootstrap!r}")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


class KafkaTarget:
    clock: Literal["virtual", "real"] = "real"
    configurable = False
    answer_ms = 5_000
    # Short: scenarios pin a parked reply between the end of an ``await ... parked`` and a
    # deadline (``within: 2900`` for a 3 s delay), and a parked request step's settle time
    # comes before that await. A broker that answers later than this when it should answer at
    # once is still caught: the oracle checks the reply against the time it arrived.
    settle_ms = 20
    latency_ms = 200  # generous: a loaded machine delays replies by this much
    timeout_s = 10.0  # connecting, ApiVersions, FindCoordinator, hooks' restarts
    OPEN_INTERVAL_S = 0.01

    def __init__(
        self,
        bootstrap: str,
        *,
        name: str = "kafka",
        faults: FaultCommands | None = None,
        config: GroupConfig | None = None,
        security: ClientSecurity = PLAINTEXT,
        topics: tuple[str, ...] = TOPICS,
    ) -> None:
        self.name = name
        self.security = security
        self.addresses = parse_bootstrap(bootstrap)
        self.host, self.port = self.addresses[0]  # the first that answers, once checked
        if len(set(topics)) != len(TOPICS) or not all(topics):
            raise TargetError(
                f"--topics must name {len(TOPICS)} distinct topics (for {', '.join(TOPICS)}), "
                f"got {','.join(topics)!r}"
            )
        self.topics = dict(zip(TOPICS, topics, strict=True))  # the catalog's name -> the broker's
        self.back = {theirs: ours for ours, theirs in self.topics.items()}
        self.created: list[str] = []  # topics the check created
        self.partitions = dict(CATALOG_TOPICS)  # what the broker has, once probed
        self.topic_ids = NO_TOPIC_IDS  # the catalog's name -> the broker's id, once probed
        self.brokers: list[tuple[str, int]] = []  # advertised, from Metadata
        self.controller: tuple[str, int] | None = None
        self.group_ids: set[str] = set()  # the runs' groups (their $group2 ... extend them)
        # Kafka's defaults unless the user declares the broker's (--broker-setting): a
        # broker's own settings cannot be asked for.
        self.config = config or GroupConfig()
        self.fault_commands = faults or FaultCommands()
        self.supports_faults = bool(
            self.fault_commands.kill_coordinator or self.fault_commands.restart
        )
        self.faults_are_shared = True
        self.fails_writes = False  # a broker's log: no hook refuses a chosen write
        self.completes_transactions = False  # a broker needs its transaction coordinator for that
        self.moves_coordinator = False  # no hook stops a broker at each step of a move
        self.drives_metadata = False  # a broker resolves regexes on its own, when it will
        # Where each __consumer_offsets partition is led, once the check found it readable
        # (offsets_log): then sessions show the records the coordinator writes.
        self.offsets_leaders: dict[int, tuple[str, int]] = {}
        self.shows_records = False
        self.versions: dict[str, range] = {}
        self._next_open = 0.0
        self._stoppers: list[Callable[[], None]] = []

    def on_stop(self, stopper: Callable[[], None]) -> None:
        """Something to stop with the target (the child process that serves it)."""
        self._stoppers.append(stopper)

    def stop(self) -> None:
        while self._stoppers:
            self._stoppers.pop()()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def check(self) -> KafkaTarget:
        """Probe the broker (see the module docstring); raises TargetError with one line."""
        asyncio.run(self._probe())
        return self

    async def _probe(self) -> None:
        connection = await self._bootstrap()
        try:
            for api in VERSIONS:
                theirs = connection.versions.get(API_KEYS[api], range(0))
                self.versions[api] = range(
                    max(theirs.start, VERSIONS[api].start), min(theirs.stop, VERSIONS[api].stop)
                )
            if FIND_COORDINATOR not in connection.versions:
                raise TargetError(
                    f"{self.bootstrap} does not serve FindCoordinator: it cannot route group requests"
                )
            metadata, self.created = await _ensure_topics(
                connection,
                {theirs: CATALOG_TOPICS[ours] for ours, theirs in self.topics.items()},
                self.timeout_s,
            )
            self.partitions = {self.back[t.name]: len(t.partitions) for t in metadata.topics}
            # Metadata v10+ has them; the consumer group's APIs name topics by id.
            self.topic_ids = TopicIds(
                {self.back[t.name]: t.topic_id for t in metadata.topics if hasattr(t, "topic_id")}
            )
            self.brokers = [(b.host, int(b.port)) for b in metadata.brokers]
            self.controller = next(
                (
                    (b.host, int(b.port))
                    for b in metadata.brokers
                    if b.node_id == metadata.controller_id
                ),
                (self.host, self.port),
            )
            await self._check_listeners(connection, metadata.brokers)
            if offsets_log.readable(connection.versions):
                # Listed is enough: a new cluster may still be electing the partitions'
                # leaders, which each session looks up at its first read (written()).
                self.shows_records = await _offsets_leaders(connection, self.timeout_s) is not None
        except WireError as exc:
            raise TargetError(str(exc)) from None
        finally:
            await connection.close()

    async def _bootstrap(self) -> Connection:
        """A connection to the first bootstrap address that answers, as Kafka's clients try them."""
        errors = []
        for host, port in self.addresses:
            try:
                connection = await Connection.open(host, port, self.timeout_s, self.security)
            except WireError as exc:
                errors.append(str(exc))
                continue
            self.host, self.port = host, port
            return connection
        raise TargetError("; ".join(errors))

    async def _check_listeners(self, connection: Connection, brokers) -> None:
        """Every address the broker tells clients to dial answers: Metadata's brokers and
        the coordinator FindCoordinator names."""
        session, client = KafkaSession(self, PREFLIGHT_GROUP), _Client()
        try:
            coordinator = await session._find_coordinator(client, PREFLIGHT_GROUP)
        finally:  # the client is no session's: its connection is closed here
            await session._drop(client)
            await session.close()
        advertised = {(b.host, int(b.port)): f"broker {b.node_id}" for b in brokers}
        advertised.setdefault(coordinator, f"the coordinator of group {PREFLIGHT_GROUP}")
        others = [a for a in advertised if f"{a[0]}:{a[1]}" != connection.address]
        opened = await asyncio.gather(
            *(Connection.open(*a, self.timeout_s, self.security) for a in others),
            return_exceptions=True,
        )
        for outcome in opened:
            if isinstance(outcome, Connection):
                await outcome.close()
        for (host, port), outcome in zip(others, opened, strict=True):
            if isinstance(outcome, WireError):
                raise TargetError(
                    f"the broker advertises {host}:{port} ({advertised[host, port]}), "
                    f"{_unreachable(outcome, self.timeout_s)}: check advertised.listeners"
                )
            if isinstance(outcome, BaseException):
                raise outcome

    def clean_up(self, delete_topics: bool = False) -> list[str]:
        """On a broker this target does not own (one it did not start), delete the runs'
        groups, and with ``delete_topics`` the topics the check created: a line for each."""
        if self._stoppers or not (self.group_ids or (delete_topics and self.created)):
            return []

        def ours(group: str) -> bool:
            return any(group[:n] in self.group_ids for n in range(len(group), 0, -1))

        async def both() -> list[str]:
            lines = []
            if self.group_ids:
                brokers = self.brokers or [(self.host, self.port)]
                lines.append(
                    await cleanup.delete_groups(brokers, ours, self.timeout_s, self.security)
                )
            if delete_topics and self.created:
                controller = self.controller or (self.host, self.port)
                lines.append(
                    await cleanup.delete_topics(
                        controller, self.created, self.timeout_s, self.security
                    )
                )
            return lines

        return asyncio.run(both())

    async def open(
        self, group_id: str, config: GroupConfig, *, faults: bool = False
    ) -> KafkaSession:
        self.group_ids.add(group_id)
        # Sessions that open together would keep their timers in step (every initial
        # rebalance delay ending in the same instant): a burst that delays replies on both
        # sides. Spacing the openings spreads the bursts.
        now = time.monotonic()
        self._next_open = max(now, self._next_open) + self.OPEN_INTERVAL_S
        await asyncio.sleep(self._next_open - self.OPEN_INTERVAL_S - now)
        try:
            return await KafkaSession(self, group_id).warm_up()
        except (WireError, TargetError) as exc:
            raise TargetError(str(exc)) from None


def _unreachable(error: WireError, timeout_s: float) -> str:
    """Why an advertised address fails, from the OS error behind ``error`` (its context)."""
    cause = error.__context__
    if isinstance(cause, ConnectionRefusedError):
        return "which refuses connections"
    if isinstance(cause, socket.gaierror):
        return "whose host does not resolve"
    if isinstance(cause, TimeoutError):
        return f"which accepts no connection within {timeout_s:g} s"
    return f"which fails ({error})"


async def _offsets_leaders(
    connection: Connection, timeout_s: float
) -> dict[int, tuple[str, int]] | None:
    """The leader of each ``__consumer_offsets`` partition that has one; None if the topic is
    not listed."""
    version = min(connection.versions.get(METADATA, range(1)).stop - 1, 12)
    request = {"topics": [{"name": OFFSETS_TOPIC}], "allow_auto_topic_creation": False}
    metadata = await connection.call(METADATA, version, request, timeout_s)
    brokers = {b.node_id: (b.host, int(b.port)) for b in metadata.brokers}
    listed = [t for t in metadata.topics if int(t.error_code) == 0]
    if not listed:
        return None
    return {p.partition_index: brokers.get(p.leader_id) for t in listed for p in t.partitions}


async def _every_offsets_leader(
    connection: Connection, timeout_s: float
) -> dict[int, tuple[str, int]]:
    """The leader of every ``__consumer_offsets`` partition, waiting (up to ``timeout_s``)
    while the topic is created or a partition's leader elected."""
    deadline = time.monotonic() + timeout_s
    while True:
        leaders = await _offsets_leaders(connection, timeout_s)
        if leaders and all(leaders.values()):
            return leaders  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            missing = (
                "the topic is not listed"
                if leaders is None
                else (
                    "no leader for partition "
                    + ", ".join(str(p) for p, leader in sorted(leaders.items()) if leader is None)
                )
            )
            raise WireError(f"{OFFSETS_TOPIC}: {missing} after {timeout_s:g} s")
        await asyncio.sleep(0.1)


async def _ensure_topics(
    connection: Connection, wanted: dict[str, int], timeout_s: float
) -> tuple[Any, list[str]]:
    """The topics scenarios use (``wanted``: the broker's names, the partitions used), created
    if missing: the last Metadata answer, and the topics created."""
    version = min(connection.versions.get(METADATA, range(1)).stop - 1, 12)
    request = {"topics": [{"name": t} for t in wanted], "allow_auto_topic_creation": False}
    metadata = await connection.call(METADATA, version, request, timeout_s)
    missing = [t.name for t in metadata.topics if int(t.error_code) != 0]
    created = list(missing)
    if missing and CREATE_TOPICS in connection.versions:
        create_version = min(connection.versions[CREATE_TOPICS].stop - 1, 7)
        topics = [
            {"name": name, "num_partitions": wanted[name], "replication_factor": -1}
            for name in missing
        ]
        await connection.call(
            CREATE_TOPICS,
            create_version,
            {"topics": topics, "timeout": int(timeout_s * 1000)},
            timeout_s,
        )
    elif (
        missing
    ):  # no CreateTopics (librdkafka's mock): ask for them as a consumer may, auto-created
        request = {**request, "allow_auto_topic_creation": True}
    if missing:
        deadline = time.monotonic() + timeout_s
        while (
            missing and time.monotonic() < deadline
        ):  # creation completes asynchronously in a cluster
            await asyncio.sleep(0.1)
            metadata = await connection.call(METADATA, version, request, timeout_s)
            missing = [t.name for t in metadata.topics if int(t.error_code) != 0]
    if missing:
        raise TargetError(
            f"{connection.address}: topics {', '.join(missing)} do not exist and could not be created "
            f"(the scenarios commit offsets to them)"
        )
    for topic in metadata.topics:
        if len(topic.partitions) < wanted[topic.name]:
            raise TargetError(
                f"{connection.address}: topic {topic.name} has {len(topic.partitions)} partitions; "
                f"the scenarios commit offsets to partitions 0-{wanted[topic.name] - 1}"
            )
    return metadata, created


class _Client:
    """One simulated client: its connections by address, the coordinators it found, its replies."""

    def __init__(self) -> None:
        self.connections: dict[str, Connection] = {}
        self.coordinators: dict[str, tuple[str, int]] = {}  # group id -> address
        self.inbox: asyncio.Queue[tuple[Response, int] | TargetError] = asyncio.Queue()
        self.delivery: asyncio.Task | None = None


class KafkaSession:
    WARM = 3  # connections opened ahead: most scenarios have at most three clients

    def __init__(self, target: KafkaTarget, group_id: str) -> None:
        self.target = target
        self.group_id = group_id
        self.started = time.monotonic()
        self.clients: dict[str, _Client] = {}
        self.faults = self if target.supports_faults else None
        self.coordinator: tuple[str, int] | None = None  # of the run's group, found ahead
        self.warm: list[Connection] = []
        self.log: offsets_log.OffsetsLog | None = None  # read by written()

    async def warm_up(self) -> KafkaSession:
        """Find the run's coordinator and open connections to it before the clock starts.

        The runner stamps a request with the time before ``send``: a client that first
        had to connect, negotiate and find its coordinator would reach the broker later
        than the oracle thinks, and every timer would start late. Each client still gets
        connections of its own (one of these) and finds coordinators again when told to.
        """
        scout = _Client()
        self.coordinator = await self._find_coordinator(scout, self.group_id)
        self.warm = [
            c
            for c in scout.connections.values()
            if f"{self.coordinator[0]}:{self.coordinator[1]}" == c.address
        ]
        await self._drop(scout, keep=self.warm)
        extra = await asyncio.gather(
            *(self._connect(self.coordinator) for _ in range(self.WARM - len(self.warm))),
            return_exceptions=True,
        )
        for connection in extra:
            if isinstance(connection, BaseException):
                raise connection
            self.warm.append(connection)
        self.started = time.monotonic()
        return self

    def now_ms(self) -> int:
        return self._ms(time.monotonic())

    def _ms(self, monotonic: float) -> int:
        return int((monotonic - self.started) * 1000)

    # -- requests -------------------------------------------------------------------------

    async def send(self, client: str, request: Request) -> None:
        state = self.clients.setdefault(client, _Client())
        try:
            connection = await self._route(state, request)
            entity = request_to_kio(_renamed(request, self.target.topics), self.target.topic_ids)
            client_id = request.client_id if request.api == "JoinGroup" else client
            future = connection.send(
                API_KEYS[request.api], request.api_version, entity, client_id=client_id
            )
        except WireError as exc:
            raise _target_error(client, request, exc) from None
        except ValueError as exc:  # a topic the broker has no id for
            raise TargetError(
                f"{request.api} v{request.api_version}: cannot send {exc}", request=request
            ) from None
        state.delivery = asyncio.get_running_loop().create_task(
            self._deliver(client, state, request, future)
        )

    async def _deliver(
        self, client: str, state: _Client, request: Request, future: asyncio.Future
    ) -> None:
        what = f"{request.api} v{request.api_version}"
        try:
            entity, arrived = await future
            response = response_from_kio(
                request.api, request.api_version, entity, self.target.topic_ids
            )
            response = _renamed(response, self.target.back)
        except WireError as exc:
            state.inbox.put_nowait(_target_error(client, request, exc))
            return
        except (UnknownErrorCode, ValueError) as exc:
            state.inbox.put_nowait(TargetError(f"{what}: the broker answered with {exc}"))
            return
        if _error_codes(response) & _REFIND:
            key = request.trace_group or self.group_id
            state.coordinators.pop(key, None)
            if key == self.group_id:
                self.coordinator = None  # the one found ahead is stale too
        state.inbox.put_nowait((response, self._ms(arrived)))

    async def receive(self, client: str, within_ms: int) -> tuple[Response, int] | None:
        inbox = self.clients.setdefault(client, _Client()).inbox
        try:  # wait_for with no time left gives up before get() runs, even with a reply queued
            item = (
                inbox.get_nowait()
                if not inbox.empty()
                else await asyncio.wait_for(inbox.get(), within_ms / 1000)
            )
        except TimeoutError:
            return None
        if isinstance(item, TargetError):
            raise item
        return item

    async def sleep(self, ms: int) -> None:
        await asyncio.sleep(ms / 1000)

    async def written(self) -> list[Record]:
        if self.log is None:
            reader = self.clients.setdefault(_LOG_READER, _Client())
            self.log = offsets_log.OffsetsLog(
                partial(self._locate_offsets, reader),
                lambda address: self._connection(reader, address),
                self.target.timeout_s,
            )
        try:
            records = await self.log.read()
        except WireError as exc:
            raise TargetError(str(exc)) from None
        mine = (
            r
            for r in records
            if r.key.group == self.group_id or r.key.group.startswith(f"{self.group_id}-")
        )
        return [_renamed_record(r, self.target.back) for r in mine]

    async def _locate_offsets(self, reader: _Client) -> dict[int, tuple[str, int]]:
        """The offsets partitions' leaders as the broker tells them now, kept in the target's
        map (a fault hook moves them there)."""
        connection = await self._connection(reader, (self.target.host, self.target.port))
        found = await _every_offsets_leader(connection, self.target.timeout_s)
        self.target.offsets_leaders.update(found)
        return self.target.offsets_leaders

    async def close(self) -> None:
        await self._drop_connections()

    # -- routing --------------------------------------------------------------------------

    async def _connection(self, state: _Client, address: tuple[str, int]) -> Connection:
        key = f"{address[0]}:{address[1]}"
        connection = state.connections.get(key)
        if connection is None or connection.closed:
            ready = next((c for c in self.warm if c.address == key and not c.closed), None)
            if ready is not None:
                self.warm.remove(ready)
                connection = ready
            else:
                connection = await self._connect(address)
            state.connections[key] = connection
        return connection

    async def _connect(self, address: tuple[str, int]) -> Connection:
        """Connect, retrying while the broker is unreachable (it may be restarting after a fault)."""
        deadline = time.monotonic() + self.target.timeout_s
        while True:
            try:
                return await Connection.open(*address, self.target.timeout_s, self.target.security)
            except WireError:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.1)

    async def _route(self, state: _Client, request: Request) -> Connection:
        key = request.trace_group or self.group_id
        if key not in state.coordinators and key == self.group_id and self.coordinator is not None:
            state.coordinators[key] = self.coordinator  # found ahead, in warm_up
        if key not in state.coordinators:
            state.coordinators[key] = await self._find_coordinator(state, key)
        return await self._connection(state, state.coordinators[key])

    async def _find_coordinator(self, state: _Client, key: str) -> tuple[str, int]:
        """The coordinator's address, retrying while the group has none yet. A key Kafka
        refuses (an invalid group id) goes to the run's own group's coordinator, which
        answers the request with the error a client would get."""
        bootstrap = (self.target.host, self.target.port)
        deadline = time.monotonic() + self.target.timeout_s
        while True:
            connection = await self._connection(state, bootstrap)
            supported = connection.versions[FIND_COORDINATOR]
            version = min(supported.stop - 1, 3) if supported.start <= 3 else supported.stop - 1
            values = (
                {"key": key, "key_type": 0}
                if version <= 3
                else {"key_type": 0, "coordinator_keys": [key]}
            )
            answer = await connection.call(FIND_COORDINATOR, version, values, self.target.timeout_s)
            if version >= 4:
                answer = answer.coordinators[0]
            error = int(answer.error_code)
            if error == 0:
                return answer.host, int(answer.port)
            if error not in _RETRIABLE_FIND:
                if key == self.group_id:
                    return bootstrap
                return await self._find_coordinator(state, self.group_id)
            if time.monotonic() >= deadline:
                raise WireError(
                    f"FindCoordinator for {key!r}: still error {error} after {self.target.timeout_s:g} s"
                )
            await asyncio.sleep(0.1)

    async def _drop_connections(self) -> None:
        for state in self.clients.values():
            await self._drop(state)
        for connection in self.warm:
            await connection.close()
        self.warm = []
        self.coordinator = None

    @staticmethod
    async def _drop(state: _Client, keep: list[Connection] = ()) -> None:
        if state.delivery is not None:
            state.delivery.cancel()
        for connection in state.connections.values():
            if connection not in keep:
                await connection.close()
        state.connections.clear()
        state.coordinators.clear()

    # -- fault hooks ----------------------------------------------------------------------

    async def kill_coordinator(self) -> None:
        await self._fault("--on-kill-coordinator", self.target.fault_commands.kill_coordinator)

    async def restart(self) -> None:
        await self._fault("--on-restart", self.target.fault_commands.restart)

    async def _fault(self, option: str, command: Hook | None) -> None:
        if command is None:
            raise TargetError(f"this scenario needs the {option} hook")
        if callable(command):
            await command()
        else:
            await self._run_hook(option, command)
        await self._drop_connections()  # requests in flight get no reply; clients reconnect
        for state in self.clients.values():
            state.inbox = asyncio.Queue()

    async def _run_hook(self, option: str, command: str) -> None:
        coordinator = next(
            (c for s in self.clients.values() for c in s.coordinators.values()),
            (self.target.host, self.target.port),
        )
        env = {
            **os.environ,
            **self.target.security.environment(),
            "COORDSPEC_GROUP_ID": self.group_id,
            "COORDSPEC_COORDINATOR": f"{coordinator[0]}:{coordinator[1]}",
        }
        limit = self.target.fault_commands.timeout_s
        # stderr to a file, not a pipe: a hook that starts a broker in the background would
        # hold a pipe open, and the hook would never seem to finish. A session of its own,
        # so that a hook that hangs goes with everything it started, not just its shell;
        # a hook that returns keeps what it started (the broker it restarted).
        with tempfile.TemporaryFile() as stderr:
            process = await asyncio.create_subprocess_shell(
                command,
                env=env,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
            try:
                await asyncio.wait_for(process.wait(), limit)
            except TimeoutError:
                _kill_group(process.pid)
                await process.wait()
                raise TargetError(
                    f"{option} {command!r} did not finish within {limit:g} s (--hook-timeout)",
                    kind="hook",
                ) from None
            except asyncio.CancelledError:
                _kill_group(process.pid)
                raise
            if process.returncode != 0:
                stderr.seek(0)
                lines = stderr.read().decode(errors="replace").strip().splitlines()
                said = f": {lines[-1]}" if lines else ", no output"
                raise TargetError(
                    f"{option} {command!r} exited with {process.returncode}{said}", kind="hook"
                )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _target_error(client: str, request: Request, exc: WireError) -> TargetError:
    if exc.kind == "undecodable":  # its message names the response
        return TargetError(
            str(exc),
            kind="undecodable",
            request=request,
            raw_response=hex_dump(exc.raw, exc.offset),
            decode_offset=exc.offset,
        )
    if exc.kind == "connection":
        return TargetError(f"client {client}: {exc}", kind="connection", request=request)
    return TargetError(f"{request.api} v{request.api_version}: {exc}", request=request)


def _renamed(message: Any, names: dict[str, str]) -> Any:
    """``message`` with its topics renamed (OffsetCommit, OffsetFetch and their answers, the
    other groups of an OffsetFetch v8+ included, a consumer group member's subscription; the
    consumer group's topic ids are the catalog's names' ids already)."""
    if all(a == b for a, b in names.items()):
        return message

    def renamed(topics):
        return topics and tuple(
            dataclasses.replace(t, name=names.get(t.name, t.name)) for t in topics
        )

    changes = {}
    if getattr(message, "topics", None):
        changes["topics"] = renamed(message.topics)
    if getattr(message, "subscribed_topic_names", None):
        changes["subscribed_topic_names"] = tuple(
            names.get(t, t) for t in message.subscribed_topic_names
        )
    if getattr(message, "other_groups", None):
        changes["other_groups"] = tuple(
            dataclasses.replace(g, topics=renamed(g.topics)) for g in message.other_groups
        )
    return dataclasses.replace(message, **changes) if changes else message


def _renamed_record(record: Record, names: dict[str, str]) -> Record:
    key = record.key
    if not isinstance(key, OffsetCommitKey) or key.topic not in names:
        return record
    return dataclasses.replace(record, key=dataclasses.replace(key, topic=names[key.topic]))


def _error_codes(response: Any) -> set[int]:
    """Every error code in a response, at any depth."""
    codes = set()
    for name in getattr(response, "__dataclass_fields__", ()):
        value = getattr(response, name)
        if isinstance(value, ErrorCode):
            codes.add(int(value))
        elif isinstance(value, tuple):
            for item in value:
                codes |= _error_codes(item)
    return codes
