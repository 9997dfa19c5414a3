"""Start and stop real ZooKeeper (Debian's ``zookeeper`` package) on 127.0.0.1.

    with zookeeper(nodes=3) as zk:
        KazooClient(zk.connect_string) ...
        zk.kill(2)          # SIGKILL node 2; zk.stop(2) sends SIGTERM first; zk.start(2) restarts it

Every node is one JVM (``QuorumPeerMain``) with its own zoo.cfg, data dir and log file in a
temporary directory. All ports (client, quorum, election) are chosen before any cfg is
written and bound to 127.0.0.1 only. Each JVM runs in its own session and is stopped by
pid; every wait is bounded. The kernel kills a JVM when the thread that started it exits
(``setpriv --pdeathsig``): start nodes from a thread that lives as long as they should.
When a node does not come up, or exits without being stopped, :class:`ZooKeeperUnavailable`
or :meth:`ZooKeeperEnsemble.crashes` says so in one line naming the log file, and the
directory is kept so the log can be read.

``coordspec zookeeper up [--nodes N]`` serves an ensemble until interrupted (:func:`serve`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Fast JVM start (measured: serving in ~0.3-0.4 s); slf4j-simple at warn so a failure is readable.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-Dzookeeper.jmx.log4j.disable=true",
)
# For measurements: the JVM's full JIT (C2), as a production server runs.
FAST_START_ONLY = ("-XX:TieredStopAtLevel=1",)
_SERVING = re.compile(rb"^Mode: (standalone|leader|follower)\s*$", re.MULTILINE)
_PROBE_INTERVAL_S = 0.02
_KILL_WAIT_S = 10.0
_LIVE: set[ZooKeeperNode] = set()  # nodes to kill if the interpreter exits with them running


class ZooKeeperUnavailable(RuntimeError):
    """Java or the zookeeper package is missing, or a server did not come up. One line."""


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home, "bin", "java"), os.X_OK):
        return str(Path(java_home, "bin", "java"))
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperUnavailable(
            "ZooKeeper needs Java: no java on PATH (install default-jdk-headless)"
        )
    return java


def _classpath() -> str:
    if not ZOOKEEPER_JAR.is_file():
        raise ZooKeeperUnavailable(
            f"ZooKeeper is not installed: no {ZOOKEEPER_JAR} (install Debian's zookeeper package)"
        )
    jars = [ZOOKEEPER_JAR]
    if SLF4J_SIMPLE_JAR.is_file():  # without a binding ZooKeeper logs nothing at all
        jars.append(SLF4J_SIMPLE_JAR)
    return ":".join(str(j) for j in jars)


def die_with_parent() -> list[str]:
    """A prefix that has the kernel SIGKILL the JVM when the thread that started it dies,
    so a test run killed from outside (a CI timeout) leaves no server behind: the JVM's
    own session keeps it out of the process-group kill. ``setpriv`` (util-linux) execs
    java, so the pid stays java's."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """For a command that runs until stopped: SIGTERM exits (SystemExit) and Ctrl-C interrupts
    (KeyboardInterrupt), even when whoever started it ignored SIGINT (a background job of a
    shell without job control passes that on, and Python then keeps it ignored)."""
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    previous_interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_interrupt)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (all held open until all are chosen)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def four_letter_word(
    port: int, word: str = "srvr", timeout_s: float = 1.0, host: str = HOST
) -> bytes:
    """Send a four-letter command to a server's client port; its answer (b"" if none)."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall(word.encode())
        chunks = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            chunk = s.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def serving_mode(port: int) -> str | None:
    """``standalone``, ``leader`` or ``follower`` if the node serves clients, else None."""
    try:
        match = _SERVING.search(four_letter_word(port, "srvr", timeout_s=0.5))
    except OSError:
        return None
    return match.group(1).decode() if match else None


@dataclass(eq=False)
class ZooKeeperNode:
    """One server of an ensemble (or the standalone server): its cfg, data, log and JVM."""

    node_id: int
    client_port: int
    directory: Path
    process: subprocess.Popen | None = field(default=None, repr=False)
    full_jit: bool = False
    _stopping: bool = field(default=False, repr=False)  # we signalled it: its exit is ours

    @property
    def cfg_path(self) -> Path:
        return self.directory / "zoo.cfg"

    @property
    def log_path(self) -> Path:
        return self.directory / "zookeeper.log"

    @property
    def connect_string(self) -> str:
        return f"{HOST}:{self.client_port}"

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def crash(self) -> str | None:
        """If the JVM exited without being stopped by us (a crash, or a kill from
        outside), one line saying so; else None."""
        if self.process is None or self._stopping or self.process.poll() is None:
            return None
        return f"ZooKeeper node {self.node_id} (pid {self.process.pid}) exited with code {self.process.returncode} without being stopped; see its log {self.log_path}"

    def write_cfg(self, tick_time_ms: int, peers: dict[int, tuple[int, int]]) -> None:
        data_dir = self.directory / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={tick_time_ms}",
            "initLimit=10",
            "syncLimit=5",
            f"dataDir={data_dir}",
            f"clientPort={self.client_port}",
            f"clientPortAddress={HOST}",
            "admin.enableServer=false",  # otherwise Jetty's AdminServer binds :8080
            "4lw.commands.whitelist=srvr,stat,ruok,mntr,dump,cons,conf",
            "maxClientCnxns=0",
            "preAllocSize=4096",
            "snapCount=100000",
            "forceSync=no",  # throwaway data: no fsync
            "electionPortBindRetry=3",
        ]
        if len(peers) > 1:
            lines += [
                f"server.{i}={HOST}:{quorum}:{election}"
                for i, (quorum, election) in sorted(peers.items())
            ]
            (data_dir / "myid").write_text(f"{self.node_id}\n")
        self.cfg_path.write_text("\n".join(lines) + "\n")

    def launch(self) -> None:
        """Start the JVM (not waiting for it to serve). The log is appended to across restarts."""
        if self.is_running():
            return
        options = [o for o in JVM_OPTIONS if not (self.full_jit and o in FAST_START_ONLY)]
        command = [
            *die_with_parent(),
            _java(),
            *options,
            "-cp",
            _classpath(),
            MAIN_CLASS,
            str(self.cfg_path),
        ]
        self._stopping = False
        with open(self.log_path, "ab") as log:
            try:
                self.process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.directory,
                    start_new_session=True,  # a ^C to the test run does not reach it; we stop it by pid
                )
            except OSError as e:
                raise ZooKeeperUnavailable(f"could not run {command[0]}: {e.strerror}") from None
        _LIVE.add(self)

    def wait_serving(self, deadline: float) -> str:
        """Poll the ``srvr`` probe until the node serves or ``deadline`` (monotonic) passes."""
        while True:
            if not self.is_running():
                code = self.process.returncode if self.process is not None else None
                raise ZooKeeperUnavailable(
                    f"ZooKeeper node {self.node_id} exited with code {code} while starting; see its log {self.log_path}"
                )
            mode = serving_mode(self.client_port)
            if mode is not None:
                return mode
            if time.monotonic() >= deadline:
                raise ZooKeeperUnavailable(
                    f"ZooKeeper node {self.node_id} on {self.connect_string} did not serve in time; see its log {self.log_path}"
                )
            time.sleep(_PROBE_INTERVAL_S)

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout_s``."""
        self._signal(signal.SIGTERM, timeout_s)

    def kill(self) -> None:
        """SIGKILL: a crash, as far as the ensemble and the clients can tell."""
        self._signal(signal.SIGKILL, _KILL_WAIT_S)

    def _signal(self, sig: int, grace_s: float) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            self._stopping = True
            with suppress(ProcessLookupError):
                os.kill(process.pid, sig)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                try:
                    process.wait(timeout=_KILL_WAIT_S)
                except subprocess.TimeoutExpired:
                    raise ZooKeeperUnavailable(
                        f"ZooKeeper node {self.node_id} (pid {process.pid}) survived SIGKILL for {_KILL_WAIT_S} s"
                    ) from None
        _LIVE.discard(self)


@dataclass(eq=False)
class ZooKeeperEnsemble:
    """The nodes started by :func:`zookeeper`, by node id (1..N)."""

    nodes: dict[int, ZooKeeperNode]
    directory: Path
    tick_time_ms: int

    @property
    def connect_string(self) -> str:
        return ",".join(node.connect_string for node in self.nodes.values())

    def node(self, node_id: int) -> ZooKeeperNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise ValueError(f"no ZooKeeper node {node_id} (nodes: {sorted(self.nodes)})") from None

    def stop(self, node_id: int) -> None:
        self.node(node_id).stop()

    def kill(self, node_id: int) -> None:
        self.node(node_id).kill()

    def start(self, node_id: int, timeout_s: float = 30.0) -> str:
        """(Re)start a stopped node and wait until it serves; its mode."""
        node = self.node(node_id)
        node.launch()
        return node.wait_serving(time.monotonic() + timeout_s)

    def crashes(self) -> list[str]:
        """One line per node that exited without being stopped or killed through us."""
        return [crash for node in self.nodes.values() if (crash := node.crash()) is not None]

    def modes(self) -> dict[int, str | None]:
        """Each node's serving mode (None: not serving)."""
        return {i: serving_mode(node.client_port) for i, node in self.nodes.items()}

    def close(self) -> None:
        for node in self.nodes.values():
            node.stop()


@contextmanager
def zookeeper(
    nodes: int = 1,
    *,
    tick_time_ms: int = 500,
    timeout_s: float = 30.0,
    keep: bool = False,
    full_jit: bool = False,
) -> Iterator[ZooKeeperEnsemble]:
    """A standalone server (``nodes=1``) or an ensemble of ``nodes`` on 127.0.0.1;
    ``full_jit`` trades the fast start for the JVM's optimising compiler (benchmarks).

    Yields once every node serves (``srvr`` says standalone, leader or follower), within
    ``timeout_s``. Always stops every node on exit; removes the temporary directory unless
    a node failed to start or exited on its own (its log is there), or ``keep`` is set.
    """
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, got {nodes}")
    _java(), _classpath()  # fail in one line before creating anything
    directory = Path(tempfile.mkdtemp(prefix="coordspec-zk-"))
    failed = False
    ensemble: ZooKeeperEnsemble | None = None

    def remove_directory() -> None:
        if not (keep or failed or (ensemble is not None and ensemble.crashes())):
            shutil.rmtree(directory, ignore_errors=True)

    with ExitStack() as cleanup:
        cleanup.callback(remove_directory)
        ports = free_ports(3 * nodes)
        peers = {
            i: (ports[nodes + 2 * (i - 1)], ports[nodes + 2 * (i - 1) + 1])
            for i in range(1, nodes + 1)
        }
        ensemble = ZooKeeperEnsemble(
            {
                i: ZooKeeperNode(i, ports[i - 1], directory / f"n{i}", full_jit=full_jit)
                for i in range(1, nodes + 1)
            },
            directory,
            tick_time_ms,
        )
        cleanup.callback(ensemble.close)
        try:
            for node in ensemble.nodes.values():
                node.write_cfg(tick_time_ms, peers)
            for node in ensemble.nodes.values():
                node.launch()
            deadline = time.monotonic() + timeout_s
            for node in ensemble.nodes.values():
                node.wait_serving(deadline)
        except ZooKeeperUnavailable:
            failed = True
            raise
        yield ensemble


@atexit.register
def _kill_leftovers() -> None:
    for node in list(_LIVE):
        node.kill()


def serve(
    nodes: int, *, tick_time_ms: int = 500, keep: bool = False, poll_s: float = 0.5, say=print
) -> int:
    """``coordspec zookeeper up``: serve an ensemble of ``nodes`` until interrupted (Ctrl-C
    or SIGTERM), saying where it is and each node's mode, and reporting mode changes and
    exits as they happen. Returns the exit status: 0 when stopped by the user, 1 when a
    node exited on its own (its directory is kept for the logs), 2 when it did not start."""
    if nodes < 1:
        print(f"zookeeper up: --nodes must be at least 1, got {nodes}", file=sys.stderr)
        return 2
    try:
        with stopped_by_signals(), zookeeper(nodes, tick_time_ms=tick_time_ms, keep=keep) as zk:
            modes = zk.modes()
            say(
                f"zookeeper: {nodes} node{'s' if nodes > 1 else ''} on {HOST}, data in {zk.directory}"
                + (" (kept)" if keep else " (removed on exit)")
            )
            for node_id, node in zk.nodes.items():
                say(f"  node {node_id}  {node.connect_string}  {modes[node_id]}")
            say(f"connect string: {zk.connect_string}")
            say("Ctrl-C stops every node.")
            while True:
                time.sleep(poll_s)
                if crashes := zk.crashes():
                    for line in crashes:
                        print(f"zookeeper: {line}", file=sys.stderr)
                    return 1
                now = zk.modes()
                for node_id, mode in now.items():
                    if mode != modes[node_id]:
                        say(
                            f"  node {node_id}: {modes[node_id] or 'not serving'} -> {mode or 'not serving'}"
                        )
                modes = now
    except ZooKeeperUnavailable as e:
        print(f"zookeeper: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit):
        say("zookeeper: stopped every node")
        return 0
