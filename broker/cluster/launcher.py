"""A cluster on one machine: ZooKeeper and N broker processes on 127.0.0.1.

    with Cluster(data_dir, brokers=3) as cluster:     # ZooKeeper too, unless zookeeper= is given
        cluster.bootstrap                             # "127.0.0.1:P1,127.0.0.1:P2,..."
        cluster.kill(cluster.coordinator("my-group")) # SIGKILL: a real crash
        cluster.wait(lambda view: ..., "a new coordinator")

Each broker is ``python -m coordspec.broker.cluster.server`` in its own process, with its data in
``<data_dir>/broker-<id>``, its trace of the group protocol in
``<data_dir>/broker-<id>/trace.jsonl`` (one run and one clock for the whole cluster:
:meth:`Cluster.trace_files` together are the cluster's trace) and its stderr in
``<data_dir>/broker-<id>.stderr``. The ports are chosen before any broker starts, so every
broker knows every address. Every broker gets the same ``settings``, Kafka's broker
settings by their Kafka names (:mod:`coordspec.broker.settings`), as ``--broker-config``.
:meth:`Cluster.view` watches what ZooKeeper publishes (controller, leaders, ISRs).

:func:`up` is ``coordspec cluster up``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from kazoo.client import KazooClient
from pydantic import ValidationError

from coordspec.broker.cluster.published import PublishedView
from coordspec.broker.cluster.scram_users import store
from coordspec.broker.errors import BrokerError
from coordspec.broker.security import SCRAM, read_users
from coordspec.broker.security import load as load_security
from coordspec.broker.settings import (
    CLUSTER,
    Given,
    SettingsError,
    as_arguments,
    differences,
    pairs,
    read_file,
    resolve,
)
from coordspec.broker.trace import TraceRun
from coordspec.broker.zookeeper.process import (
    ZooKeeperUnavailable,
    die_with_parent,
    free_ports,
    stopped_by_signals,
    zookeeper,
)
from coordspec.reference.failover.placement import OFFSETS_TOPIC, partition_for
from coordspec.reference.replication.znodes import TopicPartition

HOST = "127.0.0.1"
_REPO = Path(__file__).resolve().parent.parent.parent


class ClusterError(Exception):
    """The cluster did not come up (or a wait ran out); one line for the user."""


class Cluster:
    def __init__(
        self,
        data_dir: Path,
        brokers: int = 3,
        *,
        zookeeper_connect: str | None = None,
        settings: Mapping[str, object] | None = None,
        broker_args: tuple[str, ...] = (),
        start_timeout_s: float = 30.0,
        security_config: Path | None = None,
        users: Mapping[str, str] | None = None,
    ) -> None:
        if brokers < 1:
            raise ClusterError(f"--brokers must be at least 1, got {brokers}")
        given = [Given("--broker-config", k, str(v)) for k, v in (settings or {}).items()]
        try:
            self.settings = resolve(CLUSTER, given)
        except SettingsError as e:
            raise ClusterError(str(e)) from None
        self.data_dir = data_dir
        self.broker_ids = list(range(1, brokers + 1))
        self.zookeeper_connect = zookeeper_connect
        self.offsets_partitions = int(self.settings["offsets.topic.num.partitions"])
        self.broker_args = broker_args
        self.start_timeout_s = start_timeout_s
        self.peers: dict[int, tuple[str, int]] = {}
        # With security_config, each broker's secured client listener, and the users whose
        # SCRAM credentials go to ZooKeeper before the brokers start.
        self.security_config = security_config.resolve() if security_config else None
        self.users = dict(users or {})
        self.client_listeners: dict[int, tuple[str, int]] = {}
        self.processes: dict[int, subprocess.Popen] = {}
        self.view: PublishedView | None = None
        self.trace_run, self.trace_epoch_ms = (
            "",
            0,
        )  # the cluster's trace run, kept in <data_dir>/traces.run
        self._stack = ExitStack()

    @property
    def bootstrap(self) -> str:
        """The clients' listeners: the secured ones when there are."""
        listeners = self.client_listeners or self.peers
        return ",".join(f"{host}:{port}" for host, port in listeners.values())

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._trace_run()
        if self.zookeeper_connect is None:
            try:
                self.zookeeper_connect = self._stack.enter_context(zookeeper(1)).connect_string
            except ZooKeeperUnavailable as e:
                raise ClusterError(str(e)) from None
        else:
            _check_zookeeper(self.zookeeper_connect)
        _ensure_chroot(self.zookeeper_connect)
        try:
            self.view = PublishedView.open(self.zookeeper_connect, timeout_s=5.0)
        except Exception as e:  # noqa: BLE001 - kazoo's timeouts
            raise ClusterError(
                f"cannot reach ZooKeeper at {self.zookeeper_connect}: {e or type(e).__name__}"
            ) from None
        ports = free_ports(2 * len(self.broker_ids))
        self.peers = {b: (HOST, ports.pop()) for b in self.broker_ids}
        if self.security_config is not None:
            self.client_listeners = {b: (HOST, ports.pop()) for b in self.broker_ids}
            store(self.view.client, self.users)
        for broker_id in self.broker_ids:
            self.start_broker(broker_id)
        self.wait(
            lambda view: (
                view.live_brokers == set(self.broker_ids)
                and view.controller in self.broker_ids
                and all(
                    self.coordinator_of(p) in self.broker_ids
                    for p in range(self.offsets_partitions)
                )
            ),
            "registration of every broker and a leader for every offsets partition",
            self.start_timeout_s,
        )

    def _trace_run(self) -> None:
        """One run for the brokers' traces across restarts of the cluster over the same data,
        as the single broker keeps its run (the groups reload from their logs)."""
        path = self.data_dir / "traces.run"
        try:
            run = TraceRun.model_validate_json(path.read_bytes()) if path.exists() else None
        except ValidationError:
            raise ClusterError(f"{path}: cannot read the traces' run") from None
        if run is None:
            now = int(time.time() * 1000)
            run = TraceRun(run=f"cluster-{self.data_dir.name}-{now}", start_ms=now)
            path.write_text(run.model_dump_json())
        self.trace_run, self.trace_epoch_ms = run.run, run.start_ms

    def start_broker(self, broker_id: int) -> None:
        peers = ",".join(f"{b}={h}:{p}" for b, (h, p) in self.peers.items())
        # Like ZooKeeper's JVM, a broker dies with the thread that started it: a launcher killed
        # from outside (a test's timeout, kill -9) leaves no broker behind in its own session.
        command = [
            *die_with_parent(),
            sys.executable,
            "-m",
            "coordspec.broker.cluster.server",
            "--id",
            str(broker_id),
            "--peers",
            peers,
            "--zookeeper",
            self.zookeeper_connect,
            "--data",
            str(self.data_dir / f"broker-{broker_id}"),
            *as_arguments(self.settings),
            "--trace-run",
            self.trace_run,
            "--trace-epoch-ms",
            str(self.trace_epoch_ms),
            *self.broker_args,
        ]
        if self.security_config is not None:
            listeners = ",".join(f"{b}={h}:{p}" for b, (h, p) in self.client_listeners.items())
            command += [
                "--security-config",
                str(self.security_config),
                "--client-listeners",
                listeners,
            ]
        with open(self.data_dir / f"broker-{broker_id}.stderr", "ab") as stderr:
            self.processes[broker_id] = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=_REPO,
                start_new_session=True,
                # kio loads Hypothesis where it is installed, whose tables would land in cwd.
                env={
                    **os.environ,
                    "HYPOTHESIS_STORAGE_DIRECTORY": str(self.data_dir / ".hypothesis"),
                },
            )

    def trace_files(self) -> list[Path]:
        """Every broker's trace file that exists: together, the cluster's trace of the group protocol."""
        return [
            path
            for b in self.broker_ids
            if (path := self.data_dir / f"broker-{b}" / "trace.jsonl").exists()
        ]

    def running(self) -> set[int]:
        return {b for b, p in self.processes.items() if p.poll() is None}

    def stderr(self, broker_id: int) -> str:
        path = self.data_dir / f"broker-{broker_id}.stderr"
        return path.read_text() if path.exists() else ""

    # -- what ZooKeeper publishes -----------------------------------------------------------

    def coordinator_of(self, partition: int) -> int:
        assert self.view is not None
        return self.view.leader(TopicPartition(OFFSETS_TOPIC, partition))

    def coordinator(self, group_id: str) -> int:
        return self.coordinator_of(partition_for(group_id, self.offsets_partitions))

    def controller(self) -> int:
        assert self.view is not None
        return self.view.controller

    def wait(
        self, condition: Callable[[PublishedView], bool], what: str, timeout_s: float = 30.0
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition(self.view):
            for broker_id, process in self.processes.items():
                if process.poll() is not None and process.returncode not in (-signal.SIGKILL, 0):
                    raise ClusterError(
                        f"broker {broker_id} exited with {process.returncode}: {self.stderr(broker_id).strip()[-500:]}"
                    )
            if time.monotonic() > deadline:
                raise ClusterError(f"no {what} within {timeout_s} s")
            time.sleep(0.05)

    # -- faults and stopping ------------------------------------------------------------------

    def kill(self, broker_id: int) -> None:
        """SIGKILL: the broker's ZooKeeper session expires after its timeout."""
        process = self.processes[broker_id]
        process.kill()
        process.wait()

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: a broker that does nothing (a long GC pause); its session may expire meanwhile."""
        self.processes[broker_id].send_signal(signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self.processes[broker_id].send_signal(signal.SIGCONT)

    def stop_broker(self, broker_id: int, timeout_s: float = 10.0) -> None:
        process = self.processes[broker_id]
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a paused broker cannot stop
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop(self) -> None:
        for broker_id in self.processes:
            with contextlib.suppress(ProcessLookupError):
                if self.processes[broker_id].poll() is None:
                    self.processes[broker_id].send_signal(signal.SIGTERM)
        for broker_id in self.processes:
            self.stop_broker(broker_id)
        if self.view is not None:
            self.view.close()
            self.view = None
        self._stack.close()

    def describe(self) -> list[str]:
        """One line per broker: its address, whether it runs, is controller, leads which offsets partitions."""
        lines = []
        for broker_id, (host, port) in self.peers.items():
            if broker_id not in self.running():
                lines.append(f"  broker {broker_id}  {host}:{port}  stopped")
                continue
            led = [p for p in range(self.offsets_partitions) if self.coordinator_of(p) == broker_id]
            role = "controller, " if self.controller() == broker_id else ""
            clients = ""
            if broker_id in self.client_listeners:
                clients = "clients {}:{}  ".format(*self.client_listeners[broker_id])
            lines.append(
                f"  broker {broker_id}  {host}:{port}  {clients}pid {self.processes[broker_id].pid}  {role}leads {OFFSETS_TOPIC} partitions {led}"
            )
        return lines


def _check_zookeeper(connect: str, timeout_s: float = 2.0) -> None:
    """A given ZooKeeper answers a ZooKeeper handshake (a session it closes at once), so that
    a wrong port is one line at once rather than kazoo's time-out after seconds."""
    hosts = connect.partition("/")[0]
    why = []
    for host, _, port in (h.strip().rpartition(":") for h in hosts.split(",")):
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
                sock.settimeout(timeout_s)
                # ConnectRequest: protocol version, last zxid, timeout ms, session id, password
                body = struct.pack(">iqiqi16s?", 0, 0, 4000, 0, 16, bytes(16), False)
                sock.sendall(struct.pack(">i", len(body)) + body)
                answer = _read(sock, 4 + 36)  # length, version, timeout, session, password
                if struct.unpack_from(">i", answer, 20)[0] == 16:  # a 16-byte password
                    sock.sendall(struct.pack(">iii", 8, 1, -11))  # closeSession
                    return
                why.append(f"{host}:{port} does not answer as ZooKeeper")
        except (OSError, ValueError) as e:
            if isinstance(e, ConnectionRefusedError | socket.gaierror):
                why.append(f"cannot reach ZooKeeper at {host}:{port}: {e.strerror}")
            else:
                why.append(f"{host}:{port} does not answer as ZooKeeper")
    raise ClusterError("; ".join(why))


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ValueError("closed")
        data += chunk
    return data


def _ensure_chroot(connect: str) -> None:
    """Create the chroot of ``HOST:PORT[,...]/chroot`` (ZooKeeper does not), so clusters can share one ensemble."""
    hosts, slash, chroot = connect.partition("/")
    if not slash or not chroot:
        return
    client = KazooClient(hosts)
    try:
        client.start(timeout=5)
        client.ensure_path("/" + chroot)
    except Exception as e:  # noqa: BLE001 - kazoo's timeouts
        raise ClusterError(f"cannot reach ZooKeeper at {hosts}: {e or type(e).__name__}") from None
    finally:
        client.stop()
        client.close()


def up(
    brokers: int = 3,
    zookeeper_connect: str | None = None,
    data_dir: Path | None = None,
    broker_config: Sequence[str] = (),
    broker_config_file: Path | None = None,
    poll_s: float = 1.0,
    say=print,
    security_config: Path | None = None,
    users_file: Path | None = None,
) -> int:
    """``coordspec cluster up``: serve until Ctrl-C or SIGTERM, printing the bootstrap
    address, the settings that are not Kafka's defaults, and each broker's state (with its
    pid: ``kill -9`` one to see a failover), and the state again whenever it changes; a
    broker that exits is reported once and the rest keep serving. Every broker gets the
    settings of ``broker_config_file`` with each ``broker_config`` KEY=VALUE over them.
    ``security_config`` secures the clients' listeners, ``users_file`` (NAME=PASSWORD lines)
    names the users whose SCRAM credentials are stored in ZooKeeper.
    Exit status: 0 when stopped by the user, 2 when it did not start."""
    try:
        given = read_file(broker_config_file) if broker_config_file else []
        settings = resolve(CLUSTER, [*given, *pairs(broker_config)])
        users = read_users(users_file) if users_file else None
        # Checked here, to fail before anything starts.
        security = load_security(security_config, users, offered=SCRAM)
    except (SettingsError, BrokerError) as e:
        print(f"cluster up: {e}", file=sys.stderr)
        return 2
    chosen, data_dir = data_dir, data_dir or Path(f"coordspec-cluster-{os.getpid()}")
    logging.getLogger("kazoo").setLevel(
        logging.CRITICAL
    )  # its reconnection attempts; failures are reported here, once
    try:
        with (
            stopped_by_signals(),
            Cluster(
                data_dir.resolve(),
                brokers,
                zookeeper_connect=zookeeper_connect,
                settings=settings,
                security_config=security_config,
                users=users,
            ) as cluster,
        ):
            say(
                f"cluster: {brokers} broker{'s' if brokers > 1 else ''} on ZooKeeper {cluster.zookeeper_connect}, data in {cluster.data_dir}"
            )
            say(f"bootstrap: {cluster.bootstrap}")
            if cluster.client_listeners:
                say(
                    f"clients' listeners: {security.protocol} with SCRAM users {', '.join(sorted(cluster.users)) or 'none'}; the brokers'"
                    " own ports below stay plaintext, on loopback"
                )
            changed = differences(cluster.settings)
            say(f"settings other than Kafka's defaults: {', '.join(changed) or 'none'}")
            traces = cluster.data_dir / "broker-*" / "trace.jsonl"
            say(
                f"traces of the group protocol: {traces} (one run); to check them against the reference: "
                f"coordspec trace check {traces}"
            )
            shown = cluster.describe()
            for line in shown:
                say(line)
            say(
                "Ctrl-C stops every broker"
                + (" and ZooKeeper." if zookeeper_connect is None else ".")
            )
            exited: set[int] = set()
            while True:
                time.sleep(poll_s)
                for broker_id, process in cluster.processes.items():
                    if process.poll() is not None and broker_id not in exited:
                        exited.add(broker_id)
                        say(
                            f"cluster: broker {broker_id} exited with {process.returncode}; its stderr: {cluster.data_dir / f'broker-{broker_id}.stderr'}"
                        )
                if (now := cluster.describe()) != shown:
                    say("state:")
                    for line in now:
                        say(line)
                    shown = now
    except ClusterError as e:
        print(f"cluster up: {e}", file=sys.stderr)
        # A directory of our naming goes if no broker wrote to it (ZooKeeper was not there).
        if (
            chosen is None
            and data_dir.is_dir()
            and {p.name for p in data_dir.iterdir()} <= {"traces.run"}
        ):
            shutil.rmtree(data_dir, ignore_errors=True)
        return 2
    except (KeyboardInterrupt, SystemExit):
        say("cluster: stopped every broker")
        return 0
