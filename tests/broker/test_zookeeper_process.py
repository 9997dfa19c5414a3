"""Real ZooKeeper from Debian's package, started and stopped by broker/zookeeper/process.py:
a standalone server, a 3-node ensemble that survives losing its leader, and one-line
errors when something is missing. Every server here listens on 127.0.0.1 only."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from coordspec.broker.zookeeper import process
from coordspec.broker.zookeeper.process import ZooKeeperUnavailable, serving_mode, zookeeper

pytestmark = pytest.mark.zookeeper

REPO = Path(__file__).resolve().parents[2]


def started(nodes: int, **kwargs):
    try:
        return zookeeper(nodes, **kwargs)
    except ZooKeeperUnavailable as e:  # pragma: no cover - the machine lacks Java or ZooKeeper
        pytest.fail(str(e), pytrace=False)


def client(connect_string: str) -> KazooClient:
    zk = KazooClient(
        connect_string,
        timeout=10,
        connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5),
    )
    zk.start(timeout=10)
    return zk


def assert_gone(ensemble) -> None:
    for node in ensemble.nodes.values():
        assert node.process is not None and node.process.poll() is not None, (
            f"node {node.node_id} still running"
        )
    assert not ensemble.directory.exists()


def test_standalone_serves_and_stops():
    with started(1) as zk:
        node = zk.node(1)
        assert zk.connect_string == f"127.0.0.1:{node.client_port}"
        assert serving_mode(node.client_port) == "standalone"
        c = client(zk.connect_string)
        try:
            c.create("/x", b"hello")
            assert c.get("/x")[0] == b"hello"
        finally:
            c.stop()
            c.close()
        cfg = node.cfg_path.read_text()
        assert "clientPortAddress=127.0.0.1" in cfg and "admin.enableServer=false" in cfg
    assert_gone(zk)


def write_until_ok(c: KazooClient, path: str, timeout_s: float = 30.0) -> None:
    """A write that may meet a leader election: retried until it lands, within a bound."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            c.retry(c.ensure_path, path)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wait_for(condition, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.05)
    return value


def test_ensemble_of_three_survives_losing_its_leader():
    with started(3) as zk:
        modes = zk.modes()
        assert sorted(modes.values()) == ["follower", "follower", "leader"]
        c = client(zk.connect_string)
        try:
            c.create("/before", b"1")
            leader = next(i for i, mode in modes.items() if mode == "leader")
            zk.kill(leader)
            assert zk.node(leader).process.poll() is not None
            survivors = [i for i in zk.nodes if i != leader]
            wait_for(
                lambda: sorted(zk.modes()[i] or "" for i in survivors) == ["follower", "leader"],
                what="new leader",
            )
            write_until_ok(c, "/after")
            assert c.get("/before")[0] == b"1"
            assert c.exists("/after") is not None
            assert zk.start(leader) == "follower"  # it rejoins under the new leader
            write_until_ok(c, "/rejoined")
        finally:
            c.stop()
            c.close()
    assert_gone(zk)


def test_a_node_that_dies_on_its_own_is_reported_and_its_log_kept():
    with started(1) as zk:
        node = zk.node(1)
        os.kill(node.process.pid, signal.SIGKILL)  # behind the ensemble's back
        node.process.wait(timeout=10)
        (crash,) = zk.crashes()
        assert (
            crash
            == f"ZooKeeper node 1 (pid {node.process.pid}) exited with code -9 without being stopped; see its log {node.log_path}"
        )
    assert node.log_path.is_file()
    shutil.rmtree(zk.directory)


def test_stopping_and_killing_through_the_ensemble_are_not_crashes():
    with started(1) as zk:
        zk.kill(1)
        assert zk.crashes() == []
        assert zk.start(1) == "standalone"
        zk.stop(1)
        assert zk.crashes() == []
    assert_gone(zk)


def test_missing_java_is_one_line(monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(process.shutil, "which", lambda name: None)
    with pytest.raises(ZooKeeperUnavailable) as e, zookeeper(1):
        pass
    assert str(e.value) == "ZooKeeper needs Java: no java on PATH (install default-jdk-headless)"


def test_missing_zookeeper_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(process, "ZOOKEEPER_JAR", tmp_path / "zookeeper.jar")
    with (
        pytest.raises(
            ZooKeeperUnavailable,
            match=r"^ZooKeeper is not installed: no .*zookeeper.jar \(install Debian's zookeeper package\)$",
        ),
        zookeeper(1),
    ):
        pass


def test_a_server_that_does_not_come_up_names_its_log(monkeypatch):
    monkeypatch.setattr(process, "JVM_OPTIONS", ("-Xmx1k",))  # the JVM refuses to start
    with pytest.raises(ZooKeeperUnavailable) as e, zookeeper(1, timeout_s=30):
        pass
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("ZooKeeper node 1 exited with code")
    log = Path(message.rsplit(" ", 1)[1])
    try:
        assert log.is_file() and log.read_text().strip()  # the JVM said why
    finally:
        shutil.rmtree(log.parent.parent)  # kept for the reader; not needed here


def coordspec_zookeeper_up(*args: str, env=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "coordspec.conformance.cli", "zookeeper", "up", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def read_until_ready(up: subprocess.Popen, timeout_s: float = 60.0) -> list[str]:
    """The lines ``coordspec zookeeper up`` prints until it says how to stop it."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = up.stdout.readline()
        if not line:
            pytest.fail(
                f"coordspec zookeeper up ended early: {''.join(lines)}{up.stderr.read()}",
                pytrace=False,
            )
        lines.append(line.rstrip("\n"))
        if line.startswith("Ctrl-C"):
            return lines
    pytest.fail(f"coordspec zookeeper up not ready within {timeout_s} s: {lines}", pytrace=False)


def test_command_line_serves_an_ensemble_until_interrupted():
    up = coordspec_zookeeper_up("--nodes", "3")
    try:
        lines = read_until_ready(up)
        directory = Path(lines[0].split(" data in ")[1].split(" ")[0])
        assert lines[0].startswith("zookeeper: 3 nodes on 127.0.0.1") and directory.is_dir()
        modes = [line.split()[-1] for line in lines[1:4]]
        assert sorted(modes) == ["follower", "follower", "leader"]
        connect_string = lines[4].removeprefix("connect string: ")
        assert connect_string.count("127.0.0.1:") == 3
        zk = client(connect_string)
        try:
            zk.create("/served", b"yes")
            assert zk.get("/served")[0] == b"yes"
        finally:
            zk.stop()
            zk.close()
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0
        assert up.stdout.read().strip() == "zookeeper: stopped every node"
        assert not directory.exists()
        ports = [int(address.rsplit(":", 1)[1]) for address in connect_string.split(",")]
        assert [serving_mode(port) for port in ports] == [None, None, None]
    finally:
        up.kill()
        up.wait(timeout=60)


def test_command_line_reports_a_node_killed_from_outside():
    up = coordspec_zookeeper_up()
    try:
        lines = read_until_ready(up)
        directory = lines[0].split(" data in ")[1].split(" ")[0]
        pids = subprocess.run(
            ["pgrep", "-f", directory], check=False, capture_output=True, text=True
        ).stdout.split()
        assert len(pids) == 1, pids
        os.kill(int(pids[0]), signal.SIGKILL)
        assert up.wait(timeout=60) == 1
        error = up.stderr.read()
        assert (
            error.count("\n") == 1
            and "exited with code -9 without being stopped; see its log" in error
        )
        shutil.rmtree(directory)  # kept for the reader; not needed here
    finally:
        up.kill()
        up.wait(timeout=60)


def test_command_line_reports_missing_java_in_one_line():
    env = {"PATH": "/nonexistent", "PYTHONPATH": str(REPO), "HOME": os.environ.get("HOME", "/tmp")}
    run = subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.cli", "zookeeper", "up"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert (
        run.stderr
        == "zookeeper: ZooKeeper needs Java: no java on PATH (install default-jdk-headless)\n"
    )


def test_command_line_refuses_an_empty_ensemble():
    run = subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.cli", "zookeeper", "up", "--nodes", "0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 2
    assert run.stderr == "zookeeper up: --nodes must be at least 1, got 0\n"
