"""``coordspec cluster up`` (:func:`coordspec.broker.cluster.launcher.up`): it starts ZooKeeper and
three brokers, prints the bootstrap address and each broker's state, reports a broker
killed with kill -9 and keeps serving, and stops everything on Ctrl-C; a user's mistake is
one line, no traceback."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coordspec.broker.zookeeper.process import free_ports

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

REPO = Path(__file__).resolve().parents[2]


def up(*args: str) -> subprocess.Popen:
    code = f"import sys; from pathlib import Path; from coordspec.broker.cluster.launcher import up; sys.exit(up({', '.join(args)}))"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(process: subprocess.Popen, marker: str, timeout_s: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while marker not in seen and time.monotonic() < deadline and process.poll() is None:
            if selector.select(0.1):
                seen += os.read(process.stdout.fileno(), 65536).decode()
    return seen


def test_cluster_up_serves_until_interrupted(tmp_path: Path) -> None:
    process = up("3", f"data_dir=Path({str(tmp_path / 'cluster')!r})")
    try:
        shown = read_until(process, "Ctrl-C stops", 60)
        assert "bootstrap: 127.0.0.1:" in shown, (
            shown + process.stderr.read() if process.poll() is not None else shown
        )
        brokers = [line for line in shown.splitlines() if line.strip().startswith("broker ")]
        assert len(brokers) == 3 and sum("controller" in line for line in brokers) == 1, shown
        led = [
            int(p)
            for line in brokers
            for p in re.findall(r"\d+", line.partition("partitions [")[2])
        ]
        assert sorted(led) == [0, 1, 2], shown  # every offsets partition has one leader
        # kill -9 of a broker is reported, and the others keep serving.
        victim = next(line for line in brokers if "controller" not in line)
        victim_id, victim_pid = int(victim.split()[1]), int(victim.split("pid ")[1].split()[0])
        os.kill(victim_pid, signal.SIGKILL)
        reported = read_until(process, f"broker {victim_id} exited with -9", 10)
        assert f"broker {victim_id} exited with -9" in reported and process.poll() is None, reported
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(
            timeout=60
        )  # every broker, then ZooKeeper: 10 s each at most
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "stopped every broker" in out
    assert "Traceback" not in err
    assert all((tmp_path / "cluster" / f"broker-{b}").is_dir() for b in (1, 2, 3))


def test_cluster_up_mistakes_are_one_line() -> None:
    process = up("0")
    _, err = process.communicate(timeout=30)
    assert (
        process.returncode == 2 and err.strip() == "cluster up: --brokers must be at least 1, got 0"
    ), err
    process = up("3", "offsets_partitions=0")
    _, err = process.communicate(timeout=30)
    assert (
        process.returncode == 2
        and err.strip() == "cluster up: --offsets-partitions must be at least 1, got 0"
    ), err
    closed = free_ports(1)[0]
    process = up("3", f"zookeeper_connect='127.0.0.1:{closed}'")
    _, err = process.communicate(timeout=30)
    assert (
        process.returncode == 2
        and len(err.strip().splitlines()) == 1
        and "cannot reach ZooKeeper" in err
    ), err
    assert not (
        REPO / f"coordspec-cluster-{process.pid}"
    ).exists()  # its default data directory, unused, is gone
